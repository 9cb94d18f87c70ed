/* cond.c - baton_cond_t (baton/cond.h): the condition variable of
 * src/cond/cv.c over the dynamic API's locks.
 *
 * A wait releases and re-takes the lock through baton_unlock()/baton_lock(),
 * so owner checks (check=1, the owner-tracking kinds) apply as for any
 * unlock.  What the dynamic API knows that the algorithm does not is
 * refused here: kinds without lock/unlock, and waits from inside one of the
 * lock's own execute/delegate operations (the critical-section frames of
 * src/delegate/delegate.h), which may run on another thread.
 */
#include <baton/baton.h>
#include "registry.h"
#include "../base/error.h"
#include "../cond/cv.h"
#include "../base/cs.h"

#include <errno.h>
#include <stdlib.h>

struct baton_cond {
    baton_cv_t cv;
};

baton_cond_t *baton_cond_new(void)
{
    baton_cond_t *c = malloc(sizeof *c);
    if (c == NULL) {
        errno = baton_fail(ENOMEM, "out of memory allocating a condition variable");
        return NULL;
    }
    baton_cv_init(&c->cv, 0);
    return c;
}

int baton_cond_free(baton_cond_t *c)
{
    if (c == NULL)
        return 0;
    int rc = baton_cv_destroy(&c->cv);
    if (rc != 0)
        return baton_fail(rc, "condition variable freed while a thread waits on it (never signalled)");
    free(c);
    return 0;
}

static int lock_op(void *l) { return baton_lock(l); }
static int unlock_op(void *l) { return baton_unlock(l); }

static int wait_on(baton_cond_t *c, baton_lock_t *l, clockid_t clock, const struct timespec *abstime)
{
    if (!(baton_lock_kind(l)->caps & BATON_CAP_LOCK))
        return baton_fail(ENOTSUP,
                          "condition wait: lock kind '%s' offers execute and delegate only "
                          "(no lock to release while waiting)",
                          baton_lock_kind(l)->name);
    if (baton_cs_inside(baton_lock_state(l)))
        return baton_fail(ENOTSUP,
                          "condition wait on lock '%s' from inside one of its execute/delegate "
                          "operations, which may run on another thread: wait with the lock held "
                          "through baton_lock() instead",
                          baton_lock_spec(l));
    const baton_cv_mutex_t m = {.unlock = unlock_op, .lock = lock_op, .m = l};
    return baton_cv_wait(&c->cv, &m, clock, abstime);
}

static int check_deadline(const struct timespec *abstime)
{
    if (abstime == NULL || abstime->tv_nsec < 0 || abstime->tv_nsec >= 1000000000L)
        return baton_fail(EINVAL, "condition wait: the deadline's tv_nsec is out of range [0, 1e9)");
    return 0;
}

int baton_cond_wait(baton_cond_t *c, baton_lock_t *l) { return wait_on(c, l, CLOCK_REALTIME, NULL); }

int baton_cond_clockwait(baton_cond_t *c, baton_lock_t *l, clockid_t clock, const struct timespec *abstime)
{
    if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC)
        return baton_fail(EINVAL, "condition wait: clock %d is neither CLOCK_REALTIME nor CLOCK_MONOTONIC",
                          (int)clock);
    int rc = check_deadline(abstime);
    return rc != 0 ? rc : wait_on(c, l, clock, abstime);
}

int baton_cond_timedwait(baton_cond_t *c, baton_lock_t *l, const struct timespec *abstime)
{
    return baton_cond_clockwait(c, l, CLOCK_REALTIME, abstime);
}

int baton_cond_signal(baton_cond_t *c)
{
    baton_cv_signal(&c->cv);
    return 0;
}

int baton_cond_broadcast(baton_cond_t *c)
{
    baton_cv_broadcast(&c->cv);
    return 0;
}
