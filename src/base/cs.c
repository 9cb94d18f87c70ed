/* cs.c - the calling thread's chain of critical-section frames, and the
 * waits for futures (cs.h). */
#include "cs.h"
#include "../wait/wait_internal.h"

_Thread_local baton_cs_frame_t *baton_cs_top __attribute__((tls_model("initial-exec")));

int baton_future_wait(baton_future_t *f)
{
    /* Acquire: pairs with the release of baton_future_complete(); often the
     * operation has run (or the caller ran it itself). */
    if (BATON_LIKELY((baton_load(&f->state, memory_order_acquire) & ~BATON_WAIT_PARKED) != 0))
        return f->status;
    baton_wait_t w;
    memcpy(&w, &f->wait, sizeof w);
    /* A helper wait: the operation runs on another thread, which may need
     * our CPU (wait_internal.h).  The acquire inside pairs with the release
     * of baton_future_complete(). */
    (void)baton_wait_for_helper(&w, &f->state, 0u);
    return f->status;
}

int baton_future_ready(const baton_future_t *f)
{
    /* Acquire pairs with the release of baton_future_complete().  The cast
     * drops const only for C11's atomic_load signature. */
    return (baton_load((_Atomic uint32_t *)&f->state, memory_order_acquire) & ~BATON_WAIT_PARKED) != 0;
}
