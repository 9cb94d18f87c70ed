#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER, outer = PTHREAD_RWLOCK_INITIALIZER;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(int argc,char**argv){
  long n = argc>1?atol(argv[1]):20000000; int mode = argc>2?atoi(argv[2]):0;
  double best=1e9;
  for(int r=0;r<5;r++){
    double t0=now();
    if(mode==0) for(long i=0;i<n;i++){pthread_rwlock_rdlock(&rw);pthread_rwlock_unlock(&rw);}
    else if(mode==1) for(long i=0;i<n;i++){pthread_rwlock_wrlock(&rw);pthread_rwlock_unlock(&rw);}
    else if(mode==2) for(long i=0;i<n;i++){pthread_mutex_lock(&mu);pthread_mutex_unlock(&mu);}
    else { pthread_rwlock_rdlock(&outer); /* mode 3: a read pair nested in another read lock */
      for(long i=0;i<n;i++){pthread_rwlock_rdlock(&rw);pthread_rwlock_unlock(&rw);}
      pthread_rwlock_unlock(&outer); }
    double t=(now()-t0)/n*1e9; if(t<best)best=t;
  }
  printf("%s %.2f ns\n", mode==0?"rd":mode==1?"wr":mode==2?"mutex":"nested", best);
  return 0;
}
