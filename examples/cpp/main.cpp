// A C++17 program on baton's C API: threads add to one counter under a
// lock taken three ways (lock/unlock, a section run by baton_execute, an
// operation shipped by baton_delegate), on the kinds named on the command
// line (default: the default kind, mcs:spinpark and qd; a spinning FIFO
// kind such as plain mcs crawls when the threads outnumber the CPUs).
//
//   c++ -std=c++17 main.cpp $(pkg-config --cflags --libs baton) && ./a.out
//   or CMake: find_package(baton) and link baton::baton (CMakeLists.txt here)
//
// It prints "cpp example ok (baton <version>)" and exits 0 when every count
// is right and the library is the version of the headers.
#include <baton/baton.h>

#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

namespace
{

constexpr int kThreads = 4;
constexpr long kRounds = 20000; // per thread, of each of the three ways

long counter; // protected by the lock

struct add_args {
    long delta;
};

// Runs under the lock; a captureless lambda would do as well.
void add(void *ctx) { counter += static_cast<const add_args *>(ctx)->delta; }

void worker(baton_lock_t *l)
{
    for (long i = 0; i < kRounds; i++) {
        if (baton_lock(l) == 0) { // delegation kinds without lock/unlock answer ENOTSUP
            counter++;
            baton_unlock(l);
        } else {
            add_args one{1};
            baton_execute(l, add, &one);
        }
        add_args one{1};
        baton_execute(l, add, &one);
        baton_delegate(l, add, &one, sizeof one); // a copy of `one` is run, maybe later
    }
}

bool run(const char *spec)
{
    baton_lock_t *l = baton_lock_new(spec);
    if (l == nullptr) {
        std::fprintf(stderr, "cpp example: %s\n", baton_last_error());
        return false;
    }
    counter = 0;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; t++)
        threads.emplace_back(worker, l);
    for (auto &t : threads)
        t.join();
    add_args none{0};
    baton_execute(l, add, &none); // runs after every operation accepted before it
    long seen = counter;
    baton_lock_free(l);
    const long want = kThreads * kRounds * 3;
    std::printf("%-12s %ld of %ld\n", spec ? spec : "(default)", seen, want);
    return seen == want;
}

} // namespace

int main(int argc, char **argv)
{
    if (std::strcmp(baton_version(), BATON_VERSION_STRING) != 0) {
        std::fprintf(stderr, "cpp example: library %s, headers %s\n", baton_version(), BATON_VERSION_STRING);
        return 1;
    }
    std::vector<const char *> specs(argv + 1, argv + argc);
    if (specs.empty())
        specs = {nullptr, "mcs:spinpark", "qd"};
    bool ok = true;
    for (const char *spec : specs)
        ok = run(spec) && ok;
    if (!ok) {
        std::printf("cpp example FAILED\n");
        return 1;
    }
    std::printf("cpp example ok (baton %s)\n", baton_version());
    return 0;
}
