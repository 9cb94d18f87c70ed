import java.util.concurrent.*;
import java.util.concurrent.atomic.*;
import java.util.concurrent.locks.*;
public class Sync {
    static long counter = 0;
    public static void main(String[] a) throws Exception {
        int T = 8, N = 200000;
        Thread[] ts = new Thread[T];
        Object mon = new Object();
        for (int i = 0; i < T; i++) { ts[i] = new Thread(() -> { for (int j = 0; j < N; j++) synchronized (mon) { counter++; } }); ts[i].start(); }
        for (Thread t : ts) t.join();
        if (counter != (long) T * N) throw new AssertionError("synchronized " + counter);
        ReentrantLock rl = new ReentrantLock(); Condition c = rl.newCondition(); int[] turn = {0};
        Thread[] pp = new Thread[2];
        for (int m = 0; m < 2; m++) { final int me = m; pp[m] = new Thread(() -> { for (int k = 0; k < 5000; k++) { rl.lock(); try { while (turn[0] % 2 != me) c.awaitUninterruptibly(); turn[0]++; c.signalAll(); } finally { rl.unlock(); } } }); pp[m].start(); }
        for (Thread t : pp) t.join();
        if (turn[0] != 10000) throw new AssertionError("condition " + turn[0]);
        ConcurrentHashMap<Integer, Integer> m = new ConcurrentHashMap<>();
        ExecutorService ex = Executors.newFixedThreadPool(4);
        java.util.List<Future<?>> fs = new java.util.ArrayList<>();
        for (int i = 0; i < 64; i++) { final int b = i; fs.add(ex.submit(() -> { for (int k = 0; k < 10000; k++) m.merge(k % 1000, 1, Integer::sum); })); }
        for (Future<?> f : fs) f.get();
        ex.shutdown(); ex.awaitTermination(60, TimeUnit.SECONDS);
        long s = 0; for (int v : m.values()) s += v;
        if (s != 640000) throw new AssertionError("chm " + s);
        // lots of garbage: GC threads and safepoints
        long h = 0; for (int i = 0; i < 3_000_000; i++) { h += new StringBuilder().append(i).toString().hashCode(); }
        long par = java.util.stream.LongStream.range(0, 20_000_000).parallel().map(x -> x * 3).sum();
        if (par != 3L * (20_000_000L * 19_999_999L / 2)) throw new AssertionError("parallel " + par);
        Thread.sleep(50);
        System.out.println("java ok " + (h != 0));
    }
}
