/* real.c - the real pthread functions (the next definitions after the
 * interposer's, found with dlsym once) (see preload.h). */
#include "preload.h"

#include <dlfcn.h>

/* pl_real()'s first lookup; fork's handlers (init.c) hold it across fork. */
baton_syslock_t pl_real_mu = BATON_SYSLOCK_INIT;

/* --- the real functions ---------------------------------------------------------- */

void *pl_next_symbol(const char *name) { return dlsym(RTLD_NEXT, name); }

static void *need(const char *name)
{
    void *f = dlsym(RTLD_NEXT, name);
    if (f == NULL)
        pl_die("cannot find the real %s: %s", name, dlerror());
    return f;
}

const pl_real_t *pl_real(void)
{
    static pl_real_t table;
    static _Atomic int done;
    /* Acquire: pairs with the release store below, publishing the table. */
    if (BATON_LIKELY(baton_load(&done, memory_order_acquire)))
        return &table;
    baton_syslock_lock(&pl_real_mu);
    if (!baton_load(&done, memory_order_relaxed)) { /* under pl_real_mu */
        pl_real_t t;
#define GET(field, name) *(void **)&t.field = need(name)
        GET(mutex_init, "pthread_mutex_init");
        GET(mutex_destroy, "pthread_mutex_destroy");
        GET(mutex_lock, "pthread_mutex_lock");
        GET(mutex_trylock, "pthread_mutex_trylock");
        GET(mutex_timedlock, "pthread_mutex_timedlock");
        GET(mutex_clocklock, "pthread_mutex_clocklock");
        GET(mutex_unlock, "pthread_mutex_unlock");
        GET(mutex_consistent, "pthread_mutex_consistent");
        GET(cond_init, "pthread_cond_init");
        GET(cond_destroy, "pthread_cond_destroy");
        GET(cond_wait, "pthread_cond_wait");
        GET(cond_timedwait, "pthread_cond_timedwait");
        GET(cond_clockwait, "pthread_cond_clockwait");
        GET(cond_signal, "pthread_cond_signal");
        GET(cond_broadcast, "pthread_cond_broadcast");
        GET(rwlock_init, "pthread_rwlock_init");
        GET(rwlock_destroy, "pthread_rwlock_destroy");
        GET(rwlock_rdlock, "pthread_rwlock_rdlock");
        GET(rwlock_tryrdlock, "pthread_rwlock_tryrdlock");
        GET(rwlock_timedrdlock, "pthread_rwlock_timedrdlock");
        GET(rwlock_clockrdlock, "pthread_rwlock_clockrdlock");
        GET(rwlock_wrlock, "pthread_rwlock_wrlock");
        GET(rwlock_trywrlock, "pthread_rwlock_trywrlock");
        GET(rwlock_timedwrlock, "pthread_rwlock_timedwrlock");
        GET(rwlock_clockwrlock, "pthread_rwlock_clockwrlock");
        GET(rwlock_unlock, "pthread_rwlock_unlock");
        GET(spin_init, "pthread_spin_init");
        GET(spin_destroy, "pthread_spin_destroy");
        GET(spin_lock, "pthread_spin_lock");
        GET(spin_trylock, "pthread_spin_trylock");
        GET(spin_unlock, "pthread_spin_unlock");
#undef GET
        table = t;
        baton_store(&done, 1, memory_order_release); /* pairs with the acquire above */
    }
    baton_syslock_unlock(&pl_real_mu);
    return &table;
}
