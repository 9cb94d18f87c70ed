/* profile.c - the contention profiler behind `baton profile` (BATON_PROFILE=1).
 *
 * One record per profiled lock, found by the lock's address (and type: the
 * memory of a freed mutex may come back as a rwlock, which gets a record of
 * its own).  The entry points follow the pattern in preload.h: they time
 * only acquisitions whose first try failed, and stamp the hold.
 *
 * Memory.  Nothing here calls malloc: the program's allocator may itself
 * take pthread mutexes, which would land back in the interposer.  Records
 * come from mmap()ed chunks; the address table is an open-addressing array
 * of record pointers (the record holds the key), also mmap()ed.  Lookups
 * take no lock.  A first
 * sighting takes `pl_prof_mu` (a syslock, not a pthread mutex), looks again and
 * inserts, so two threads seeing a new lock at once get one record.  The
 * record also remembers the live lock's state, so the report can add the
 * counters its kind keeps (elide(<kind>)'s commits and aborts by cause).  When the
 * table is half full a table twice the size is filled and published; the old
 * one stays mapped because a reader may still be probing it (a reader that
 * misses there simply takes the slow path and finds the record in the new
 * table).  Cost: one 192-byte record (three cache lines of its own, so
 * that two hot locks' records never share a line) plus 8-byte slots at most
 * half full, and the outgrown tables: 208 to 256 bytes per lock (158 MB
 * measured for 1 000 000 mutexes with 128-byte records; 64 MB more now),
 * stated in the report's "memory" line.  If mmap
 * fails, further locks share one "untracked" record rather than failing the
 * program.
 *
 * Destroyed locks.  A lock destroyed and its address reused by a new lock
 * of the same type is folded into the same record: the counts add up, the
 * call site stays the first one, and `destroyed` says how many instances
 * ended.  This keeps memory bounded by the number of distinct addresses for
 * programs that create and destroy locks in a loop.
 *
 * Counters.  Fields about an exclusive hold (acquisitions, contended
 * acquisitions, wait, hold) are written only by the thread holding the lock,
 * so each update is a relaxed load and store, not a locked read-modify-write:
 * the lock's own acquire/release orders successive holders' updates.
 * Shared (reader) acquisitions, trylock failures, condition waits,
 * destroys and the longest wait come from any thread and use relaxed
 * read-modify-writes.  All counters
 * are atomics, so a program that breaks the rules (unlocking a lock another
 * thread holds) gets inexact numbers, never undefined behaviour.
 *
 * Clock.  pl_prof_now() reads the time-stamp counter scaled to nanoseconds
 * by a factor calibrated against CLOCK_MONOTONIC at start (0.5 ms), when
 * the CPU says the counter is invariant; otherwise clock_gettime().  On this
 * project's test machine (AMD EPYC VM) rdtsc costs 15 ns and
 * clock_gettime(CLOCK_MONOTONIC) 32 ns.  BATON_PROFILE_CLOCK=monotonic
 * forces clock_gettime().
 *
 * Hold times are sampled.  Timing every hold reads the clock twice per
 * lock/unlock, about 20 ns here: 15-40% on a program whose critical
 * sections take 50 ns.  So an acquisition that waited is always timed, and
 * so are a lock's first 8; of the others one in BATON_PROFILE_HOLD_EVERY
 * (default 8; 1 times every hold), chosen quasi-randomly, whose hold then
 * counts 8 times: hold_ns and
 * holds are unbiased estimates of the total hold and of the number of holds.
 * Acquisitions, contention and waits are exact.
 *
 * Report.  At normal exit (a destructor: exit() or return from main; not
 * _exit or a fatal signal) the records with any activity are written as
 * tab-separated lines to the file named by BATON_PROFILE_OUT ("%p" replaced
 * by the pid, so forked children write their own; "%%" is "%"), else to
 * stderr.  A forked child starts with zeroed counters.  Format (version 1;
 * a last line "end" tells a complete report from a cut one):
 *   # baton-profile 1                   first line
 *   pid <pid>  /  exe <path>  /  clock <tsc|monotonic> <ticks per us>
 *   class <mutex|rwlock|spinlock> <spec|pthread> <bytes/lock> <live> <peak> <created>
 *   memory <records> <bytes>
 *   lock <type> <addr> <acq> <contended> <wait_ns> <max_wait_ns> <hold_ns> <holds>
 *        <shared_acq> <shared_contended> <shared_wait_ns>
 *        <trylock_failed> <cond_waits> <destroyed> <caller> <offset> <symbol|-> <module|->
 * (acq and contended count exclusive acquisitions, max_wait_ns covers both
 * kinds; hold_ns and holds are the sampled estimates described above)
 * where <caller> is the return address into the program, <offset> is
 * caller minus the module's load bias (what addr2line -e <module> takes),
 * <symbol> is the dynamic symbol dladdr() found ("name+0x12") and <module>
 * is last so that it may hold any character but a newline.
 */
