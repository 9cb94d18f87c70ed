/* Must not compile with -DBATON_FAIL: a callable that fits delegate() but
 * not delegate_future(), which also copies a pointer to the future. */
#include <baton/baton.hpp>
int main()
{
    baton::mutex m;
    char big[BATON_ARGS_MAX - sizeof(void *) + 1] = {0};
    m.delegate([big] { (void)big[0]; });
#ifdef BATON_FAIL
    auto f = m.delegate_future([big] { return big[0]; });
#else
    auto f = m.delegate_future([p = &big] { return (*p)[0]; });
#endif
    return f.get();
}
