#!/usr/bin/env python3
"""targets.py - read the JSON of `baton bench micro` and check the issue's
speed targets, printing a markdown report.

    tools/targets.py results/targets.json [--uncontended results/uncontended.json]

Per cell (threads, S, L):
  best baton kind vs best peer (target: >= 1.2x, or >= 0.9x the cell's
  physical limit where that is lower), with fairness >= 0.5;
  oversubscribed cells (threads > CPUs): every FIFO queue kind with
  spinpark, and onespinner, vs pthread (target >= 0.5x); the default
  kind's CPU-seconds per Mop vs pthread's (target <=).
"""
import json
import sys

FIFO_SPINPARK = ["ticket:spinpark", "mcs:spinpark", "clh:spinpark"]
DEFAULT = "relay"


def load(path):
    with open(path) as f:
        return json.load(f)


def fmt(x, digits=3):
    if x is None:
        return "-"
    if x >= 100:
        return f"{x:.0f}"
    if x >= 1:
        return f"{x:.2f}"
    return f"{x:.{digits}g}"


def main():
    args = sys.argv[1:]
    if not args:
        print(__doc__)
        return 2
    data = load(args[0])
    cpus = data["machine"]["cpus"]
    cells = {}
    for r in data["results"]:
        key = (r["threads"], r["shared_lines"], r["private_lines"], r["local_work"])
        cells.setdefault(key, []).append(r)
    out = []
    out.append("| threads | S | L | best baton kind | Mops/s | fairness | best peer | Mops/s | ratio | limit | target | met |")
    out.append("|---:|---:|---:|---|---:|---:|---|---:|---:|---:|---:|:---:|")
    over = []
    met_all = True
    for key in sorted(cells):
        n, s, p, l = key
        rs = [r for r in cells[key] if r["verified"]]
        if n == 1:
            continue
        baton = [r for r in rs if not r["lock"].startswith("peer:")]
        peers = [r for r in rs if r["lock"].startswith("peer:")]
        if not baton or not peers:
            continue
        # best baton kind among those with fairness >= 0.5
        fair = [r for r in baton if r["fairness"] >= 0.5]
        bb = max(fair or baton, key=lambda r: r["ops_per_s"])
        bp = max(peers, key=lambda r: r["ops_per_s"])
        limit = bb.get("limit_ops_per_s", 0) or 0
        target = 1.2 * bp["ops_per_s"]
        if limit:
            target = min(target, 0.9 * limit)
        ok = bb["ops_per_s"] >= target and bb["fairness"] >= 0.5
        met_all &= ok
        out.append(f"| {n} | {s} | {l} | {bb['lock']} | {fmt(bb['ops_per_s']/1e6)} | {bb['fairness']:.2f} | "
                   f"{bp['lock']} | {fmt(bp['ops_per_s']/1e6)} | {bb['ops_per_s']/bp['ops_per_s']:.2f} | "
                   f"{fmt(limit/1e6)} | {fmt(target/1e6)} | {'yes' if ok else 'NO'} |")
        if n > cpus:
            pth = next((r for r in rs if r["lock"] == "pthread"), None)
            if pth:
                for r in rs:
                    if r["lock"] in FIFO_SPINPARK or r["lock"].startswith("onespinner"):
                        over.append((n, s, l, r["lock"], r["ops_per_s"] / pth["ops_per_s"], r["cpu_s_per_mop"],
                                     pth["cpu_s_per_mop"]))
                d = next((r for r in rs if r["lock"].startswith(DEFAULT + ":") or r["lock"] == DEFAULT), None)
                if d:
                    over.append((n, s, l, d["lock"] + " (default)", d["ops_per_s"] / pth["ops_per_s"],
                                 d["cpu_s_per_mop"], pth["cpu_s_per_mop"]))
    print("### Contended cells: best baton kind against the best peer\n")
    print("\n".join(out))
    print()
    if over:
        print("### Oversubscribed cells: queue kinds with spinpark, onespinner and the default kind against pthread\n")
        print("| threads | S | L | lock | x pthread | target | CPU-s/Mop | pthread CPU-s/Mop |")
        print("|---:|---:|---:|---|---:|---|---:|---:|")
        for n, s, l, lock, ratio, cpu, pcpu in over:
            tgt = ">= 0.5x" if "(default)" not in lock else "CPU-s/Mop <= pthread's"
            print(f"| {n} | {s} | {l} | {lock} | {fmt(ratio)} | {tgt} | {fmt(cpu)} | {fmt(pcpu)} |")
        print()
    if len(args) >= 3 and args[1] == "--uncontended":
        u = load(args[2])
        rows = {r["lock"]: r for r in u["results"]}
        fas = rows.get("peer:ck_fas", {}).get("table_ns")
        mcs = rows.get("peer:ck_mcs", {}).get("table_ns")
        print("### Uncontended lock+unlock (ns)\n")
        print("| lock | typed | dynamic | dynamic - typed | peer (table) |")
        print("|---|---:|---:|---:|---:|")
        for name, r in rows.items():
            print(f"| {name} | {fmt(r.get('typed_ns'))} | {fmt(r.get('dynamic_ns'))} | "
                  f"{fmt(r['dynamic_ns'] - r['typed_ns']) if 'typed_ns' in r else '-'} | {fmt(r.get('table_ns'))} |")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
