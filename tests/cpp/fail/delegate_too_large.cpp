/* Must not compile with -DBATON_FAIL: a callable larger than BATON_ARGS_MAX. */
#include <baton/baton.hpp>
int main()
{
    baton::mutex m;
#ifdef BATON_FAIL
    char big[BATON_ARGS_MAX + 1] = {0};
#else
    char big[8] = {0};
#endif
    m.delegate([big] { (void)big[0]; });
}
