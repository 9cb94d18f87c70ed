/* baton/baton.hpp - C++17 types over the dynamic C API (header-only).
 *
 *   baton::mutex m{"mcs:spinpark"};          // or baton::mutex m; (the default kind)
 *   { std::lock_guard<baton::mutex> g(m); ...critical section... }
 *   int v = m.execute([&] { return ++counter; });   // runs under the lock
 *   m.delegate([p = &counter] { ++*p; });           // copied, may run later
 *   auto f = m.delegate_future([p = &counter] { return *p; });
 *   int w = f.get();
 *
 * baton::mutex         Lockable and TimedLockable (std::lock_guard,
 *                      std::unique_lock, std::scoped_lock,
 *                      std::condition_variable_any), plus execute, delegate
 *                      and delegate_future.
 * baton::shared_mutex  the same, and SharedTimedLockable (std::shared_lock);
 *                      default spec "rw(default),prefer_readers", the
 *                      interposer's default rwlock (reader-preferring, like
 *                      glibc's rwlock under std::shared_mutex).
 * baton::condition_variable  over baton_cond_t, for std::unique_lock<baton::mutex>.
 * baton::barrier       arrive_and_wait() over baton_barrier_t.
 * baton::future<T>     what delegate_future returns.
 *
 * Errors.  A bad spec throws std::invalid_argument with baton_last_error();
 * out of memory, std::bad_alloc; any other refusal at construction, and an
 * error number from a lock operation (ENOTSUP: lock() on rcl or ccsynch,
 * which offer execute and delegate only; timed locks on the lock servers;
 * EDEADLK under check=1), std::system_error with baton_last_error() as
 * its message.  unlock() is noexcept: an error from it (EPERM, under
 * check=1 or on kinds that track their owner: unlocking a mutex the caller
 * does not hold) calls std::terminate(), as a failed unlock inside a
 * lock_guard's destructor would.
 *
 * Where operations run.  execute(f) runs f under the lock and returns its
 * result; on delegation and server kinds f runs on another thread (a
 * combiner, a helper, a server), and an exception it throws is caught
 * there and rethrown to the caller once baton_execute() returns.  f must
 * not touch thread-local state it expects to be the caller's.
 * delegate(f) copies f (trivially copyable, at most BATON_ARGS_MAX bytes,
 * checked at compile time) and may return before it has run (kinds with
 * BATON_CAP_DETACH); an exception escaping a delegated f calls
 * std::terminate(), as one escaping a std::thread's function does.
 * delegate_future(f) copies f and a pointer to the future; the result (a
 * trivially copyable T) or the exception is written into the future, which
 * is neither copyable nor movable, and whose destructor waits for the
 * operation.
 *
 * Time.  try_lock_until on std::chrono::steady_clock waits on
 * CLOCK_MONOTONIC, on system_clock on CLOCK_REALTIME (baton_clocklock); any
 * other clock is converted through the difference of its now() and
 * steady_clock's, and the wait repeats while that clock has not reached
 * the deadline.  try_lock_for(d) waits until steady_clock::now() + d.
 *
 * Unlike std::mutex the constructors allocate (they are not constexpr) and
 * may throw.
 */
#ifndef BATON_BATON_HPP
#define BATON_BATON_HPP

#if __cplusplus < 201703L
#error "baton/baton.hpp needs C++17"
#endif

#include <cerrno>
#include <chrono>
#include <condition_variable> /* std::cv_status */
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <mutex>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>

/* g++ -Wshadow reads the C header's function baton_lock() (and
 * baton_htm_info()) as hiding the implicit constructor of the struct of
 * the same name; harmless in C, and not ours to rename. */
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#endif
#include <baton/barrier.h>
#include <baton/baton.h>
#include <baton/cond.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

