#!/usr/bin/env python3
"""device_summary.py - merge the pieces of a tools/device-matrix.sh run and
write its summary tables.

    tools/device_summary.py OUTDIR

Reads OUTDIR/steps.tsv, OUTDIR/parts/<step>_<piece>.json (one per bench
invocation), OUTDIR/info.json and OUTDIR/omp/omp.csv.  Writes
OUTDIR/<step>.json (the pieces' results in one file: the first piece's
"machine", a "pieces" list with each piece's own header fields, and every
result; the parts are then removed), and OUTDIR/summary.md and
OUTDIR/summary.txt: the steps (what was shortened, cut, skipped or failed)
and one table per bench.

Table cells: Mops/s (pq, rw, micro, server), us per episode (barrier), cost
in us (wake: CPU per wait + median latency); COLL where the lock collapsed,
FAIL where verification failed, CRASH where the run crashed, '-' where it
did not run.  'best' names the fastest (lowest, for barrier and wake) of
the row.
"""
import csv
import json
import os
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def merge(out):
    """parts/<step>_<piece>.json -> <step>.json; returns {step: data}."""
    parts_dir = os.path.join(out, "parts")
    groups = {}
    if os.path.isdir(parts_dir):
        for name in sorted(os.listdir(parts_dir)):
            if name.endswith(".json"):
                step = name[:-5].split("_")[0]
                groups.setdefault(step, []).append(name)
    merged, seen = {}, set()
    for step, names in groups.items():
        datas = []
        for n in names:
            try:
                datas.append((n, load(os.path.join(parts_dir, n))))
            except (OSError, ValueError) as e:
                print(f"device_summary.py: {n}: {e}", file=sys.stderr)
        if not datas:
            continue
        if len(datas) == 1 and names[0] == step + ".json":
            data = datas[0][1]
        else:
            data = {"machine": datas[0][1].get("machine"), "pieces": [], "results": []}
            for n, d in datas:
                head = {k: v for k, v in d.items() if k not in ("machine", "results")}
                head["file"] = n
                data["pieces"].append(head)
                data["results"].extend(d.get("results", []))
        with open(os.path.join(out, step + ".json"), "w") as f:
            json.dump(data, f, indent=1)
            f.write("\n")
        for n, _ in datas:
            os.remove(os.path.join(parts_dir, n))
            seen.add(n)
        merged[step] = data
    for step in ("info", "matrix", "rcl", "pq", "rw", "server", "barrier", "wake"):
        p = os.path.join(out, step + ".json")
        if step not in merged and os.path.exists(p):
            merged[step] = load(p)
    return merged, seen


def missing_json(out, rows, seen):
    """Pieces that ran to the end but left no JSON (a bug of the script or
    of a bench): their names."""
    bad = []
    for r in rows:
        if r["status"] not in ("ok", "shortened"):
            continue
        words = r["command"].split()
        if "--json" not in words:
            continue
        path = words[words.index("--json") + 1]
        name = os.path.basename(path)
        if name in seen or os.path.exists(path) or os.path.exists(os.path.join(out, name)):
            continue
        bad.append(f"{r['step']} {r['piece']} ({name})")
    return bad


def fmt_num(x):
    if x is None:
        return "-"
    if x >= 1000:
        return f"{x:.0f}"
    if x >= 100:
        return f"{x:.1f}"
    if x >= 1:
        return f"{x:.2f}"
    return f"{x:.3g}"


def status_word(r):
    s = str(r.get("status", "?"))
    if s == "ok" and r.get("collapsed"):
        return "COLL"
    if s.startswith("COLLAPSED"):
        return "COLL"
    if s.startswith("VERIFY"):
        return "FAIL"
    if s.startswith("CRASH"):
        return "CRASH"
    return s


