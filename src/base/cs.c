/* cs.c - the calling thread's chain of critical-section frames (cs.h). */
#include "cs.h"

_Thread_local baton_cs_frame_t *baton_cs_top __attribute__((tls_model("initial-exec")));