namespace baton
{

namespace detail
{

[[noreturn]] inline void throw_error(int rc)
{
    throw std::system_error(rc, std::generic_category(), baton_last_error());
}

inline baton_lock_t *new_lock(const char *spec)
{
    errno = 0;
    baton_lock_t *l = baton_lock_new(spec);
    if (l)
        return l;
    int e = errno;
    if (e == EINVAL)
        throw std::invalid_argument(baton_last_error());
    if (e == ENOMEM)
        throw std::bad_alloc();
    throw_error(e ? e : EINVAL);
}

/* An absolute time as a timespec, saturating instead of overflowing. */
template <class Duration> timespec to_timespec(Duration since_epoch)
{
    using namespace std::chrono;
    auto s = floor<seconds>(since_epoch);
    timespec ts;
    using sec_t = decltype(ts.tv_sec);
    if (s.count() > static_cast<decltype(s.count())>(std::numeric_limits<sec_t>::max() - 1)) {
        ts.tv_sec = std::numeric_limits<sec_t>::max() - 1;
        ts.tv_nsec = 0;
        return ts;
    }
    if (s.count() < 0) { /* long past: a trylock answers ETIMEDOUT */
        ts.tv_sec = 0;
        ts.tv_nsec = 0;
        return ts;
    }
    ts.tv_sec = static_cast<sec_t>(s.count());
    ts.tv_nsec = static_cast<long>(duration_cast<nanoseconds>(since_epoch - s).count());
    return ts;
}

/* now() + d on steady_clock, saturating: d may be duration::max(). */
template <class Rep, class Period>
std::chrono::steady_clock::time_point steady_deadline(const std::chrono::duration<Rep, Period> &d)
{
    using namespace std::chrono;
    auto now = steady_clock::now();
    if (d <= d.zero())
        return now;
    /* About 100 years: further than any wait, well inside nanoseconds' range. */
    constexpr auto far = hours(24 * 365 * 100);
    if (d >= far)
        return now + far;
    return now + ceil<steady_clock::duration>(d);
}

/* Wait until tp on Clock by `wait(clockid, abstime)`, which answers 0,
 * ETIMEDOUT or an error.  Returns that code (ETIMEDOUT once Clock has
 * reached tp). */
template <class Clock, class Duration, class Wait>
int wait_until(const std::chrono::time_point<Clock, Duration> &tp, Wait &&wait)
{
    using namespace std::chrono;
    if constexpr (std::is_same_v<Clock, steady_clock>) {
        timespec ts = to_timespec(tp.time_since_epoch());
        return wait(CLOCK_MONOTONIC, ts);
    } else if constexpr (std::is_same_v<Clock, system_clock>) {
        timespec ts = to_timespec(tp.time_since_epoch());
        return wait(CLOCK_REALTIME, ts);
    } else {
        for (;;) {
            auto left = tp - Clock::now();
            timespec ts = to_timespec(steady_deadline(left).time_since_epoch());
            int rc = wait(CLOCK_MONOTONIC, ts);
            if (rc != ETIMEDOUT || Clock::now() >= tp)
                return rc;
        }
    }
}

/* What execute() keeps for f's result: nothing, a pointer, or the value. */
template <class R> struct result_slot {
    std::optional<R> value;
    template <class F> void run(F &f) { value.emplace(std::invoke(f)); }
    R take() { return std::move(*value); }
};
template <class R> struct result_slot<R &> {
    R *ptr = nullptr;
    template <class F> void run(F &f) { ptr = &std::invoke(f); }
    R &take() { return *ptr; }
};
template <> struct result_slot<void> {
    template <class F> void run(F &f) { std::invoke(f); }
    void take() {}
};

template <class F> struct execute_ctx {
    F *f;
    result_slot<std::invoke_result_t<F &>> result;
    std::exception_ptr error;

    /* May run on another thread: nothing may escape into the C library. */
    static void run(void *p) noexcept
    {
        auto *c = static_cast<execute_ctx *>(p);
        try {
            c->result.run(*c->f);
        } catch (...) {
            c->error = std::current_exception();
        }
    }
};

/* A copy of a trivially copyable T out of bytes the library may have
 * placed at any alignment. */
template <class T> struct byte_copy {
    alignas(T) unsigned char bytes[sizeof(T)];
    explicit byte_copy(const void *from) { std::memcpy(bytes, from, sizeof(T)); }
    T &get() { return *std::launder(reinterpret_cast<T *>(bytes)); }
};

template <class F> struct delegate_thunk {
    static void run(void *p) noexcept
    {
        byte_copy<F> f(p);
        std::invoke(f.get()); /* an exception here: std::terminate (noexcept) */
    }
};

} // namespace detail

template <class T> class future;

/* The exclusive half shared by mutex and shared_mutex. */
class basic_lock
{
  public:
    basic_lock(const basic_lock &) = delete;
    basic_lock &operator=(const basic_lock &) = delete;

