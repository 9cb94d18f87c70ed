"""fig_barrier.py - barrier: microseconds per episode, and CPU
microseconds per episode, against the threads N, one figure per amount of
work W between episodes, one series per barrier.
"""

import common


def ok(r):
    return r.get("status") == "ok" and (r.get("us_per_episode") or 0) > 0


def plot(data, records, source, drawn, styles):
    by_w = {}
    for r in records:
        by_w.setdefault(r.get("work_ns", 0), []).append(r)
    cpus = (data.get("machine") or {}).get("cpus")
    for w in sorted(by_w):
        plot_w(data, by_w[w], w, source, drawn, styles, cpus)


def plot_w(data, recs, w, source, drawn, styles, cpus):
    names = sorted({r["barrier"] for r in recs}, key=common.kind_sort_key)
    threads = sorted({r["threads"] for r in recs})
    fig, (ax_t, ax_c), ncol = common.new_figure(2, len(names) + 1, names + ["limit"], panel_w=4.2)
    points, skipped, vals, cvals = {}, [], [], []
    for n in names:
        mine = sorted((r for r in recs if r["barrier"] == n), key=lambda r: r["threads"])
        good = [r for r in mine if ok(r)]
        skipped += [f"{n} N={r['threads']} ({r.get('status')})" for r in mine if not ok(r)]
        s = styles.get(n)
        kw = dict(
            color=s["color"],
            marker=s["marker"],
            markersize=s["markersize"],
            linestyle=s["linestyle"],
            linewidth=s.get("linewidth", common.LINE),
            zorder=s.get("zorder", 2),
        )
        xs = [r["threads"] for r in good]
        ys = [r["us_per_episode"] for r in good]
        cs = [r.get("cpu_us_per_episode") for r in good]
        ax_t.plot(xs, ys, **kw)
        ax_c.plot([x for x, c in zip(xs, cs) if c], [c for c in cs if c], **kw)
        vals += ys
        cvals += [c for c in cs if c]
        points[n] = len(good)
    lim = {r["threads"]: r["limit_us"] for r in recs if r.get("limit_us")}
    handles = common.series_handles(styles, names)
    labels = [n if points[n] else f"{n} (no result)" for n in names]
    if lim:
        xs = sorted(lim)
        ax_t.plot(xs, [lim[x] for x in xs], color="black", linestyle=":", linewidth=1.2, zorder=1)
        handles.append(common.Line2D([], [], color="black", linestyle=":", linewidth=1.2))
        labels.append("limit: W x N / min(N, CPUs) + line round trip")
        vals += list(lim.values())
    for ax in (ax_t, ax_c):
        common.set_thread_axis(ax, threads, "threads N")
        common.mark_oversubscribed(ax, cpus, threads, label=ax is ax_t)
    common.set_value_axis(ax_t, vals, "time per episode (µs)")
    common.set_value_axis(ax_c, cvals, "CPU time per episode (µs, all threads)")
    ax_t.set_title("latency of an episode (lower is better)")
    ax_c.set_title("CPU burnt per episode (lower is better)")
    title = f"barrier: EPCC episodes, W = {w:g} ns of work between them"
    sub = common.machine_line(data)
    fig.suptitle(title + (f"\n{sub}" if sub else ""), fontsize=9.5)
    common.legend_below(fig, handles, labels, ncol)
    if skipped:
        ax_c.text(
            1.0,
            1.0,
            "not drawn: "
            + ", ".join(skipped[:4])
            + (f" and {len(skipped) - 4} more" if len(skipped) > 4 else ""),
            transform=ax_c.transAxes,
            ha="right",
            va="bottom",
            fontsize=6,
            color="#666666",
        )
    drawn.save(
        fig,
        f"barrier_W{w}",
        "barrier",
        source,
        {"work_ns": w},
        [{"name": "latency", "series": names}, {"name": "cpu", "series": names}],
        title,
        {"points": points},
    )
