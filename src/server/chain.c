/* chain.c - the chaining lock (`server,chain`): when the home grants the
 * lock it hands out its whole waiting list with the grant; a releasing
 * client passes the lock, with the rest of the list, straight to the next
 * waiter, and only the last one releases to the home.  With N waiters
 * queued at a grant, N critical sections cost N requests, one grant, N - 1
 * passes and one release (2N + 1 messages) instead of 3N.
 *
 * How the list travels.  The waiting list is linked through the waiters'
 * srt_link_t records, which only the home writes while they are queued.  A
 * grant that hands out a list says CHAINED; the list it carries is the
 * grantee's own link (its successor, whose link leads on), so a pass is a
 * single store into the next waiter's grant word, and each grantee reads
 * its successor from its own link right after the grant, before it can be
 * queued anywhere again.  Nobody else writes those links until the waiters
 * ask the home again: the home forgot the list when it handed it out.
 *
 * A grant with an empty list says GRANTED, and its holder releases to the
 * home as in the basic protocol; so does a holder whose list ran out.
 */
#include "server.h"

uint32_t chain_hand_out(lk_inst_t *in, srt_waiter_t *first)
{
    srt_waiter_t *rest = first->lnk->next;
    /* Passes between clients are counted when the chain ends (chain_ended);
     * a chain of groups (hier,chain at the global server) is counted by
     * the local servers that pass it. */
    in->chain_len = in->req_role == BATON_ROLE_CLIENT ? in->nwait - 1 : 0;
    in->head = in->tail = NULL;
    in->nwait = 0;
    return rest ? SRT_CHAINED : SRT_GRANTED;
}

void chain_ended(lk_inst_t *in)
{
    if (in->chain_len) {
        lk_count(in, BATON_ROLE_CLIENT, BATON_ROLE_CLIENT, in->chain_len);
        in->chain_len = 0;
    }
}

srt_waiter_t *chain_rest(srt_waiter_t *w)
{
    /* Written by the home before the grant that handed the list out; the
     * grantee's acquire of its grant (from the home, or from the passer
     * the home's grant reached) makes it visible. */
    return w->lnk->next;
}

bool chain_pass(srt_waiter_t *rest, const baton_wait_t *wait)
{
    /* Only in a forked child can a waiter of the list have no thread. */
    while (rest && lk_dead(rest))
        rest = rest->lnk->next;
    if (!rest)
        return false;
    /* The pass: one store into the next waiter's grant word (release, so
     * our critical section happens before its). */
    lk_answer(wait, rest, SRT_CHAINED);
    return true;
}