    ~basic_lock() { (void)baton_lock_free(l_); }

    void lock()
    {
        int rc = baton_lock(l_);
        if (rc != 0)
            detail::throw_error(rc);
    }
    bool try_lock()
    {
        int rc = baton_trylock(l_);
        if (rc == 0)
            return true;
        if (rc == EBUSY)
            return false;
        detail::throw_error(rc);
    }
    void unlock() noexcept
    {
        if (baton_unlock(l_) != 0)
            std::terminate();
    }

    template <class Rep, class Period> bool try_lock_for(const std::chrono::duration<Rep, Period> &d)
    {
        return try_lock_until(detail::steady_deadline(d));
    }
    template <class Clock, class Duration>
    bool try_lock_until(const std::chrono::time_point<Clock, Duration> &tp)
    {
        int rc = detail::wait_until(
            tp, [this](clockid_t c, const timespec &ts) { return baton_clocklock(l_, c, &ts); });
        if (rc == 0)
            return true;
        if (rc == ETIMEDOUT)
            return false;
        detail::throw_error(rc);
    }

    /* Run f() under the lock (maybe on another thread) and return its
     * result; an exception f throws is rethrown here. */
    template <class F> std::invoke_result_t<F &> execute(F &&f)
    {
        using fn_t = std::remove_reference_t<F>;
        detail::execute_ctx<fn_t> ctx{&f, {}, {}};
        int rc = baton_execute(l_, &detail::execute_ctx<fn_t>::run, &ctx);
        if (rc != 0)
            detail::throw_error(rc);
        if (ctx.error)
            std::rethrow_exception(ctx.error);
        return ctx.result.take();
    }

    /* Copy f into the lock and run it under the lock, maybe later, maybe on
     * another thread; its result is dropped. */
    template <class F> void delegate(const F &f)
    {
        static_assert(std::is_trivially_copyable_v<F>,
                      "baton::delegate: the callable must be trivially copyable (it is copied as "
                      "bytes; capture pointers, not std::string or other owning types)");
        static_assert(sizeof(F) <= BATON_ARGS_MAX,
                      "baton::delegate: the callable is larger than BATON_ARGS_MAX bytes "
                      "(capture a pointer to the data instead)");
        static_assert(std::is_invocable_v<const F &> || std::is_invocable_v<F &>,
                      "baton::delegate: the callable must be invocable with no arguments");
        int rc = baton_delegate(l_, &detail::delegate_thunk<F>::run, &f, sizeof f);
        if (rc != 0)
            detail::throw_error(rc);
    }

    /* As delegate, and the result (or the exception) lands in the returned
     * future.  `auto fut = m.delegate_future(f);` (the future cannot move). */
    template <class F> future<std::invoke_result_t<F &>> delegate_future(const F &f);

    baton_lock_t *native_handle() noexcept { return l_; }
    /* The canonical spec (wait policy resolved, options spelled out). */
    const char *spec() const noexcept { return baton_lock_spec(l_); }
    unsigned caps() const noexcept { return baton_lock_kind(l_)->caps; }

  protected:
    explicit basic_lock(const char *spec) : l_(detail::new_lock(spec)) {}
    baton_lock_t *l_;
};

class mutex : public basic_lock
{
  public:
    mutex() : basic_lock(nullptr) {}
    explicit mutex(const char *spec) : basic_lock(spec) {}
    explicit mutex(const std::string &spec) : basic_lock(spec.c_str()) {}
};

class shared_mutex : public basic_lock
{
  public:
    static constexpr const char *default_spec = "rw(default),prefer_readers";

    shared_mutex() : basic_lock(default_spec) {}
    explicit shared_mutex(const char *spec) : basic_lock(spec) {}
    explicit shared_mutex(const std::string &spec) : basic_lock(spec.c_str()) {}

