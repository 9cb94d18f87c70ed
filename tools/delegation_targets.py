#!/usr/bin/env python3
"""delegation_targets.py - check the delegation issue's speed targets against
the JSON of `baton bench pq`, `baton bench rw` and `baton bench micro`, and
print a markdown report.

    tools/delegation_targets.py [--pq pq.json] [--rw rw.json] [--micro micro.json]
    tools/delegation_targets.py --table FILE.json ROWKEY[,ROWKEY] LOCK[,LOCK...]
        (a Mops/s table: one row per value of the row keys, one column per lock,
         locks named by their canonical specs as the bench prints them)

pq, L in {0, 32}, threads in {2, 8, 16}: the best delegation kind must reach
    min(max(1.5 x best peer, 1.2 x best baton mutex kind), 0.9 x limit).
rw, reads in {50, 80}%, threads in {2, 16}, every L: mrqd must reach
    min(1.3 x best RW peer, 0.9 x limit).
micro, S = 10, 16 threads: the best delegation kind must reach 1.2 x the best
    peer.
Only verified results count.
"""
import json
import sys

DELEGATION = ("qd", "mrqd", "hqd", "rcl", "fc", "ccsynch")
RW_PEERS = ("peer:pthread_rwlock", "peer:absl_mutex_rw", "peer:tbb_spin_rw", "peer:ck_rwlock")


def kind_of(lock):
    name = lock.split(":")[0].split(",")[0].split("(")[0]
    return name


def is_delegation(lock):
    return kind_of(lock) in DELEGATION


def is_peer(lock):
    return lock.startswith("peer:")


def rate(r):
    return r["ops_per_s"] / 1e6 if r.get("status") == "ok" else 0.0


def best(records, pred):
    cands = [r for r in records if pred(r["lock"]) and r.get("status") == "ok"]
    if not cands:
        return None
    return max(cands, key=rate)


def cells(records, keys):
    out = {}
    for r in records:
        out.setdefault(tuple(r.get(k) for k in keys), []).append(r)
    return out


def name_rate(r):
    return f"{r['lock']} {rate(r):.2f}" if r else "-"


def check_pq(path):
    recs = [r for r in json.load(open(path))["results"] if not r.get("nd")]
    print(f"### pq ({path})\n")
    print("| threads | L | best delegation | best peer | best baton mutex | limit | needed | ratio to needed | met |")
    print("|---|---|---|---|---|---|---|---|---|")
    met = total = 0
    for (n, L), rs in sorted(cells(recs, ("threads", "local_work")).items()):
        if n not in (2, 8, 16) or L not in (0, 32):
            continue
        d = best(rs, is_delegation)
        p = best(rs, is_peer)
        m = best(rs, lambda l: not is_peer(l) and not is_delegation(l))
        limit = rs[0]["limit_ops_per_s"] / 1e6
        need = min(max(1.5 * rate(p) if p else 0, 1.2 * rate(m) if m else 0), 0.9 * limit)
        ok = d is not None and rate(d) >= need
        met += ok
        total += 1
        print(f"| {n} | {L} | {name_rate(d)} | {name_rate(p)} | {name_rate(m)} | {limit:.2f} | {need:.2f} | "
              f"{rate(d) / need if d and need else 0:.2f} | {'yes' if ok else 'no'} |")
    print(f"\npq: {met} of {total} cells met.\n")


def check_rw(path):
    recs = json.load(open(path))["results"]
    print(f"### rw ({path})\n")
    print("| threads | reads | L | mrqd | best RW peer | limit | needed | ratio to needed | met |")
    print("|---|---|---|---|---|---|---|---|---|")
    met = total = 0
    for (n, reads, L), rs in sorted(cells(recs, ("threads", "reads_pct", "local_work")).items()):
        if n not in (2, 16) or reads not in (50, 80):
            continue
        q = best(rs, lambda l: kind_of(l) == "mrqd")
        p = best(rs, lambda l: l in RW_PEERS)
        limit = rs[0]["limit_ops_per_s"] / 1e6
        need = min(1.3 * rate(p) if p else 0, 0.9 * limit)
        ok = q is not None and rate(q) >= need
        met += ok
        total += 1
        print(f"| {n} | {reads}% | {L} | {name_rate(q)} | {name_rate(p)} | {limit:.2f} | {need:.2f} | "
              f"{rate(q) / need if q and need else 0:.2f} | {'yes' if ok else 'no'} |")
    print(f"\nrw: {met} of {total} cells met.\n")


def check_micro(path):
    recs = json.load(open(path))["results"]
    print(f"### micro S=10 ({path})\n")
    print("| threads | best delegation | best peer | ratio | met (>= 1.2 at 16 threads) |")
    print("|---|---|---|---|---|")
    for (n, S, P, L), rs in sorted(cells(recs, ("threads", "shared_lines", "private_lines", "local_work")).items()):
        if S != 10 or P != 0 or L != 0:
            continue
        d = best(rs, is_delegation)
        p = best(rs, is_peer)
        ratio = rate(d) / rate(p) if d and p and rate(p) else 0
        verdict = ("yes" if ratio >= 1.2 else "no") if n == 16 else "-"
        print(f"| {n} | {name_rate(d)} | {name_rate(p)} | {ratio:.2f} | {verdict} |")
    print()


def table(path, rowkeys, locks):
    recs = json.load(open(path))["results"]
    keys = rowkeys.split(",")
    wanted = locks.split(",")
    # Specs with options contain commas: a wanted item that is key=value
    # continues the previous one, as on the command line.
    merged = []
    for w in wanted:
        if "=" in w and merged:
            merged[-1] += "," + w
        else:
            merged.append(w)
    print("| " + " | ".join(keys) + " | " + " | ".join(merged) + " |")
    print("|" + "---|" * (len(keys) + len(merged)))
    for key, rs in sorted(cells(recs, keys).items()):
        by = {r["lock"]: r for r in rs}  # canonical specs, as the tables print them
        cols = []
        for w in merged:
            r = by.get(w)
            cols.append("-" if r is None else (f"{rate(r):.2f}" if r.get("status") == "ok" else r.get("status", "?")))
        print("| " + " | ".join(str(k) for k in key) + " | " + " | ".join(cols) + " |")
    print()


def main():
    args = sys.argv[1:]
    if args and args[0] == "--table" and len(args) == 4:
        table(args[1], args[2], args[3])
        return 0
    if not args or "-h" in args or "--help" in args:
        print(__doc__)
        return 0 if args else 2
    i = 0
    while i < len(args):
        flag, path = args[i], args[i + 1] if i + 1 < len(args) else None
        if path is None:
            print(__doc__)
            return 2
        {"--pq": check_pq, "--rw": check_rw, "--micro": check_micro}[flag](path)
        i += 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
