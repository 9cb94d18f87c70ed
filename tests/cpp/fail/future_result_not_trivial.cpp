/* Must not compile with -DBATON_FAIL: a result that is not trivially copyable. */
#include <baton/baton.hpp>
#include <string>
int main()
{
    baton::mutex m;
#ifdef BATON_FAIL
    auto f = m.delegate_future([] { return std::string("owned"); });
#else
    auto f = m.delegate_future([] { return 42; });
#endif
    (void)f.get();
}