    void lock_shared()
    {
        int rc = baton_rlock(l_);
        if (rc != 0)
            detail::throw_error(rc);
    }
    bool try_lock_shared()
    {
        int rc = baton_rtrylock(l_);
        if (rc == 0)
            return true;
        if (rc == EBUSY)
            return false;
        detail::throw_error(rc);
    }
    void unlock_shared() noexcept
    {
        if (baton_runlock(l_) != 0)
            std::terminate();
    }
    template <class Rep, class Period> bool try_lock_shared_for(const std::chrono::duration<Rep, Period> &d)
    {
        return try_lock_shared_until(detail::steady_deadline(d));
    }
    template <class Clock, class Duration>
    bool try_lock_shared_until(const std::chrono::time_point<Clock, Duration> &tp)
    {
        int rc = detail::wait_until(
            tp, [this](clockid_t c, const timespec &ts) { return baton_rclocklock(l_, c, &ts); });
        if (rc == 0)
            return true;
        if (rc == ETIMEDOUT)
            return false;
        detail::throw_error(rc);
    }
};

/* The result of delegate_future.  Neither copyable nor movable: the
 * operation writes into it.  The destructor waits for the operation. */
template <class T> class future
{
    static_assert(std::is_void_v<T> || std::is_trivially_copyable_v<T>,
                  "baton::delegate_future: the result type must be trivially copyable (or void)");
    static_assert(!std::is_reference_v<T>,
                  "baton::delegate_future: the callable must return a value, not a reference");

  public:
    future(const future &) = delete;
    future &operator=(const future &) = delete;
    ~future() { wait(); }

    /* Wait for the operation (through the lock's wait policy). */
    void wait() noexcept
    {
        if (!waited_) {
            status_ = baton_future_wait(&f_);
            waited_ = true;
        }
    }
    /* Whether the operation has run (what it wrote is then visible). */
    bool ready() const noexcept { return waited_ || baton_future_ready(&f_) != 0; }
    /* Wait, then the result; rethrows what the operation threw.  May be
     * called more than once. */
    T get()
    {
        wait();
        if (status_ != 0)
            detail::throw_error(status_);
        if (error_)
            std::rethrow_exception(error_);
        if constexpr (!std::is_void_v<T>)
            return *std::launder(reinterpret_cast<T *>(value_));
    }

  private:
    friend class basic_lock;

    template <class F> struct args {
        F fn;
        future *self;
    };

    template <class F> static void run(void *p) noexcept
    {
        detail::byte_copy<args<F>> a(p);
        future *self = a.get().self;
        try {
            if constexpr (std::is_void_v<T>)
                std::invoke(a.get().fn);
            else
                ::new (static_cast<void *>(self->value_)) T(std::invoke(a.get().fn));
        } catch (...) {
            self->error_ = std::current_exception();
        }
    }

    template <class F> future(baton_lock_t *l, const F &f)
    {
        static_assert(std::is_trivially_copyable_v<F>,
                      "baton::delegate_future: the callable must be trivially copyable (it is "
                      "copied as bytes; capture pointers, not std::string or other owning types)");
        static_assert(sizeof(args<F>) <= BATON_ARGS_MAX,
                      "baton::delegate_future: the callable plus a pointer to the future is larger "
                      "than BATON_ARGS_MAX bytes (capture a pointer to the data instead)");
        args<F> a{f, this};
        int rc = baton_delegate_future(l, &future::run<F>, &a, sizeof a, &f_);
        if (rc != 0) { /* refused: f_ is ready, nothing will write here */
            waited_ = true;
            status_ = rc;
            detail::throw_error(rc);
        }
    }

    baton_future_t f_{};
    int status_ = 0;
    bool waited_ = false;
    std::exception_ptr error_;
    alignas(std::conditional_t<std::is_void_v<T>, char, T>) unsigned char value_
        [std::is_void_v<T> ? 1 : sizeof(std::conditional_t<std::is_void_v<T>, char, T>)];
};

template <class F> future<std::invoke_result_t<F &>> basic_lock::delegate_future(const F &f)
{
    return future<std::invoke_result_t<F &>>(l_, f);
}

/* A condition variable for std::unique_lock<baton::mutex> (any kind with
 * lock/unlock).  For other lockables use std::condition_variable_any. */
class condition_variable
{
  public:
    condition_variable() : c_(baton_cond_new())
    {
        if (!c_)
            throw std::bad_alloc();
    }
    condition_variable(const condition_variable &) = delete;
    condition_variable &operator=(const condition_variable &) = delete;
    ~condition_variable() { (void)baton_cond_free(c_); }

