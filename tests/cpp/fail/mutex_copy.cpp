/* Must not compile with -DBATON_FAIL: baton::mutex is not copyable or movable. */
#include <baton/baton.hpp>
#include <utility>
int main()
{
    baton::mutex m;
#ifdef BATON_FAIL
    baton::mutex n{std::move(m)};
#else
    baton::mutex &n = m;
#endif
    n.lock();
    n.unlock();
}