def pivot(results, rowkeys, colkey, value, lower_is_better=False):
    """A table: one row per value of rowkeys, one column per colkey value,
    plus the row's best column.  value(r) -> float or None."""
    cols, rows = [], {}
    for r in results:
        c = r.get(colkey)
        if c not in cols:
            cols.append(c)
        rows.setdefault(tuple(r.get(k) for k in rowkeys), {})[c] = r
    head = list(rowkeys) + [str(c) for c in cols] + ["best"]
    body = []
    for key in sorted(rows, key=lambda k: tuple((v is None, v) for v in k)):
        cells, best, best_v = [], "-", None
        for c in cols:
            r = rows[key].get(c)
            if r is None:
                cells.append("-")
                continue
            w = status_word(r)
            v = value(r) if w == "ok" else None
            cells.append(fmt_num(v) if v is not None else w)
            if v is not None and (best_v is None or (v < best_v if lower_is_better else v > best_v)):
                best, best_v = str(c), v
        body.append([str(k) for k in key] + cells + [best])
    return head, body


def mops(r):
    return r["ops_per_s"] / 1e6 if r.get("ops_per_s") is not None else None


class Doc:
    """Both renderings at once: markdown and aligned text."""

    def __init__(self):
        self.md, self.txt = [], []

    def para(self, s):
        self.md += [s, ""]
        self.txt += [s, ""]

    def heading(self, s):
        self.md += [f"## {s}", ""]
        self.txt += [s, "=" * len(s), ""]

    def table(self, head, body):
        if not body:
            self.para("(no rows)")
            return
        self.md.append("| " + " | ".join(head) + " |")
        self.md.append("|" + "|".join("---" for _ in head) + "|")
        for row in body:
            self.md.append("| " + " | ".join(row) + " |")
        self.md.append("")
        w = [max(len(str(x)) for x in col) for col in zip(head, *body)]
        for row in [head] + body:
            self.txt.append("  ".join(str(x).rjust(w[i]) if i else str(x).ljust(w[i])
                                      for i, x in enumerate(row)).rstrip())
        self.txt.append("")


def steps_section(doc, out):
    path = os.path.join(out, "steps.tsv")
    with open(path) as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    doc.heading("Steps")
    per = {}
    for r in rows:
        s = per.setdefault(r["step"], {"pieces": 0, "est": 0.0, "wall": 0.0, "status": {}})
        s["pieces"] += 1
        s["est"] += float(r["estimate_s"] or 0)
        s["wall"] += float(r["wall_s"] or 0)
        s["status"][r["status"]] = s["status"].get(r["status"], 0) + 1
    body = []
    for step, s in per.items():
        st = ", ".join(f"{n} {k}" for k, n in s["status"].items())
        body.append([step, str(s["pieces"]), st, f"{s['est']:.1f}", f"{s['wall']:.1f}"])
    total_w = sum(s["wall"] for s in per.values())
    total_e = sum(s["est"] for s in per.values())
    body.append(["total", str(len(rows)), "", f"{total_e:.1f}", f"{total_w:.1f}"])
    doc.table(["step", "pieces", "status", "estimate s", "wall s"], body)
    odd = [r for r in rows if r["status"] != "ok"]
    if odd:
        doc.para("Not as planned (shortened, killed at the limit, skipped or failed):")
        doc.table(["step", "piece", "status", "note"],
                  [[r["step"], r["piece"], r["status"], r["note"] or "-"] for r in odd])
    else:
        doc.para("Every piece ran as planned.")
    return rows


def machine_line(out):
    p = os.path.join(out, "info.json")
    if not os.path.exists(p):
        return "machine: (no info.json)"
    m = load(p).get("machine", {})
    return (f"machine: {m.get('cpu_model')}, {m.get('cpus')} CPUs ({m.get('cores')} cores, "
            f"{m.get('numa_nodes')} NUMA nodes), {m.get('kernel')}, {m.get('compiler')}, "
            f"line round trip {fmt_num(m.get('line_rtt_ns'))} ns, futex wake-up "
            f"{fmt_num((m.get('wakeup_latency_ns') or 0) / 1000)} us; {m.get('date')}")


