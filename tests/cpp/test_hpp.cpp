/* test_hpp - baton/baton.hpp: the C++ types over every kind.
 *
 * Each check can fail: counters must equal the number of operations,
 * exceptions must arrive (from the thread the operation ran on), time-outs
 * must take their time, and the standard helpers must see exclusion.
 *   test_hpp [ops-per-thread]      (default 2000)
 */
#include <baton/baton.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

static int failures;

#define CHECK(cond, ...)                                                                                     \
    do {                                                                                                     \
        if (!(cond)) {                                                                                       \
            std::fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                             \
            std::fprintf(stderr, __VA_ARGS__);                                                               \
            std::fputc('\n', stderr);                                                                        \
            ++failures;                                                                                      \
        }                                                                                                    \
    } while (0)

/* The types are what std::mutex is: neither copyable nor movable. */
static_assert(!std::is_copy_constructible_v<baton::mutex> && !std::is_move_constructible_v<baton::mutex>);
static_assert(!std::is_copy_assignable_v<baton::mutex> && !std::is_move_assignable_v<baton::mutex>);
static_assert(!std::is_move_constructible_v<baton::shared_mutex>);
static_assert(!std::is_move_constructible_v<baton::future<int>>);
static_assert(std::is_default_constructible_v<baton::mutex>);

using namespace std::chrono_literals;

static constexpr int kThreads = 4;
static int ops = 2000;
static int exceptions_elsewhere; /* thrown on a thread other than the caller's */

struct kind {
    std::string spec;
    unsigned caps;
};

static std::vector<kind> all_kinds()
{
    const baton_kind_info_t *list;
    size_t n = baton_kinds(&list);
    std::vector<kind> out;
    for (size_t i = 0; i < n; i++) {
        std::string spec = list[i].name;
        if (list[i].caps & BATON_CAP_WRAPPER)
            spec += "(default)";
        out.push_back({spec, list[i].caps});
    }
    return out;
}

template <class F> static void run_threads(int n, F f)
{
    std::vector<std::thread> t;
    for (int i = 0; i < n; i++)
        t.emplace_back(f, i);
    for (auto &x : t)
        x.join();
}

/* lock/unlock through lock_guard, unique_lock and try_lock: the plain
 * counter must hold every increment. */
static void stress_lock(const kind &k)
{
    baton::mutex m{k.spec};
    long counter = 0;
    run_threads(kThreads, [&](int id) {
        for (int i = 0; i < ops; i++) {
            if (i % 3 == 0) {
                std::lock_guard<baton::mutex> g(m);
                counter++;
            } else if (i % 3 == 1) {
                std::unique_lock<baton::mutex> u(m);
                counter++;
            } else {
                while (!m.try_lock())
                    std::this_thread::yield();
                counter++;
                m.unlock();
            }
        }
        (void)id;
    });
    CHECK(counter == long(kThreads) * ops, "%s: counter %ld, expected %ld", k.spec.c_str(), counter,
          long(kThreads) * ops);
}

/* execute (returns f's result), delegate and delegate_future on every kind. */
static void stress_execute(const kind &k)
{
    baton::mutex m{k.spec};
    long counter = 0;
    std::atomic<long> seen_sum{0};
    run_threads(kThreads, [&](int) {
        long sum = 0;
        for (int i = 0; i < ops; i++)
            sum += m.execute([&] { return ++counter; });
        seen_sum += sum;
    });
    long n = long(kThreads) * ops;
    CHECK(counter == n, "%s execute: counter %ld, expected %ld", k.spec.c_str(), counter, n);
    /* Every value 1..n handed out exactly once. */
    CHECK(seen_sum.load() == n * (n + 1) / 2, "%s execute: results sum to %ld", k.spec.c_str(),
          seen_sum.load());

    long *p = &counter;
    run_threads(kThreads, [&](int) {
        for (int i = 0; i < ops; i++)
            m.delegate([p] { ++*p; });
    });
    /* Accepted after every delegate: has run after them. */
    long after = m.execute([&] { return counter; });
    CHECK(after == 2 * n, "%s delegate: counter %ld, expected %ld", k.spec.c_str(), after, 2 * n);

    std::atomic<long> got{0};
    run_threads(kThreads, [&](int) {
        for (int i = 0; i < ops / 4; i++) {
            auto f = m.delegate_future([p] { return ++*p; });
            long v = f.get();
            CHECK(f.ready(), "%s: future not ready after get", k.spec.c_str());
            if (v > 2 * n)
                got++;
        }
    });
    long total = 2 * n + long(kThreads) * (ops / 4);
    after = m.execute([&] { return counter; });
    CHECK(after == total, "%s delegate_future: counter %ld, expected %ld", k.spec.c_str(), after, total);
    CHECK(got.load() == long(kThreads) * (ops / 4), "%s delegate_future: %ld results", k.spec.c_str(),
          got.load());
}