#include "preload.h"
#include "../wait/wait_internal.h" /* baton_now_ns, baton_tsc_calibrate */
#include <baton/preload.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <x86intrin.h>
#define PL_HAVE_TSC 1
#else
#define PL_HAVE_TSC 0
#endif

struct pl_prof {
    /* Identity: written once, before the record is published. */
    const void *addr;
    const void *caller;
    uint32_t type; /* pl_prof_type */
    /* Written only by the exclusive holder (relaxed load + store). */
    _Atomic uint32_t hold_weight; /* what the timed hold stands for (1 or the sampling period) */
    _Atomic uint64_t acq, contended, wait_total;
    _Atomic uint64_t hold_start;        /* 0: this hold is not timed */
    _Atomic uint64_t hold_total, holds; /* estimates: sums of weight * hold, of weight */
    /* Written by any thread (relaxed read-modify-write). */
    _Atomic uint64_t wait_max; /* exclusive and shared waits */
    _Atomic uint64_t shared_acq, shared_contended, shared_wait_total;
    _Atomic uint64_t trylock_failed, cond_waits;
    _Atomic uint32_t destroyed;
    /* The live instance's kind and state (pl_prof_bind), for the counters
     * the kind keeps itself (elide(<kind>)'s transactions); NULL once
     * destroyed. */
    _Atomic(const void *) kind;
    _Atomic(void *) state;
} __attribute__((aligned(64))); /* records of different locks share no cache line */

_Static_assert(sizeof(pl_prof_t) == 192, "a profiler record is three cache lines");

/* --- records: mmap()ed chunks, never freed --------------------------------------- */

#define PL_PROF_CHUNK 1024u /* records per chunk (128 KiB) */

typedef struct pl_prof_chunk {
    struct pl_prof_chunk *next; /* older chunk; set before publication */
    _Atomic uint32_t used;      /* records initialised and published */
    pl_prof_t rec[PL_PROF_CHUNK];
} pl_prof_chunk_t;

/* --- the address table ------------------------------------------------------------ */

/* A slot is a record pointer (NULL: empty); the record holds the key. */
typedef struct pl_table {
    size_t mask; /* slots - 1 */
    size_t used; /* under pl_prof_mu */
    _Atomic(pl_prof_t *) slot[];
} pl_table_t;

#define PL_TABLE_FIRST 4096u

static _Atomic(pl_table_t *) table;              /* the current table */
static _Atomic(pl_prof_chunk_t *) chunks;        /* newest chunk first */
baton_syslock_t pl_prof_mu = BATON_SYSLOCK_INIT; /* first sightings, growth; fork: init.c */
static size_t table_bytes_total;                 /* every table ever mapped; under pl_prof_mu */
static size_t chunk_count;                       /* under pl_prof_mu */
static pl_prof_t untracked;                      /* shared by locks beyond memory */
static _Atomic int started;                      /* pl_prof_start() ran */
static char out_pattern[4096];                   /* BATON_PROFILE_OUT, copied at start */
/* Hold sampling (BATON_PROFILE_HOLD_EVERY, default 8): one uncontended hold
 * in hold_every is timed; hold_threshold = 2^32 / hold_every. */
static uint32_t hold_every = 1;
static uint64_t hold_threshold = 1ull << 32;

static inline size_t hash_addr(const void *addr)
{
    uint64_t a = (uint64_t)(uintptr_t)addr;
    a ^= a >> 33;
    a *= 0xff51afd7ed558ccdull;
    a ^= a >> 29;
    return (size_t)a;
}

static pl_prof_t *table_find(pl_table_t *t, const void *addr, pl_prof_type type)
{
    if (t == NULL)
        return NULL;
    for (size_t i = hash_addr(addr) & t->mask;; i = (i + 1) & t->mask) {
        /* Acquire: pairs with the release store in table_put(), so the
         * record's identity (written before) is visible. */
        pl_prof_t *r = baton_load(&t->slot[i], memory_order_acquire);
        if (r == NULL)
            return NULL;
        if (r->addr == addr && r->type == (uint32_t)type)
            return r;
    }
}