def main():
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(sys.argv) == 2 else 2
    out = sys.argv[1]
    data, seen = merge(out)
    doc = Doc()
    doc.md += ["# device-matrix summary", ""]
    doc.txt += ["device-matrix summary", ""]
    doc.para(machine_line(out))
    bp = os.path.join(out, "binaries.txt")
    if os.path.exists(bp):
        with open(bp) as f:
            lines = [x.rstrip() for x in f if not x.startswith("  ")]
        doc.para("; ".join(lines))
    rows = steps_section(doc, out)
    bad = missing_json(out, rows, seen)
    if bad:
        doc.para("MISSING: these pieces ran to the end but left no JSON: " + ", ".join(bad))

    if "matrix" in data:
        d = data["matrix"]
        doc.heading(f"matrix ({d.get('plan')}): does the default lose?")
        doc.para(f"{d.get('cells_run')} of {d.get('cells')} cells in {d.get('wall_s')} s"
                 f"{' (time box: not all)' if d.get('time_boxed') else ''}: {d.get('won')} won, "
                 f"{d.get('within_5pct')} within 5%, {d.get('lost')} lost.  "
                 f"ratio = default / fastest reference")
        body = []
        for c in d.get("results", []):
            de, ref = c.get("default") or {}, c.get("fastest_reference") or {}
            dv = mops(de) if status_word(de) == "ok" else None
            rv = mops(ref) if status_word(ref) == "ok" else None
            body.append([c.get("cell", "?"), fmt_num(dv) if dv is not None else status_word(de),
                         ref.get("lock", "-"), fmt_num(rv) if rv is not None else status_word(ref),
                         fmt_num(c.get("ratio"))])
        doc.table(["cell", "default Mops/s", "fastest reference", "Mops/s", "ratio"], body)

    if "rcl" in data:
        doc.heading("rcl: the RCL figure (bench micro --via execute), Mops/s")
        res = data["rcl"]["results"]
        t = sorted({r["threads"] for r in res})
        doc.para(f"threads (clients) {t}; rcl's server thread runs on a CPU of its own")
        doc.table(*pivot(res, ["shared_lines"], "lock", mops))

    if "pq" in data:
        doc.heading("pq: priority queue, Mops/s")
        doc.table(*pivot(data["pq"]["results"], ["local_work", "threads"], "lock", mops))

    if "rw" in data:
        doc.heading("rw: RWBench, Mops/s (L = 0)")
        doc.table(*pivot(data["rw"]["results"], ["reads_pct", "threads"], "lock", mops))

    if "server" in data:
        doc.heading("server: lock servers, Mops/s (200-cycle interval)")
        doc.table(*pivot(data["server"]["results"], ["workload", "threads"], "lock", mops))

    if "barrier" in data:
        doc.heading("barrier: us per episode (lower is better)")
        doc.table(*pivot(data["barrier"]["results"], ["work_ns", "threads"], "barrier",
                         lambda r: r.get("us_per_episode"), lower_is_better=True))

    omp_csv = os.path.join(out, "omp", "omp.csv")
    if os.path.exists(omp_csv):
        with open(omp_csv) as f:
            rows = list(csv.DictReader(f))
        doc.heading("omp: omp_locks under GNU OpenMP, M ops/s (x stock)")
        cfgs, table = [], {}
        for r in rows:
            if r["config"] not in cfgs:
                cfgs.append(r["config"])
            v = r["median_ops_per_s"]
            cell = f"{float(v) / 1e6:.2f}" if v else "FAIL"
            if v and r["config"] != "stock" and r["ratio_vs_stock"]:
                cell += f" ({r['ratio_vs_stock']}x)"
            table.setdefault((r["mode"], r["threads"]), {})[r["config"]] = cell
        doc.table(["mode", "threads"] + cfgs,
                  [[m, t] + [cells.get(c, "-") for c in cfgs] for (m, t), cells in table.items()])

    if "wake" in data:
        doc.heading("wake: cost in us (CPU per wait + median latency; lower is better)")
        res = [dict(r, load=("busy" if r.get("oversubscribed") else "idle")) for r in data["wake"]["results"]]
        doc.table(*pivot(res, ["load", "delay_ns"], "policy", lambda r: r.get("cost_us"),
                         lower_is_better=True))

    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write("\n".join(doc.md).rstrip() + "\n")
    with open(os.path.join(out, "summary.txt"), "w") as f:
        f.write("\n".join(doc.txt).rstrip() + "\n")
    if bad:
        print("device_summary.py: pieces that ran but left no JSON: " + ", ".join(bad), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