/* An exception thrown by an operation reaches the caller, also when the
 * operation ran on a combiner or a server thread. */
static void exceptions(const kind &k)
{
    baton::mutex m{k.spec};
    std::thread::id ran_on;
    bool caught = false;
    try {
        m.execute([&]() -> int {
            ran_on = std::this_thread::get_id();
            throw std::runtime_error("boom in " + k.spec);
        });
    } catch (const std::runtime_error &e) {
        caught = std::string(e.what()) == "boom in " + k.spec;
    }
    CHECK(caught, "%s: execute's exception did not arrive", k.spec.c_str());
    /* rcl's server thread runs every operation. */
    if ((k.caps & BATON_CAP_SERVER) && !(k.caps & BATON_CAP_LOCK))
        CHECK(ran_on != std::this_thread::get_id(), "%s: server kind ran the operation on the caller",
              k.spec.c_str());
    /* The lock is free again. */
    CHECK(m.execute([] { return 7; }) == 7, "%s: execute after an exception", k.spec.c_str());

    /* Contended: every thread's exception reaches that thread. */
    std::atomic<int> arrived{0}, elsewhere{0};
    run_threads(kThreads, [&](int id) {
        for (int i = 0; i < 50; i++) {
            std::thread::id me = std::this_thread::get_id();
            try {
                m.execute([id, me, &elsewhere]() {
                    if (std::this_thread::get_id() != me)
                        elsewhere.fetch_add(1, std::memory_order_relaxed);
                    throw id;
                });
            } catch (int v) {
                if (v == id)
                    arrived++;
            }
        }
    });
    exceptions_elsewhere += elsewhere.load();
    CHECK(arrived.load() == kThreads * 50, "%s: %d of %d exceptions arrived", k.spec.c_str(), arrived.load(),
          kThreads * 50);

    auto f = m.delegate_future([]() -> int { throw std::logic_error("future boom"); });
    caught = false;
    try {
        (void)f.get();
    } catch (const std::logic_error &) {
        caught = true;
    }
    CHECK(caught, "%s: delegate_future's exception did not arrive", k.spec.c_str());

    /* Results by reference, and void. */
    int x = 1;
    int &r = m.execute([&]() -> int & { return x; });
    CHECK(&r == &x, "%s: execute returning a reference", k.spec.c_str());
    m.execute([&] { x = 2; });
    CHECK(x == 2, "%s: void execute", k.spec.c_str());
}

/* A clock that is neither steady_clock nor system_clock. */
struct offset_clock {
    using duration = std::chrono::nanoseconds;
    using rep = duration::rep;
    using period = duration::period;
    using time_point = std::chrono::time_point<offset_clock>;
    static constexpr bool is_steady = true;
    static time_point now() { return time_point(std::chrono::steady_clock::now().time_since_epoch() + 1h); }
};

