/* htm.c - is hardware transactional memory usable here?  Decided once.
 *
 * elide(<kind>) speculates only when this says BATON_HTM_REAL: CPUID
 * advertises RTM and a start-up probe of trivial transactions commits.  A
 * CPU whose RTM always aborts (TSX switched off by microcode, or by a
 * hypervisor that still advertises it) fails the probe, and elide(<kind>)
 * then never starts a transaction: it is exactly <kind>.
 *
 * BATON_RTM (environment):
 *   unset, "auto"        detect as above
 *   "0", "off"           behave as if the CPU had no RTM
 *   "inject:<cause>"     testing: every transaction "aborts" at once with
 *                        <cause> (a baton_abort_cause_name), so retry
 *                        policies and fallbacks run on any machine
 */
#include "htm.h"

#include <baton/wait.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Atomic int baton_htm_mode_v = BATON_HTM_NONE;
_Atomic uint32_t baton_htm_inject_status = 0; /* an abort with no cause (mode NONE never begins) */

static pthread_once_t once = PTHREAD_ONCE_INIT;
static baton_htm_info_t info;
static char state_buf[32];

static const char *const cause_names[BATON_ABORT_CAUSES] = {
    [BATON_ABORT_CONFLICT] = "conflict", [BATON_ABORT_CAPACITY] = "capacity", [BATON_ABORT_BUSY] = "busy",
    [BATON_ABORT_EXPLICIT] = "explicit", [BATON_ABORT_RETRY] = "retry",       [BATON_ABORT_NESTED] = "nested",
    [BATON_ABORT_DEBUG] = "debug",       [BATON_ABORT_OTHER] = "other",
};

const char *baton_abort_cause_name(unsigned cause)
{
    return cause < BATON_ABORT_CAUSES ? cause_names[cause] : NULL;
}

/* An abort status that htm_cause() counts under `cause`. */
static uint32_t status_of(unsigned cause)
{
    switch (cause) {
    case BATON_ABORT_CONFLICT: return HTM_CONFLICT | HTM_RETRY;
    case BATON_ABORT_CAPACITY: return HTM_CAPACITY;
    case BATON_ABORT_BUSY: return HTM_EXPLICIT | (HTM_CODE_BUSY << 24);
    case BATON_ABORT_EXPLICIT: return HTM_EXPLICIT | (1u << 24);
    case BATON_ABORT_RETRY: return HTM_RETRY;
    case BATON_ABORT_NESTED: return HTM_NESTED;
    case BATON_ABORT_DEBUG: return HTM_DEBUG;
    default: return 0;
    }
}

#if BATON_HAVE_RTM
/* Trivial transactions: how many of `tries` commit. */
static BATON_RTM_FN unsigned probe(unsigned tries)
{
    unsigned commits = 0;
    for (unsigned i = 0; i < tries; i++) {
        if (_xbegin() == _XBEGIN_STARTED) {
            _xend();
            commits++;
        }
    }
    return commits;
}
#endif

int baton_htm_env(const char *value, unsigned *cause)
{
    if (value == NULL || value[0] == '\0' || !strcmp(value, "auto"))
        return BATON_RTM_ENV_AUTO;
    if (!strcmp(value, "0") || !strcmp(value, "off"))
        return BATON_RTM_ENV_OFF;
    if (!strncmp(value, "inject:", 7))
        for (unsigned c = 0; c < BATON_ABORT_CAUSES; c++)
            if (!strcmp(value + 7, cause_names[c])) {
                *cause = c;
                return BATON_RTM_ENV_INJECT;
            }
    return BATON_RTM_ENV_BAD;
}

static void setup(void)
{
    const char *env = getenv("BATON_RTM");
    unsigned c = 0;
    int asked = baton_htm_env(env, &c);
    info.state = "absent";
    info.why = "the CPU does not advertise RTM";
    if (asked == BATON_RTM_ENV_OFF) {
        info.state = "disabled";
        info.why = "BATON_RTM=off: behaving as if the CPU had no RTM";
        return;
    }
    if (asked == BATON_RTM_ENV_INJECT) {
        baton_store(&baton_htm_inject_status, status_of(c), memory_order_relaxed);
        snprintf(state_buf, sizeof state_buf, "inject:%s", cause_names[c]);
        info.state = state_buf;
        info.why = "BATON_RTM=inject: every transaction aborts at once (testing)";
        info.usable = 1;
        baton_store(&baton_htm_mode_v, BATON_HTM_INJECT, memory_order_relaxed);
        return;
    }
    if (asked == BATON_RTM_ENV_BAD) {
        fprintf(stderr,
                "baton: BATON_RTM=%s not understood (expected auto, off, or inject:<cause> "
                "with a cause among conflict, capacity, busy, explicit, retry, nested, "
                "debug, other); behaving as if the CPU had no RTM\n",
                env);
        info.state = "disabled";
        info.why = "BATON_RTM was not understood";
        return;
    }
#if BATON_HAVE_RTM
    if (!baton_cpu_features()->rtm)
        return;
    info.probe_tries = 64;
    info.probe_commits = probe(info.probe_tries);
    if (info.probe_commits == 0) {
        info.state = "always-aborting";
        info.why = "CPUID advertises RTM but no probe transaction committed";
        return;
    }
    info.state = "rtm";
    info.why = "Intel RTM: transactions commit";
    info.usable = 1;
    baton_store(&baton_htm_mode_v, BATON_HTM_REAL, memory_order_relaxed);
#else
    info.state = "not-built";
    info.why = "this build has no hardware-transaction support (not x86, or BATON_NO_HTM)";
#endif
}

void baton_htm_setup(void) { pthread_once(&once, setup); }

void baton_htm_info(baton_htm_info_t *out)
{
    baton_htm_setup();
    *out = info;
}