    void notify_one() noexcept { (void)baton_cond_signal(c_); }
    void notify_all() noexcept { (void)baton_cond_broadcast(c_); }

    void wait(std::unique_lock<mutex> &lk)
    {
        int rc = baton_cond_wait(c_, lk.mutex()->native_handle());
        if (rc != 0)
            detail::throw_error(rc);
    }
    template <class Predicate> void wait(std::unique_lock<mutex> &lk, Predicate pred)
    {
        while (!pred())
            wait(lk);
    }

    template <class Clock, class Duration>
    std::cv_status wait_until(std::unique_lock<mutex> &lk, const std::chrono::time_point<Clock, Duration> &tp)
    {
        baton_lock_t *l = lk.mutex()->native_handle();
        /* Other clocks: one wait on the converted deadline; a time-out
         * before Clock reaches tp reads as a (permitted) spurious wake-up. */
        int rc;
        if constexpr (std::is_same_v<Clock, std::chrono::system_clock>) {
            timespec ts = detail::to_timespec(tp.time_since_epoch());
            rc = baton_cond_clockwait(c_, l, CLOCK_REALTIME, &ts);
        } else {
            timespec ts;
            if constexpr (std::is_same_v<Clock, std::chrono::steady_clock>)
                ts = detail::to_timespec(tp.time_since_epoch());
            else
                ts = detail::to_timespec(detail::steady_deadline(tp - Clock::now()).time_since_epoch());
            rc = baton_cond_clockwait(c_, l, CLOCK_MONOTONIC, &ts);
        }
        if (rc != 0 && rc != ETIMEDOUT)
            detail::throw_error(rc);
        return Clock::now() >= tp ? std::cv_status::timeout : std::cv_status::no_timeout;
    }
    template <class Clock, class Duration, class Predicate>
    bool wait_until(std::unique_lock<mutex> &lk, const std::chrono::time_point<Clock, Duration> &tp,
                    Predicate pred)
    {
        while (!pred())
            if (wait_until(lk, tp) == std::cv_status::timeout)
                return pred();
        return true;
    }
    template <class Rep, class Period>
    std::cv_status wait_for(std::unique_lock<mutex> &lk, const std::chrono::duration<Rep, Period> &d)
    {
        return wait_until(lk, detail::steady_deadline(d));
    }
    template <class Rep, class Period, class Predicate>
    bool wait_for(std::unique_lock<mutex> &lk, const std::chrono::duration<Rep, Period> &d, Predicate pred)
    {
        return wait_until(lk, detail::steady_deadline(d), std::move(pred));
    }

    baton_cond_t *native_handle() noexcept { return c_; }

  private:
    baton_cond_t *c_;
};

/* std::barrier's arrive_and_wait over a baton barrier of n threads (spec:
 * barrier.h's grammar; nullptr, the default kind).  At most n distinct
 * threads may use it at a time (barrier.h). */
class barrier
{
  public:
    explicit barrier(std::ptrdiff_t n, const char *spec = nullptr)
    {
        if (n <= 0 || static_cast<unsigned long long>(n) > std::numeric_limits<unsigned>::max())
            throw std::invalid_argument("baton::barrier: the thread count must be in 1..UINT_MAX");
        errno = 0;
        b_ = baton_barrier_new(spec, static_cast<unsigned>(n));
        if (!b_) {
            int e = errno;
            if (e == EINVAL)
                throw std::invalid_argument(baton_last_error());
            if (e == ENOMEM)
                throw std::bad_alloc();
            detail::throw_error(e ? e : EINVAL);
        }
    }
    barrier(const barrier &) = delete;
    barrier &operator=(const barrier &) = delete;
    ~barrier() { (void)baton_barrier_free(b_); }

    /* Wait for the episode to end.  Returns true in exactly one thread of
     * each episode (POSIX's serial thread), false in the others. */
    bool arrive_and_wait()
    {
        int rc = baton_barrier_wait(b_);
        if (rc == BATON_BARRIER_SERIAL_THREAD)
            return true;
        if (rc != 0)
            detail::throw_error(rc);
        return false;
    }

    const char *spec() const noexcept { return baton_barrier_spec(b_); }
    baton_barrier_t *native_handle() noexcept { return b_; }

  private:
    baton_barrier_t *b_;
};

} // namespace baton

#endif /* BATON_BATON_HPP */
