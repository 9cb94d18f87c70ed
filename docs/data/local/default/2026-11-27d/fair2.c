#define _GNU_SOURCE
#include <baton/baton.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
enum { T = 16, MAXE = 4000000 };
static baton_lock_t *L;
static atomic_int go, stop;
static volatile uint64_t lines[10][8];
static uint64_t *ev[T]; static long nev[T];
static double t0;
static inline double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
static int LW;
static int PIN;
static void *th(void *a){ int id=(int)(intptr_t)a; if(PIN){ cpu_set_t c; CPU_ZERO(&c); CPU_SET(id%2,&c); pthread_setaffinity_np(pthread_self(),sizeof c,&c);}  uint64_t *e=ev[id]; long n=0;
  while(!atomic_load(&go)); 
  while(!atomic_load_explicit(&stop,memory_order_relaxed)){ baton_lock(L); for(int i=0;i<10;i++) lines[i][0]++; baton_unlock(L);
    if(n<MAXE) e[n++]=(uint64_t)(now()-t0); for(volatile int k=0;k<LW;k++); }
  nev[id]=n; return 0; }
int main(int argc,char**argv){ const char*spec=argc>1?argv[1]:NULL; double dur=argc>2?atof(argv[2]):0.3; LW=argc>3?atoi(argv[3]):0; PIN=argc>4?atoi(argv[4]):0;
  L=baton_lock_new(spec); pthread_t p[T]; for(int i=0;i<T;i++){ev[i]=malloc(sizeof(uint64_t)*MAXE); pthread_create(&p[i],0,th,(void*)(intptr_t)i);}
  struct timespec s={0,50000000}; nanosleep(&s,0); t0=now(); atomic_store(&go,1);
  s.tv_sec=(time_t)dur; s.tv_nsec=(long)((dur-(double)s.tv_sec)*1e9); nanosleep(&s,0); double tend=now()-t0; atomic_store(&stop,1);
  for(int i=0;i<T;i++) pthread_join(p[i],0);
  long mn=1L<<60,mx=0,tot=0; for(int i=0;i<T;i++){ if(nev[i]<mn)mn=nev[i]; if(nev[i]>mx)mx=nev[i]; tot+=nev[i]; }
  printf("%s: %.1f Mops/s fairness %.2f (min %ld max %ld)\n", spec?spec:"default", tot/tend*1e3, (double)mn/mx, mn, mx);
  { /* global turns: merge the per-thread sorted lists */
    long idx[T]={0}; long total=0; for(int i=0;i<T;i++) total+=nev[i];
    double *turn=malloc(sizeof(double)*total); long nt=0; long gs_n=0,gd_n=0; double gs_t=0,gd_t=0; int cur=-1; uint64_t ts=0,last=0;
    for(long k=0;k<total;k++){ int b=-1; uint64_t bt=~0ull; for(int i=0;i<T;i++) if(idx[i]<nev[i] && ev[i][idx[i]]<bt){bt=ev[i][idx[i]];b=i;}
      if(k>0 && bt-last>50000){ if(b==cur){gs_n++; gs_t+=bt-last;} else {gd_n++; gd_t+=bt-last;} }
      if(b!=cur){ if(cur>=0) turn[nt++]=(double)(last-ts); cur=b; ts=bt; } last=bt; idx[b]++; }
    printf(" gaps > 50 us between acquisitions: same thread %ld (%.1f ms), another thread %ld (%.1f ms)\n", gs_n, gs_t/1e6, gd_n, gd_t/1e6);
    if(cur>=0) turn[nt++]=(double)(last-ts);
    int cmpd(const void*a,const void*b){double x=*(const double*)a,y=*(const double*)b;return (x>y)-(x<y);}
    qsort(turn,nt,sizeof(double),cmpd); double sum=0,top=0; for(long k=0;k<nt;k++) sum+=turn[k]; for(long k=nt-nt/100;k<nt;k++) top+=turn[k];
    long nlong=0; double slong=0; for(long k=0;k<nt;k++) if(turn[k]>500000){nlong++; slong+=turn[k];}
    printf(" turns over 500 us: %ld, holding %.0f%% of the time\n", nlong, 100*slong/sum);
    printf(" turns %ld: p50 %.1f us p90 %.1f p99 %.1f max %.1f us; the longest 1%% of turns hold %.0f%% of the time\n", nt, turn[nt/2]/1e3, turn[nt*9/10]/1e3, turn[nt*99/100]/1e3, turn[nt-1]/1e3, 100*top/sum);
  }
  for(int i=0;i<T;i++){ /* first acquisition, longest gap and when, number of gaps > 5ms */
    uint64_t *e=ev[i]; long n=nev[i]; uint64_t first=n?e[0]:0, gmax=0, gat=0; int big=0; double held=0;
    for(long k=1;k<n;k++){ uint64_t g=e[k]-e[k-1]; if(g>gmax){gmax=g;gat=e[k-1];} if(g>5000000) big++; }
    /* bursts: count runs of consecutive events with gap < 20us */
    long bursts=n?1:0; for(long k=1;k<n;k++) if(e[k]-e[k-1]>20000) bursts++;
    double span=0; long bn=0; uint64_t bs=n?e[0]:0; for(long k=1;k<=n;k++){ if(k==n||e[k]-e[k-1]>20000){ span+=e[k-1]-bs; bn++; if(k<n) bs=e[k]; } }
    printf(" t%2d held %.1f ms (%.1f us/burst) rate %.2f ops/us |", i, span/1e6, bn?span/bn/1e3:0, span>0?n/(span/1e3):0);
    printf(" t%2d ops %8ld first %7.2f ms  maxgap %6.2f ms at %6.1f ms  gaps>5ms %d  bursts %ld  last %.1f ms\n", i, n, first/1e6, gmax/1e6, gat/1e6, big, bursts, n?e[n-1]/1e6:0);
    (void)held; }
  return 0; }
