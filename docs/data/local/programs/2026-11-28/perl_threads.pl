use strict; use warnings; use threads; use threads::shared; use Thread::Queue;
my $c :shared = 0; my $q = Thread::Queue->new();
my @t = map { threads->create(sub { for (1..20000) { lock($c); $c++; } my $s = 0; while (defined(my $v = $q->dequeue())) { $s += $v; } return $s; }) } 1..4;
$q->enqueue($_) for 1..40000; $q->end();
my $s = 0; $s += $_->join() for @t;
die "count $c" unless $c == 80000; die "sum $s" unless $s == 40000 * 40001 / 2;
print "perl ok\n";
