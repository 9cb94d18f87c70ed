/* cpu.c - CPU feature detection with CPUID, at run time, once.
 *
 * waitpkg:  CPUID.(EAX=7,ECX=0):ECX[5]   UMONITOR/UMWAIT/TPAUSE
 * monitorx: CPUID.(EAX=80000001h):ECX[29] MONITORX/MWAITX
 * rtm:      CPUID.(EAX=7,ECX=0):EBX[11]
 * hle:      CPUID.(EAX=7,ECX=0):EBX[4]
 */
#include <baton/wait.h>

#include <pthread.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

static baton_cpu_features_t features;
static pthread_once_t features_once = PTHREAD_ONCE_INIT;

static void detect(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    if (__get_cpuid(0, &a, &b, &c, &d)) {
        memcpy(features.vendor + 0, &b, 4);
        memcpy(features.vendor + 4, &d, 4);
        memcpy(features.vendor + 8, &c, 4);
        features.vendor[12] = '\0';
        if (a >= 7 && __get_cpuid_count(7, 0, &a, &b, &c, &d)) {
            features.waitpkg = (c >> 5) & 1u;
            features.rtm = (b >> 11) & 1u;
            features.hle = (b >> 4) & 1u;
        }
    }
    if (__get_cpuid(0x80000000u, &a, &b, &c, &d) && a >= 0x80000001u &&
        __get_cpuid(0x80000001u, &a, &b, &c, &d))
        features.monitorx = (c >> 29) & 1u;
#else
    strcpy(features.vendor, "unknown");
#endif
}

const baton_cpu_features_t *baton_cpu_features(void)
{
    pthread_once(&features_once, detect);
    return &features;
}
