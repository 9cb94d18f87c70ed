/* hpp_demo - baton/baton.hpp: one shared counter, guarded four ways, on
 * any kind named on the command line (default: mcs:spinpark qd rcl).
 *
 *   hpp_demo [spec]...
 *
 * Kinds without lock/unlock (rcl, ccsynch) take a future where the others
 * take the lock; the rest is the same code for every kind.  Exits 1 if a count is wrong.
 */
#include <baton/baton.hpp>

#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

int main(int argc, char **argv)
{
    std::vector<const char *> specs(argv + 1, argv + argc);
    if (specs.empty())
        specs = {"mcs:spinpark", "qd", "rcl"};
    const int threads = 4, ops = 10000;
    int status = 0;
    for (const char *spec : specs) {
        baton::mutex m{spec}; /* a bad spec throws std::invalid_argument */
        const bool lockable = m.caps() & BATON_CAP_LOCK;
        long counter = 0;
        std::vector<std::thread> pool;
        for (int t = 0; t < threads; t++)
            pool.emplace_back([&] {
                for (int i = 0; i < ops; i++) {
                    if (lockable && i % 4 == 0) {
                        std::lock_guard<baton::mutex> g(m); /* 1: lock/unlock */
                        counter++;
                    } else if (i % 4 == 1) {
                        m.execute([&] { counter++; }); /* 2: run under the lock */
                    } else if (i % 4 == 2) {
                        m.delegate([p = &counter] { ++*p; }); /* 3: copied, may run later */
                    } else {
                        auto f = m.delegate_future([p = &counter] { return ++*p; });
                        (void)f.get(); /* 4: the result, once it has run */
                    }
                }
            });
        for (auto &t : pool)
            t.join();
        const long expected = long(threads) * ops;
        /* An exception from the critical section reaches this thread, even
         * where the operation ran on a server. */
        long seen = 0;
        try {
            m.execute([&]() -> int {
                seen = counter;
                throw std::runtime_error("checked");
            });
        } catch (const std::runtime_error &) {
        }
        std::printf("%-14s %ld of %ld%s\n", m.spec(), seen, expected, seen == expected ? "" : "  WRONG");
        if (seen != expected)
            status = 1;
    }
    return status;
}
