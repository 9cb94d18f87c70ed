#include <baton/baton.h>
#include <baton/runner.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#define N 4096
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static inline uint32_t rnd(uint32_t *x){*x^=*x<<13;*x^=*x>>17;*x^=*x<<5;return *x;}
struct line { _Alignas(128) _Atomic uint64_t v; };
struct fas { _Alignas(128) _Atomic int w; };
int main(int argc,char**argv){
  long iters=20000000; const char*spec=argc>1?argv[1]:"runner";
  baton_lock_t **dl=malloc(N*sizeof*dl); for(int i=0;i<N;i++) dl[i]=baton_lock_new(spec);
  baton_runner_t *tl=aligned_alloc(128,N*sizeof*tl); baton_wait_t w; baton_wait_init(&w,BATON_WAIT_SPINPARK);
  for(int i=0;i<N;i++) baton_runner_init(&tl[i],&w,0);
  struct fas *fl=aligned_alloc(128,N*sizeof*fl); for(int i=0;i<N;i++) atomic_init(&fl[i].w,0);
  void **pl=malloc(N*sizeof*pl); for(int i=0;i<N;i++){pl[i]=aligned_alloc(128,128); atomic_init((_Atomic int*)pl[i],0);} 
  struct line *sh=aligned_alloc(128,N*sizeof*sh);
  for(int rep=0;rep<3;rep++){
    uint32_t x=12345; double t=now();
    for(long i=0;i<iters;i++){uint32_t k=((uint64_t)rnd(&x)*N)>>32; baton_lock(dl[k]); atomic_store_explicit(&sh[k].v,atomic_load_explicit(&sh[k].v,memory_order_relaxed)+1,memory_order_relaxed); baton_unlock(dl[k]);}
    double a=now()-t; x=12345; t=now();
    for(long i=0;i<iters;i++){uint32_t k=((uint64_t)rnd(&x)*N)>>32; baton_runner_lock(&tl[k]); atomic_store_explicit(&sh[k].v,atomic_load_explicit(&sh[k].v,memory_order_relaxed)+1,memory_order_relaxed); baton_runner_release(&tl[k]);}
    double b=now()-t; x=12345; t=now();
    for(long i=0;i<iters;i++){uint32_t k=((uint64_t)rnd(&x)*N)>>32; while(atomic_exchange_explicit(&fl[k].w,1,memory_order_acquire)); atomic_store_explicit(&sh[k].v,atomic_load_explicit(&sh[k].v,memory_order_relaxed)+1,memory_order_relaxed); atomic_store_explicit(&fl[k].w,0,memory_order_release);}
    double c=now()-t; x=12345; t=now();
    for(long i=0;i<iters;i++){uint32_t k=((uint64_t)rnd(&x)*N)>>32; _Atomic int*p=pl[k]; while(atomic_exchange_explicit(p,1,memory_order_acquire)); atomic_store_explicit(&sh[k].v,atomic_load_explicit(&sh[k].v,memory_order_relaxed)+1,memory_order_relaxed); atomic_store_explicit(p,0,memory_order_release);}
    double d=now()-t;
    printf("dyn %s %.2f ns  typed runner %.2f ns  fas array %.2f ns  fas ptr %.2f ns\n",spec,a/iters*1e9,b/iters*1e9,c/iters*1e9,d/iters*1e9);
  }
}
