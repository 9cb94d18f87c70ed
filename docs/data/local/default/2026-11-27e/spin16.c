#define _GNU_SOURCE
#include <baton/baton.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <time.h>
static baton_lock_t *L; static atomic_int go, stop; static int T, PIN;
static volatile uint64_t lines[10][8];
static long cnt[64*16];
static void *th(void *a){ int id=(int)(intptr_t)a; if(PIN){cpu_set_t c;CPU_ZERO(&c);CPU_SET(id%2,&c);pthread_setaffinity_np(pthread_self(),sizeof c,&c);}
  while(!atomic_load(&go)); long n=0;
  while(!atomic_load_explicit(&stop,memory_order_relaxed)){ baton_lock(L); for(int i=0;i<10;i++) lines[i][0]++; baton_unlock(L); n++; }
  cnt[id*16]=n; return 0;}
int main(int argc,char**argv){ T=atoi(argv[2]); PIN=argc>3?atoi(argv[3]):1; double dur=argc>4?atof(argv[4]):1.0; L=baton_lock_new(argv[1]); pthread_t p[64];
  for(int i=0;i<T;i++) pthread_create(&p[i],0,th,(void*)(intptr_t)i);
  struct timespec s={0,20000000}; nanosleep(&s,0); struct timespec a,b; clock_gettime(CLOCK_MONOTONIC,&a); atomic_store(&go,1);
  s.tv_sec=(time_t)dur; s.tv_nsec=(long)((dur-(double)s.tv_sec)*1e9); nanosleep(&s,0); atomic_store(&stop,1); clock_gettime(CLOCK_MONOTONIC,&b);
  long tot=0,mn=1L<<62,mx=0; for(int i=0;i<T;i++){ pthread_join(p[i],0); tot+=cnt[i*16]; if(cnt[i*16]<mn)mn=cnt[i*16]; if(cnt[i*16]>mx)mx=cnt[i*16]; }
  double t=(b.tv_sec-a.tv_sec)+(b.tv_nsec-a.tv_nsec)/1e9; long check=0; for(int i=0;i<10;i++) check+=lines[i][0];
  printf("%s T=%d: %.1f Mops/s fairness %.2f %s\n", argv[1], T, tot/t/1e6, (double)mn/mx, check==10*tot?"ok":"BAD"); return 0; }
