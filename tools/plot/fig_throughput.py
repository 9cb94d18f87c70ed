"""fig_throughput.py - micro, pq and rw: per cell of the workload's
parameters (all but the thread count), throughput, fairness and CPU cost
against the threads, one series per lock.
"""

import matplotlib.pyplot as plt

import common

# The parameters that make a figure, per bench (the thread count is the x
# axis); those absent from a file are ignored.
PARAMS = {
    "micro": ["shared_lines", "private_lines", "local_work", "lock_count", "hogs"],
    "pq": ["local_work", "prefill", "nd"],
    "rw": ["reads_pct", "local_work"],
}
SHORT = {
    "shared_lines": "S",
    "private_lines": "P",
    "local_work": "L",
    "lock_count": "locks",
    "hogs": "hogs",
    "reads_pct": "reads%",
    "prefill": "prefill",
    "nd": "nd",
}
FILE_KEY = {
    "shared_lines": "S",
    "private_lines": "P",
    "local_work": "L",
    "lock_count": "C",
    "hogs": "H",
    "reads_pct": "R",
    "prefill": "n",
    "nd": "nd",
}
WHAT = {
    "micro": "lock micro-benchmark",
    "pq": "priority queue, 50% insert / 50% extract_min",
    "rw": "RWBench, readers and writers on a 64-entry array",
}


def drawable(r):
    return r.get("verified", r.get("status") == "ok") and (r.get("ops_per_s") or 0) > 0


def cell_title(bench, params, data):
    unit = data.get("local_unit_ns")
    bits = []
    for k, v in params:
        if k == "local_work" and unit:
            bits.append(f"L={v} ({v * unit:.0f} ns)")
        elif k == "reads_pct":
            bits.append(f"{v}% reads")
        elif k == "lock_count":
            bits.append(f"{v} lock{'s' if v != 1 else ''}")
        elif k == "hogs":
            bits.append(f"{v} CPU hog{'s' if v != 1 else ''}")
        elif k == "nd":
            if v:
                bits.append("ND")
        else:
            bits.append(f"{SHORT.get(k, k)}={v}")
    return f"{bench}: {WHAT.get(bench, bench)}; " + ", ".join(bits)


def plot(data, records, bench, source, drawn, styles):
    keys = [k for k in PARAMS[bench] if any(k in r for r in records)]
    groups = {}
    for r in records:
        groups.setdefault(tuple(r.get(k) for k in keys), []).append(r)
    cpus = (data.get("machine") or {}).get("cpus")
    for gkey in sorted(groups, key=lambda t: tuple((x is None, x) for x in t)):
        recs = groups[gkey]
        params = list(zip(keys, gkey))
        plot_cell(data, recs, bench, source, params, drawn, styles, cpus)


def plot_cell(data, recs, bench, source, params, drawn, styles, cpus):
    locks = sorted({r["lock"] for r in recs}, key=common.kind_sort_key)
    threads = sorted({r["threads"] for r in recs})
    labels = locks + ["physical limit"]
    fig, axes, ncol = common.new_figure(3, len(locks) + 1, labels)
    ax_t, ax_f, ax_c = axes
    panels = {"throughput": [], "fairness": [], "cpu": []}
    points = {}
    skipped = []
    tput, cpu = [], []
    for lock in locks:
        mine = sorted((r for r in recs if r["lock"] == lock), key=lambda r: r["threads"])
        ok = [r for r in mine if drawable(r)]
        skipped += [
            f"{lock} N={r['threads']} ({r.get('status', '?')})" for r in mine if not drawable(r)
        ]
        s = styles.get(lock)
        xs = [r["threads"] for r in ok]
        t = [r["ops_per_s"] / 1e6 for r in ok]
        f = [r.get("fairness") for r in ok]
        c = [r.get("cpu_s_per_mop") for r in ok]
        tput += t
        cpu += [v for v in c if v]
        kw = dict(
            color=s["color"],
            marker=s["marker"],
            markersize=s["markersize"],
            linestyle=s["linestyle"],
            linewidth=s.get("linewidth", common.LINE),
            zorder=s.get("zorder", 2),
        )
        ax_t.plot(xs, t, **kw)
        ax_f.plot(
            [x for x, v in zip(xs, f) if v is not None], [v for v in f if v is not None], **kw
        )
        ax_c.plot([x for x, v in zip(xs, c) if v], [v for v in c if v], **kw)
        panels["throughput"].append(lock)
        panels["fairness"].append(lock)
        panels["cpu"].append(lock)
        points[lock] = len(ok)
    # The cell's physical limit (one per thread count), where the bench knows it.
    lim = {}
    for r in recs:
        if r.get("limit_ops_per_s"):
            lim[r["threads"]] = r["limit_ops_per_s"] / 1e6
    handles = common.series_handles(styles, locks)
    labels = [lk if points[lk] else f"{lk} (no result)" for lk in locks]
    if lim:
        xs = sorted(lim)
        ax_t.plot(
            xs,
            [lim[x] for x in xs],
            color="black",
            linestyle=":",
            linewidth=1.2,
            marker="",
            zorder=1,
        )
        handles.append(plt.Line2D([], [], color="black", linestyle=":", linewidth=1.2))
        labels.append("physical limit")
        tput += [lim[x] for x in xs]
    common.set_thread_axis(ax_t, threads)
    common.set_thread_axis(ax_f, threads)
    common.set_thread_axis(ax_c, threads)
    common.set_value_axis(ax_t, tput, "throughput (Mops/s)")
    ax_f.set_ylim(0, 1.05)
    ax_f.set_ylabel("min / max operations per thread")
    common.set_value_axis(ax_c, cpu, "CPU-seconds per Mop")
    ax_t.set_title("throughput (higher is better)")
    ax_f.set_title("fairness (1 = every thread alike)")
    ax_c.set_title("CPU cost (lower is better)")
    for ax in axes:
        common.mark_oversubscribed(ax, cpus, threads, label=ax is ax_f)
    title = cell_title(bench, params, data)
    sub = common.machine_line(data)
    fig.suptitle(title + (f"\n{sub}" if sub else ""), fontsize=9.5)
    common.legend_below(fig, handles, labels, ncol)
    if skipped:
        ax_c.text(
            1.0,
            -0.3,
            "not drawn (no result): "
            + ", ".join(skipped[:6])
            + (f" and {len(skipped) - 6} more" if len(skipped) > 6 else ""),
            transform=ax_c.transAxes,
            ha="right",
            va="top",
            fontsize=6,
            color="#666666",
        )
    name = (
        bench
        + "_"
        + "_".join(
            f"{FILE_KEY.get(k, k)}{int(v) if isinstance(v, bool) else v}" for k, v in params
        )
    )
    where = {k: v for k, v in params}
    panel_list = [{"name": p, "series": panels[p]} for p in ("throughput", "fairness", "cpu")]
    drawn.save(fig, name, bench, source, where, panel_list, title, {"points": points})
