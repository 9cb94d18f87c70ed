/* Must not compile with -DBATON_FAIL: a callable that is not trivially copyable. */
#include <baton/baton.hpp>
#include <string>
int main()
{
    baton::mutex m;
#ifdef BATON_FAIL
    std::string s = "owned";
#else
    const char *s = "pointed to";
#endif
    m.delegate([s] { (void)s; });
}
