/* first.c SPEC: the first contended wait of a fresh process.  Thread A holds
 * the lock 200 us; thread B, which arrived meanwhile, reports how long its
 * lock() took (the 200 us plus whatever the wait layer adds). */
#include <baton/baton.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
static baton_lock_t *l; static atomic_int arrived;
static double now_us(void){struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec*1e6+t.tv_nsec/1e3;}
static void *b(void *x){ (void)x; atomic_store(&arrived,1); double t0=now_us(); baton_lock(l); double t1=now_us(); baton_unlock(l); *(double*)x = t1-t0; return NULL; }
int main(int argc,char**argv){ l=baton_lock_new(argc>1?argv[1]:"mcs:spinpark"); double w=0; baton_lock(l); pthread_t t; pthread_create(&t,NULL,b,&w);
 while(!atomic_load(&arrived)); double t0=now_us(); while(now_us()-t0<200); baton_unlock(l); pthread_join(t,NULL); printf("%.0f ", w); baton_lock_free(l); return 0; }
