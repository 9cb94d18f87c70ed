#include <stdio.h>
#include <time.h>
#include "../../work/main/src/wait/wait_internal.h"
static double now(void){struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec*1e3+t.tv_nsec/1e6;}
int main(void){ double t0=now(); const baton_calibration_t *c = baton_calibration(); double t1=now();
 printf("calibration %.2f ms  budget %.1f us yield %.0f ns\n", t1-t0, c->spin_budget_ns/1e3, c->yield_ns); return 0; }