/* Under pl_prof_mu; the table has a free slot. */
static void table_put(pl_table_t *t, pl_prof_t *r)
{
    size_t i = hash_addr(r->addr) & t->mask;
    /* Relaxed: slots are written only under pl_prof_mu. */
    while (baton_load(&t->slot[i], memory_order_relaxed) != NULL)
        i = (i + 1) & t->mask;
    /* Release: pairs with the acquire loads in table_find() and
     * pl_prof_destroyed(); publishes the record's identity. */
    baton_store(&t->slot[i], r, memory_order_release);
    t->used++;
}

static pl_table_t *table_map(size_t slots)
{
    size_t bytes = sizeof(pl_table_t) + slots * sizeof(pl_prof_t *);
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    pl_table_t *t = m; /* zero-filled: every slot empty */
    t->mask = slots - 1;
    table_bytes_total += bytes;
    return t;
}

/* Under pl_prof_mu: a table with room for one more, or NULL (out of memory). */
static pl_table_t *table_room(void)
{
    /* Relaxed: `table` is only stored under pl_prof_mu, which we hold. */
    pl_table_t *t = baton_load(&table, memory_order_relaxed);
    if (t != NULL && (t->used + 1) * 2 <= t->mask + 1)
        return t;
    pl_table_t *n = table_map(t == NULL ? PL_TABLE_FIRST : (t->mask + 1) * 2);
    if (n == NULL)
        return NULL;
    if (t != NULL) {
        for (size_t i = 0; i <= t->mask; i++) {
            pl_prof_t *r = baton_load(&t->slot[i], memory_order_relaxed); /* written only under pl_prof_mu */
            if (r != NULL)
                table_put(n, r);
        }
    }
    /* Release: pairs with the acquire load in pl_prof_get(); the new table's
     * slots are complete before a reader can see it. */
    baton_store(&table, n, memory_order_release);
    return n;
}

/* Under pl_prof_mu: a fresh zeroed record, not yet published (the chunk's
 * `used` is bumped by the caller once the identity is written). */