template <class F> static double elapsed_ms(F f)
{
    auto t0 = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

/* The standard helpers over baton types. */
static void helpers()
{
    baton::mutex a{"mcs:spinpark"}, b;
    { /* try_to_lock and defer_lock, with the lock held by another thread */
        std::unique_lock<baton::mutex> held(a);
        std::thread([&] {
            std::unique_lock<baton::mutex> u(a, std::try_to_lock);
            CHECK(!u.owns_lock(), "try_to_lock took a held lock");
            std::unique_lock<baton::mutex> d(b, std::defer_lock);
            CHECK(!d.owns_lock(), "defer_lock locked");
            d.lock();
            CHECK(d.owns_lock(), "unique_lock::lock");
        }).join();
        held.unlock();
        std::thread([&] {
            std::unique_lock<baton::mutex> u(a, std::try_to_lock);
            CHECK(u.owns_lock(), "try_to_lock on a free lock");
        }).join();
    }
    { /* scoped_lock over two baton mutexes, taken in opposite orders */
        long n = 0;
        run_threads(kThreads, [&](int id) {
            for (int i = 0; i < ops / 4; i++) {
                if (id & 1) {
                    std::scoped_lock g(a, b);
                    n++;
                } else {
                    std::scoped_lock g(b, a);
                    n++;
                }
            }
        });
        CHECK(n == long(kThreads) * (ops / 4), "scoped_lock: %ld", n);
    }
    { /* try_lock_for / try_lock_until time out on a held lock, on each clock */
        baton::mutex t{"mcs:spinpark"};
        std::lock_guard<baton::mutex> g(t);
        std::thread([&] {
            bool got = true;
            double ms = elapsed_ms([&] { got = t.try_lock_for(30ms); });
            CHECK(!got && ms >= 29.0, "try_lock_for: got %d after %.1f ms", got, ms);
            ms = elapsed_ms([&] { got = t.try_lock_until(std::chrono::system_clock::now() + 20ms); });
            CHECK(!got && ms >= 19.0, "try_lock_until(system_clock): got %d after %.1f ms", got, ms);
            ms = elapsed_ms([&] { got = t.try_lock_until(offset_clock::now() + 20ms); });
            CHECK(!got && ms >= 19.0, "try_lock_until(other clock): got %d after %.1f ms", got, ms);
            CHECK(!t.try_lock_for(-1s), "negative duration took a held lock");
            CHECK(!t.try_lock_until(std::chrono::steady_clock::time_point::min()), "time_point::min");
        }).join();
    }
    { /* a timed wait the holder ends */
        baton::mutex t;
        std::unique_lock<baton::mutex> g(t);
        std::thread w([&] {
            CHECK(t.try_lock_for(std::chrono::hours::max()), "try_lock_for(max) did not get the lock");
            t.unlock();
        });
        std::this_thread::sleep_for(10ms);
        g.unlock();
        w.join();
    }
    { /* std::condition_variable_any over baton::mutex */
        baton::mutex m;
        std::condition_variable_any cv;
        int stage = 0;
        std::thread t([&] {
            std::unique_lock<baton::mutex> u(m);
            cv.wait(u, [&] { return stage == 1; });
            stage = 2;
            cv.notify_all();
        });
        {
            std::lock_guard<baton::mutex> g(m);
            stage = 1;
        }
        cv.notify_all();
        std::unique_lock<baton::mutex> u(m);
        bool ok = cv.wait_for(u, 10s, [&] { return stage == 2; });
        CHECK(ok && stage == 2, "condition_variable_any: stage %d", stage);
        u.unlock();
        t.join();
    }
    { /* shared_lock: readers share, a writer is excluded */
        baton::shared_mutex s;
        CHECK(std::string(s.spec()).find("prefer_readers") != std::string::npos, "default rw spec %s",
              s.spec());
        std::shared_lock<baton::shared_mutex> r1(s);
        std::thread([&] {
            std::shared_lock<baton::shared_mutex> r2(s, std::try_to_lock);
            CHECK(r2.owns_lock(), "a second reader was refused");
            CHECK(!s.try_lock(), "a writer got in beside readers");
            CHECK(!s.try_lock_for(10ms), "a timed writer got in beside readers");
        }).join();
        r1.unlock();
        std::unique_lock<baton::shared_mutex> w(s);
        std::thread([&] {
            CHECK(!s.try_lock_shared(), "a reader got in beside a writer");
            CHECK(!s.try_lock_shared_for(10ms), "a timed reader got in beside a writer");
            CHECK(!s.try_lock_shared_until(std::chrono::system_clock::now() + 5ms), "try_lock_shared_until");
        }).join();
        w.unlock();
        long n = 0, torn = 0;
        long pair[2] = {0, 0};
        run_threads(kThreads, [&](int id) {
            for (int i = 0; i < ops / 2; i++) {
                if (id == 0 && i % 4 == 0) {
                    std::lock_guard<baton::shared_mutex> g(s);
                    pair[0]++;
                    pair[1]++;
                    n++;
                } else {
                    std::shared_lock<baton::shared_mutex> g(s);
                    if (pair[0] != pair[1])
                        __atomic_fetch_add(&torn, 1, __ATOMIC_RELAXED);
                }
            }
        });
        CHECK(torn == 0 && pair[0] == n, "shared_mutex: %ld torn reads", torn);
    }
}

/* baton::condition_variable over baton::mutex: a hand-off, time-outs,
 * predicate waits. */
static void condvar(const char *spec)
{
    baton::mutex m{spec};
    baton::condition_variable cv;
    long produced = 0, consumed = 0;
    const long total = ops;
    std::thread prod([&] {
        for (long i = 0; i < total; i++) {
            std::unique_lock<baton::mutex> u(m);
            cv.wait(u, [&] { return produced == consumed; });
            produced++;
            cv.notify_all();
        }
    });
    for (long i = 0; i < total; i++) {
        std::unique_lock<baton::mutex> u(m);
        bool ok = cv.wait_for(u, 20s, [&] { return produced > consumed; });
        CHECK(ok, "%s: condition_variable hand-off timed out", spec);
        consumed++;
        cv.notify_one();
    }
    prod.join();
    CHECK(consumed == total, "%s: consumed %ld", spec, consumed);

    std::unique_lock<baton::mutex> u(m);
    double ms = 0;
    std::cv_status st{};
    ms = elapsed_ms([&] { st = cv.wait_for(u, 20ms); });
    CHECK(st == std::cv_status::timeout && ms >= 19.0, "%s: wait_for: %.1f ms", spec, ms);
    CHECK(u.owns_lock() && !m.try_lock() == true, "%s: lock not held after a time-out", spec);
    bool r = true;
    ms = elapsed_ms(
        [&] { r = cv.wait_until(u, std::chrono::system_clock::now() + 20ms, [] { return false; }); });
    CHECK(!r && ms >= 19.0, "%s: wait_until(system_clock) predicate: %.1f ms", spec, ms);
    ms = elapsed_ms([&] { st = cv.wait_until(u, offset_clock::now() + 20ms); });
    CHECK(st == std::cv_status::timeout || ms < 19.0, "%s: wait_until(other clock) said no_timeout", spec);
}

static void barrier_test()
{
    for (const char *spec : {static_cast<const char *>(nullptr), "central", "dissemination:yield"}) {
        const int episodes = 200;
        baton::barrier b{kThreads, spec};
        std::atomic<int> arrived{0}, serial{0}, bad{0};
        run_threads(kThreads, [&](int) {
            for (int e = 0; e < episodes; e++) {
                arrived++;
                if (b.arrive_and_wait())
                    serial++;
                if (arrived.load() < (e + 1) * kThreads)
                    bad++;
                if (b.arrive_and_wait()) /* nobody starts e+1 before all have checked e */
                    serial++;
            }
        });
        CHECK(bad.load() == 0, "barrier %s: %d early releases", spec ? spec : "default", bad.load());
        CHECK(serial.load() == 2 * episodes, "barrier %s: %d serial threads for %d episodes",
              spec ? spec : "default", serial.load(), 2 * episodes);
    }
    bool threw = false;
    try {
        baton::barrier bad{2, "nosuchbarrier"};
    } catch (const std::invalid_argument &) {
        threw = true;
    }
    CHECK(threw, "bad barrier spec did not throw");
}

static void errors()
{
    bool threw = false;
    try {
        baton::mutex m{"nosuchlock"};
    } catch (const std::invalid_argument &e) {
        threw = std::strstr(e.what(), "nosuchlock") != nullptr;
        if (!threw)
            std::fprintf(stderr, "message: %s\n", e.what());
    }
    CHECK(threw, "a bad spec did not throw invalid_argument naming it");

    baton::mutex rcl{"rcl"};
    int code = 0;
    try {
        rcl.lock();
    } catch (const std::system_error &e) {
        code = e.code().value();
    }
    CHECK(code == ENOTSUP, "lock() on rcl: %d, expected ENOTSUP", code);

    baton::mutex srv{"server"};
    code = 0;
    try {
        std::lock_guard<baton::mutex> g(srv); /* lock works on servers */
        std::thread([&] {
            try {
                (void)srv.try_lock_for(1ms);
            } catch (const std::system_error &e) {
                code = e.code().value();
            }
        }).join();
    } catch (...) {
        code = -1;
    }
    CHECK(code == ENOTSUP, "try_lock_for on server: %d, expected ENOTSUP", code);

    /* execute from inside the same lock's critical section: EDEADLK. */
    baton::mutex m;
    code = 0;
    m.execute([&] {
        try {
            m.execute([] {});
        } catch (const std::system_error &e) {
            code = e.code().value();
        }
    });
    CHECK(code == EDEADLK, "nested execute: %d, expected EDEADLK", code);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        ops = std::atoi(argv[1]);
    for (const kind &k : all_kinds()) {
        std::printf("%-16s", k.spec.c_str());
        std::fflush(stdout);
        if (k.caps & BATON_CAP_LOCK) {
            stress_lock(k);
            std::printf(" lock");
        }
        if (k.caps & BATON_CAP_EXECUTE) {
            stress_execute(k);
            exceptions(k);
            std::printf(" execute delegate future exceptions");
        }
        std::printf("\n");
    }
    std::printf("(%d exceptions were thrown on another thread than their caller's)\n", exceptions_elsewhere);
    CHECK(exceptions_elsewhere > 0, "no exception crossed threads");
    helpers();
    std::printf("helpers\n");
    for (const char *spec : {"mcs:spinpark", "default", "qd", "server", "tas"})
        condvar(spec);
    std::printf("condition_variable\n");
    barrier_test();
    std::printf("barrier\n");
    errors();
    std::printf("errors\n");
    if (failures) {
        std::fprintf(stderr, "test_hpp: %d failures\n", failures);
        return 1;
    }
    std::printf("test_hpp: ok\n");
    return 0;
}
