"""fig_elide.py - elide: throughput against the threads for every lock,
and what became of each operation of the elided locks: committed
transactions, aborts by cause and fallbacks to the lock, per operation.
One figure per get mix and statistics-counter mode.
"""

import common

# Abort causes as `baton_abort_cause_name()` names them; colours apart
# from the commits' green.
CAUSE_COLOURS = {
    "conflict": "#d62728",
    "capacity": "#ff7f0e",
    "busy": "#9467bd",
    "explicit": "#8c564b",
    "retry": "#e377c2",
    "nested": "#bcbd22",
    "debug": "#7f7f7f",
    "other": "#17becf",
}


def ok(r):
    return r.get("status") == "ok" and (r.get("ops_per_s") or 0) > 0


def plot(data, records, source, drawn, styles):
    groups = {}
    for r in records:
        groups.setdefault((r.get("mix_get"), r.get("stats")), []).append(r)
    for key in sorted(groups, key=lambda k: (-(k[0] or 0), str(k[1]))):
        plot_cell(data, groups[key], key, source, drawn, styles)


def plot_cell(data, recs, key, source, drawn, styles):
    mix, stats = key
    locks = sorted({r["lock"] for r in recs}, key=common.kind_sort_key)
    elided = [
        lk
        for lk in locks
        if any(r["lock"] == lk and isinstance(r.get("aborts"), dict) for r in recs)
    ]
    threads = sorted({r["threads"] for r in recs})
    causes = []  # those that happened, in the bench's order
    for r in recs:
        for c, v in (r.get("aborts") or {}).items():
            if v and c not in causes:
                causes.append(c)
    outcomes = [
        ("committed", "commit_rate", "#2ca02c"),
        ("fell back to the lock", "fallbacks", "#7f7f7f"),
        ("skipped speculation", "skipped", "#c7c7c7"),
    ]
    cause_labels = [f"abort: {c}" for c in causes]
    labels = locks + [o[0] for o in outcomes] + cause_labels
    fig, (ax_t, ax_o, ax_a), ncol = common.new_figure(3, len(labels), labels, panel_w=3.6)
    points, tput = {}, []
    for lk in locks:
        mine = sorted((r for r in recs if r["lock"] == lk and ok(r)), key=lambda r: r["threads"])
        s = styles.get(lk)
        ax_t.plot(
            [r["threads"] for r in mine],
            [r["ops_per_s"] / 1e6 for r in mine],
            color=s["color"],
            marker=s["marker"],
            markersize=s["markersize"],
            linestyle=s["linestyle"],
            linewidth=s.get("linewidth", common.LINE),
            zorder=s.get("zorder", 2),
        )
        tput += [r["ops_per_s"] / 1e6 for r in mine]
        points[lk] = len(mine)
    common.set_thread_axis(ax_t, threads)
    common.set_value_axis(ax_t, tput, "throughput (Mops/s)")
    ax_t.set_title("throughput (higher is better)")

    # Stacked bars: for each elided lock, one bar per thread count; the
    # outcome of each operation, then the aborts on the way (an operation
    # may abort several times before it commits or falls back).
    def bars(ax, parts_of):
        x, ticks, top = 0.0, [], 0.0
        for lk in elided:
            start = x
            for n in threads:
                r = next(
                    (r for r in recs if r["lock"] == lk and r["threads"] == n and ok(r)), None
                )
                if r is not None and isinstance(r.get("aborts"), dict):
                    bottom = 0.0
                    for v, col in parts_of(r):
                        if v > 0:
                            ax.bar(
                                x,
                                v,
                                0.8,
                                bottom=bottom,
                                color=col,
                                edgecolor="white",
                                linewidth=0.3,
                            )
                            bottom += v
                    top = max(top, bottom)
                    ax.text(
                        x, bottom, str(n), ha="center", va="bottom", fontsize=5.5, color="#444444"
                    )
                x += 1
            ticks.append((start + x - 1) / 2)
            x += 0.8
        ax.set_xticks(ticks)
        ax.set_xticklabels(elided, rotation=20, ha="right", fontsize=7)
        ax.grid(axis="x", visible=False)
        ax.set_ylim(0, top * 1.15 if top > 0 else 1)
        return top

    done = bars(ax_o, lambda r: [(r.get(k) or 0.0, col) for _, k, col in outcomes])
    aborted = bars(
        ax_a,
        lambda r: [
            ((r["aborts"] or {}).get(c) or 0.0, CAUSE_COLOURS.get(c, "#333333")) for c in causes
        ],
    )
    ax_o.set_ylabel("share of operations")
    ax_o.set_title("how each operation ended (threads on bars)")
    ax_a.set_ylabel("aborts per operation")
    ax_a.set_title("aborts by cause")
    rtm = data.get("rtm") or {}
    for ax, total, what in ((ax_o, done, "no elided lock ran"), (ax_a, aborted, "no aborts")):
        if total <= 0:
            why = "no elided lock in this run" if not elided else what
            if rtm and not rtm.get("usable"):
                why = (
                    "no transaction ran:\n"
                    + (rtm.get("why") or "RTM not usable")
                    + ";\nelide(x) ran as x"
                )
            for t in list(ax.texts):
                t.remove()
            ax.text(
                0.5,
                0.5,
                why,
                transform=ax.transAxes,
                ha="center",
                va="center",
                fontsize=7.5,
                color="#444444",
            )
            ax.set_yticks([])
    total = done + aborted
    handles = common.series_handles(styles, locks)
    handles += [common.Patch(color=col) for _, _, col in outcomes]
    handles += [common.Patch(color=CAUSE_COLOURS.get(c, "#333333")) for c in causes]
    title = f"elide: memcached-like cache, {mix}% gets, statistics counter {stats}"
    sub = common.machine_line(data)
    if rtm:
        sub += f"; RTM {rtm.get('state') or ('usable' if rtm.get('usable') else 'not usable')}"
    fig.suptitle(title + (f"\n{sub}" if sub else ""), fontsize=9.5)
    common.legend_below(fig, handles, labels, ncol)
    drawn.save(
        fig,
        f"elide_get{mix}_stats-{stats}",
        "elide",
        source,
        {"mix_get": mix, "stats": stats},
        [
            {"name": "throughput", "series": locks},
            {"name": "outcomes", "series": elided},
            {"name": "aborts", "series": elided},
        ],
        title,
        {"points": points, "causes": causes, "transactions": total > 0},
    )