static pl_prof_t *record_room(pl_prof_chunk_t **chunk)
{
    /* Relaxed: chunks and their `used` are only written under pl_prof_mu. */
    pl_prof_chunk_t *c = baton_load(&chunks, memory_order_relaxed);
    if (c == NULL || baton_load(&c->used, memory_order_relaxed) == PL_PROF_CHUNK) {
        void *m =
            mmap(NULL, sizeof(pl_prof_chunk_t), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            return NULL;
        pl_prof_chunk_t *n = m;
        n->next = c;
        /* Release: pairs with the acquire load in the report's walk. */
        baton_store(&chunks, n, memory_order_release);
        chunk_count++;
        c = n;
    }
    *chunk = c;
    return &c->rec[baton_load(&c->used, memory_order_relaxed)]; /* under pl_prof_mu */
}

static pl_prof_t *get_slow(const void *addr, pl_prof_type type, const void *caller)
{
    baton_syslock_lock(&pl_prof_mu);
    /* Relaxed: we hold pl_prof_mu, under which `table` is stored. */
    pl_prof_t *r = table_find(baton_load(&table, memory_order_relaxed), addr, type);
    if (r == NULL) {
        pl_prof_chunk_t *c;
        pl_table_t *t = table_room();
        r = t != NULL ? record_room(&c) : NULL;
        if (r == NULL) {
            r = &untracked;
        } else {
            r->addr = addr;
            r->caller = caller;
            r->type = (uint32_t)type;
            /* Release: pairs with the acquire load in the report's walk,
             * which reads only published records. */
            baton_store(&c->used, baton_load(&c->used, memory_order_relaxed) + 1, memory_order_release);
            table_put(t, r);
        }
    }
    baton_syslock_unlock(&pl_prof_mu);
    return r;
}

pl_prof_t *pl_prof_get(const void *addr, pl_prof_type type, const void *caller)
{
    /* Acquire: pairs with the release publishing a table in table_room(). */
    pl_prof_t *r = table_find(baton_load(&table, memory_order_acquire), addr, type);
    if (BATON_LIKELY(r != NULL))
        return r;
    return get_slow(addr, type, caller);
}

/* --- the clock ---------------------------------------------------------------------- */

static int use_tsc;
static uint64_t tsc_base, ns_base, tsc_mult; /* ns = ns_base + (tsc - tsc_base) * tsc_mult >> 32 */
/* The TSC against the clock over 0.5 ms, spinning (at start-up). */
#define PL_TSC_SPAN_NS 500000u

static void clock_calibrate(void)
{
    if (pl_config_clock_monotonic(getenv("BATON_PROFILE_CLOCK")))
        return;
#if PL_HAVE_TSC
    unsigned a, b, c, d;
    /* CPUID 0x80000007 EDX bit 8: the counter ticks at a constant rate in
     * every power state, so it can stand for wall time. */
    if (!__get_cpuid(0x80000007u, &a, &b, &c, &d) || !(d & (1u << 8)))
        return;
    baton_tsc_span_t s;
    if (baton_tsc_calibrate(PL_TSC_SPAN_NS, false, &s) == 0.0)
        return;
    tsc_mult = ((s.ns1 - s.ns0) << 32) / (s.tsc1 - s.tsc0); /* ns1 - ns0 < 2^31: no overflow */
    tsc_base = s.tsc0;
    ns_base = s.ns0;
    use_tsc = tsc_mult != 0;
#endif
}

uint64_t pl_prof_now(void)
{
#if PL_HAVE_TSC
    if (BATON_LIKELY(use_tsc))
        return ns_base + (uint64_t)(((unsigned __int128)(__rdtsc() - tsc_base) * tsc_mult) >> 32);
#endif
    return baton_now_ns();
}

/* --- the hooks ------------------------------------------------------------------------ */

/* Holder-only counters: a relaxed load and store (see the header comment). */
static inline void holder_add(_Atomic uint64_t *c, uint64_t v)
{
    baton_store(c, baton_load(c, memory_order_relaxed) + v,
                memory_order_relaxed); /* the lock orders holders */
}

static inline void max_update(_Atomic uint64_t *m, uint64_t v)
{
    uint64_t cur = baton_load(m, memory_order_relaxed); /* statistics only */
    while (v > cur && !baton_cas(m, &cur, v, memory_order_relaxed, memory_order_relaxed)) {
    }
}

void pl_prof_acquired(pl_prof_t *p, uint64_t wait_ns, bool contended, bool shared)
{
    if (shared) {
        /* Relaxed: statistics; readers update these concurrently. */
        baton_fetch_add(&p->shared_acq, 1, memory_order_relaxed);
        if (contended) {
            baton_fetch_add(&p->shared_contended, 1, memory_order_relaxed);
            baton_fetch_add(&p->shared_wait_total, wait_ns, memory_order_relaxed);
            max_update(&p->wait_max, wait_ns);
        }
        return;
    }
    holder_add(&p->acq, 1);
    if (contended) {
        holder_add(&p->contended, 1);
        holder_add(&p->wait_total, wait_ns);
        max_update(&p->wait_max, wait_ns); /* shared with readers' waits */
    }
    /* Time every hold that followed a wait, the first few, and a
     * pseudo-random sample of the others: acquisition numbers whose
     * golden-ratio multiple falls in the first 1/hold_every of the range
     * (quasi-uniform, so a program whose holds vary with a short period is
     * still sampled at every phase).  A sampled hold stands for hold_every. */
    uint64_t n = baton_load(&p->acq, memory_order_relaxed); /* holder only */
    bool every = contended || n <= hold_every;
    if (every || ((n * 0x9e3779b97f4a7c15ull) >> 32) < hold_threshold) {
        uint32_t weight = every ? 1u : hold_every;
        baton_store(&p->hold_weight, weight, memory_order_relaxed);       /* holder only */
        baton_store(&p->hold_start, pl_prof_now(), memory_order_relaxed); /* holder only */
    }
}

void pl_prof_released(pl_prof_t *p)
{
    uint64_t start = baton_load(&p->hold_start, memory_order_relaxed); /* holder only */
    if (start == 0)
        return;
    uint64_t now = pl_prof_now();
    uint64_t weight = baton_load(&p->hold_weight, memory_order_relaxed); /* holder only */
    /* The clock may step back by a few ns between CPUs; never count that. */
    holder_add(&p->hold_total, (now > start ? now - start : 0) * weight);
    holder_add(&p->holds, weight);
    baton_store(&p->hold_start, 0, memory_order_relaxed); /* holder only */
}

void pl_prof_trylock_failed(pl_prof_t *p)
{
    baton_fetch_add(&p->trylock_failed, 1, memory_order_relaxed); /* statistics */
}

void pl_prof_cond_wait(pl_prof_t *p)
{
    baton_fetch_add(&p->cond_waits, 1, memory_order_relaxed); /* statistics */
}

void pl_prof_destroyed(const void *addr)
{
    /* Acquire: pairs with the release publishing a table in table_room(). */
    pl_table_t *t = baton_load(&table, memory_order_acquire);
    if (t == NULL)
        return;
    for (size_t i = hash_addr(addr) & t->mask;; i = (i + 1) & t->mask) {
        /* Acquire: pairs with the release store in table_put(). */
        pl_prof_t *r = baton_load(&t->slot[i], memory_order_acquire);
        if (r == NULL)
            return;
        if (r->addr == addr) {
            baton_fetch_add(&r->destroyed, 1, memory_order_relaxed); /* statistics */
            /* Relaxed: the report reads it at exit (or races, harmlessly:
             * slab slots are never unmapped). */
            baton_store(&r->state, NULL, memory_order_relaxed);
        }
    }
}

/* --- fork: the child profiles itself from zero ------------------------------------------- */

static void zero_counters(pl_prof_t *r)
{
    _Atomic uint64_t *f[] = {
        &r->acq,       &r->contended,  &r->wait_total,       &r->wait_max,          &r->hold_total,
        &r->holds,     &r->shared_acq, &r->shared_contended, &r->shared_wait_total, &r->trylock_failed,
        &r->cond_waits};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        baton_store(f[i], 0, memory_order_relaxed); /* single-threaded child */
    baton_store(&r->destroyed, 0, memory_order_relaxed);
}

/* In the child, from init.c's fork handler, which took pl_prof_mu across
 * the fork with the interposer's other locks and has reset it: the lock
 * has one set of fork handlers, so that a fork never takes it twice. */
void pl_prof_fork_child(void)
{
    /* Relaxed: the child has one thread. */
    for (pl_prof_chunk_t *c = baton_load(&chunks, memory_order_relaxed); c != NULL; c = c->next) {
        uint32_t n = baton_load(&c->used, memory_order_relaxed);
        for (uint32_t i = 0; i < n; i++)
            zero_counters(&c->rec[i]);
    }
    zero_counters(&untracked);
}

void pl_prof_start(void)
{
    int expected = 0;
    /* Relaxed: pl_init_slow() calls this once; the flag only guards the report. */
    if (!baton_cas(&started, &expected, 1, memory_order_relaxed, memory_order_relaxed))
        return;
    clock_calibrate();
    hold_every = pl_config_hold_every(getenv("BATON_PROFILE_HOLD_EVERY"));
    hold_threshold = (1ull << 32) / hold_every;
    (void)pl_config_out_pattern(getenv("BATON_PROFILE_OUT"), out_pattern, sizeof out_pattern);
    untracked.type = PL_PROF_MUTEX;
    baton_syslock_lock(&pl_prof_mu);
    table_room(); /* the first table, so that lookups rarely find none */
    baton_syslock_unlock(&pl_prof_mu);
    pl_log("profile: clock %s", use_tsc ? "tsc" : "monotonic");
}

/* --- the report ----------------------------------------------------------------------------- */

typedef struct out {
    int fd;
    size_t n;
    char buf[8192];
} out_t;

static void out_flush(out_t *o)
{
    size_t done = 0;
    while (done < o->n) {
        ssize_t w = write(o->fd, o->buf + done, o->n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        done += (size_t)w;
    }
    o->n = 0;
}

static void out_printf(out_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out_printf(out_t *o, const char *fmt, ...)
{
    char line[2048]; /* vsnprintf into the stack: no allocation */
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    size_t len = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
    if (o->n + len > sizeof o->buf)
        out_flush(o);
    memcpy(o->buf + o->n, line, len);
    o->n += len;
}

/* The loaded modules' segments, collected once at report time. */
typedef struct seg {
    uintptr_t lo, hi, bias;
    const char *name;
} seg_t;

static seg_t segs[512];
static size_t nsegs;
static char exe_path[4096];

static int seg_collect(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size, (void)arg;
    const char *name = info->dlpi_name;
    if (name == NULL || name[0] == '\0')
        name = exe_path; /* the main program */
    for (int i = 0; i < info->dlpi_phnum && nsegs < sizeof segs / sizeof segs[0]; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t lo = (uintptr_t)info->dlpi_addr + (uintptr_t)ph->p_vaddr;
        segs[nsegs++] = (seg_t){
            .lo = lo, .hi = lo + (uintptr_t)ph->p_memsz, .bias = (uintptr_t)info->dlpi_addr, .name = name};
    }
    return 0;
}

static const seg_t *seg_find(uintptr_t a)
{
    static size_t last;
    if (last < nsegs && a >= segs[last].lo && a < segs[last].hi)
        return &segs[last];
    for (size_t i = 0; i < nsegs; i++)
        if (a >= segs[i].lo && a < segs[i].hi) {
            last = i;
            return &segs[i];
        }
    return NULL;
}

static const char *type_name(pl_prof_type t)
{
    switch (t) {
    case PL_PROF_MUTEX: return "mutex";
    case PL_PROF_RWLOCK: return "rwlock";
    case PL_PROF_SPIN: return "spin";
    case PL_PROF_OMP: return "omp";
    case PL_PROF_CRITICAL: return "critical";
    }
    return "?";
}

static uint64_t ld(_Atomic uint64_t *c) { return baton_load(c, memory_order_relaxed); /* statistics */ }

void pl_prof_bind(pl_prof_t *p, const baton_kind_t *kind, void *state)
{
    if (kind->stats == NULL || p == &untracked)
        return;
    /* Relaxed: see pl_prof_destroyed(); the kind is stored first and read
     * only when a state is seen (both stay valid for the process's life). */
    baton_store(&p->kind, (const void *)kind, memory_order_relaxed);
    baton_store(&p->state, state, memory_order_relaxed);
}

/* The counters the lock's kind keeps, where it used them: elide(<kind>)'s
 * transactions, a lock server's messages. */
static void report_elision(out_t *o, pl_prof_t *r, const char *addr)
{
    void *state = baton_load(&r->state, memory_order_relaxed); /* see pl_prof_bind() */
    const baton_kind_t *k = baton_load(&r->kind, memory_order_relaxed);
    if (state == NULL || k == NULL)
        return;
    baton_stats_t st;
    memset(&st, 0, sizeof st);
    k->stats(state, &st);
    if (st.tx_attempts + st.tx_fallbacks + st.tx_skipped != 0) {
        out_printf(o, "elide\t%s\t%llu\t%llu", addr, (unsigned long long)st.tx_attempts,
                   (unsigned long long)st.tx_commits);
        for (unsigned c = 0; c < BATON_ABORT_CAUSES; c++)
            out_printf(o, "\t%llu", (unsigned long long)st.tx_aborts[c]);
        out_printf(o, "\t%llu\t%llu\n", (unsigned long long)st.tx_fallbacks,
                   (unsigned long long)st.tx_skipped);
    }
    /* Lock servers: messages sent and received by role. */
    uint64_t msgs = 0;
    for (unsigned role = 0; role < BATON_ROLES; role++)
        msgs += st.msg_sent[role] + st.msg_received[role];
    if (msgs != 0) {
        out_printf(o, "server\t%s", addr);
        for (unsigned role = 0; role < BATON_ROLES; role++)
            out_printf(o, "\t%llu\t%llu", (unsigned long long)st.msg_sent[role],
                       (unsigned long long)st.msg_received[role]);
        out_printf(o, "\n");
    }
}

static void report_record(out_t *o, pl_prof_t *r, const char *addr_text)
{
    uint64_t acq = ld(&r->acq), sacq = ld(&r->shared_acq), tf = ld(&r->trylock_failed),
             cw = ld(&r->cond_waits);
    if (acq + sacq + tf + cw == 0)
        return;
    uintptr_t caller = (uintptr_t)r->caller;
    const seg_t *s = caller ? seg_find(caller) : NULL;
    /* Many locks share a call site: remember the last few answers. */
    static struct {
        uintptr_t caller;
        char sym[256];
    } cache[64];
    size_t slot = (caller >> 2) % (sizeof cache / sizeof cache[0]);
    if (cache[slot].caller != caller || caller == 0) {
        Dl_info di;
        cache[slot].caller = caller;
        if (caller && dladdr(r->caller, &di) != 0 && di.dli_sname != NULL && di.dli_saddr != NULL)
            snprintf(cache[slot].sym, sizeof cache[slot].sym, "%s+0x%zx", di.dli_sname,
                     (size_t)(caller - (uintptr_t)di.dli_saddr));
        else
            memcpy(cache[slot].sym, "-", 2);
    }
    const char *sym = cache[slot].sym;
    char addr[32];
    if (addr_text == NULL)
        snprintf(addr, sizeof addr, "%p", r->addr);
    out_printf(o,
               "lock\t%s\t%s\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t"
               "0x%zx\t0x%zx\t%s\t%s\n",
               type_name(r->type), addr_text ? addr_text : addr, (unsigned long long)acq,
               (unsigned long long)ld(&r->contended), (unsigned long long)ld(&r->wait_total),
               (unsigned long long)ld(&r->wait_max), (unsigned long long)ld(&r->hold_total),
               (unsigned long long)ld(&r->holds), (unsigned long long)sacq,
               (unsigned long long)ld(&r->shared_contended), (unsigned long long)ld(&r->shared_wait_total),
               (unsigned long long)tf, (unsigned long long)cw,
               (unsigned long long)baton_load(&r->destroyed, memory_order_relaxed), /* statistics */
               (size_t)caller, (size_t)(s ? caller - s->bias : caller), sym, s ? s->name : "-");
    report_elision(o, r, addr_text ? addr_text : addr);
}

static int open_out(void)
{
    if (out_pattern[0] == '\0')
        return 2;
    char path[sizeof out_pattern + 32];
    (void)pl_config_out_path(out_pattern, (int)getpid(), path, sizeof path);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        char msg[sizeof path + 128];
        int m =
            snprintf(msg, sizeof msg, "baton-preload[%d]: cannot write the profile to %s: %s; using stderr\n",
                     (int)getpid(), path, strerror(errno));
        if (m > 0) {
            ssize_t w = write(2, msg, (size_t)m < sizeof msg ? (size_t)m : sizeof msg - 1);
            (void)w;
        }
        return 2;
    }
    return fd;
}

__attribute__((destructor)) static void pl_prof_report(void)
{
    static _Atomic int reported;
    /* Relaxed: start happened before (same thread or via pl_ready). */
    if (!pl_profiling || !baton_load(&started, memory_order_relaxed))
        return;
    /* Relaxed: one report per process, whoever gets here first. */
    if (baton_xchg(&reported, 1, memory_order_relaxed) != 0)
        return;
    static out_t o;
    o.fd = open_out();
    o.n = 0;
    ssize_t len = readlink("/proc/self/exe", exe_path, sizeof exe_path - 1);
    exe_path[len > 0 ? (size_t)len : 0] = '\0';
    nsegs = 0;
    dl_iterate_phdr(seg_collect, NULL);

    out_printf(&o, "# baton-profile 1\npid\t%d\nexe\t%s\n", (int)getpid(), exe_path);
    out_printf(&o, "clock\t%s\t%.3f\n", use_tsc ? "tsc" : "monotonic",
               use_tsc ? 1000.0 * 4294967296.0 / (double)tsc_mult : 1000.0);
    for (int i = 0; i < 4; i++) {
        baton_preload_info_t in;
        if (baton_preload_info(i, &in) == 0)
            out_printf(&o, "class\t%s\t%s\t%zu\t%llu\t%llu\t%llu\n", in.what, in.stock ? "pthread" : in.spec,
                       in.bytes_per_lock, (unsigned long long)in.live, (unsigned long long)in.peak,
                       (unsigned long long)in.created);
    }
    /* Acquire: pairs with the release publishing a chunk (record_room) and
     * each record (get_slow): only complete records are read. */
    size_t records = 0;
    for (pl_prof_chunk_t *c = baton_load(&chunks, memory_order_acquire); c != NULL; c = c->next) {
        uint32_t n = baton_load(&c->used, memory_order_acquire);
        records += n;
        for (uint32_t i = 0; i < n; i++)
            report_record(&o, &c->rec[i], NULL);
    }
    report_record(&o, &untracked, "untracked");
    baton_syslock_lock(&pl_prof_mu);
    size_t bytes = chunk_count * sizeof(pl_prof_chunk_t) + table_bytes_total;
    baton_syslock_unlock(&pl_prof_mu);
    out_printf(&o, "memory\t%zu\t%zu\n", records, bytes);
    out_printf(&o, "end\n");
    out_flush(&o);
    if (o.fd != 2)
        close(o.fd);
}
