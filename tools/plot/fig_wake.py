"""fig_wake.py - wake: what a wait costs each policy (CPU burnt while
waiting plus the wake-up latency) against how long the wait lasts, with
the best pure strategy's cost, min(spin, park), and the 2-competitive
bound (twice it) that spinpark must stay under; one figure with and one
without every CPU busy.
"""

import common

TARGETS = {"spinpark": 2.0, "monitor": 1.2}


def ok(r):
    return r.get("status") == "ok" and r.get("cost_us") is not None


def plot(data, records, source, drawn, styles):
    modes = {}
    for r in records:
        modes.setdefault(bool(r.get("oversubscribed")), []).append(r)
    for over in sorted(modes):
        plot_mode(data, modes[over], over, source, drawn, styles)


def plot_mode(data, recs, over, source, drawn, styles):
    pols = []
    for r in recs:
        if r["policy"] not in pols:
            pols.append(r["policy"])
    labels = pols + ["min(spin, park)", "2-competitive bound: 2 x min(spin, park)"]
    fig, (ax, ax_r), ncol = common.new_figure(2, len(labels), labels, panel_w=4.2)
    points = {}
    for p in pols:
        mine = sorted((r for r in recs if r["policy"] == p and ok(r)), key=lambda r: r["delay_ns"])
        s = styles.get("wait:" + p)
        kw = dict(
            color=s["color"],
            marker=s["marker"],
            markersize=s["markersize"],
            linestyle="-",
            linewidth=common.LINE + 0.3,
        )
        xs = [r["delay_ns"] / 1e3 for r in mine]
        ax.plot(xs, [r["cost_us"] for r in mine], **kw)
        rat = [
            (r["delay_ns"] / 1e3, r["cost_us"] / r["bound_us"]) for r in mine if r.get("bound_us")
        ]
        ax_r.plot([x for x, _ in rat], [y for _, y in rat], **kw)
        points[p] = len(mine)
    bound = {}
    for r in recs:
        if r.get("bound_us"):
            bound[r["delay_ns"] / 1e3] = r["bound_us"]
    xs = sorted(bound)
    if xs:
        b = [bound[x] for x in xs]
        ax.plot(xs, b, color="black", linewidth=1.6, zorder=6)
        ax.plot(xs, [2 * v for v in b], color="black", linewidth=1.2, linestyle="--", zorder=6)
        ax.fill_between(
            xs, b, [2 * v for v in b], color="#bbbbbb", alpha=0.35, zorder=0, linewidth=0
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("delay before the wake-up (µs)")
    ax.set_ylabel("cost per wait (µs): CPU burnt + latency")
    ax.set_title("cost of one wait (lower is better)")
    ax_r.set_xscale("log")
    ax_r.axhline(1.0, color="black", linewidth=1.6, zorder=1)
    ax_r.axhline(2.0, color="black", linewidth=1.2, linestyle="--", zorder=1)
    ax_r.axhspan(1.0, 2.0, color="#bbbbbb", alpha=0.35, zorder=0, linewidth=0)
    if "monitor" in pols:
        ax_r.axhline(1.2, color="#555555", linewidth=0.9, linestyle=":", zorder=1)
        ax_r.text(
            1.0,
            1.2,
            " monitor target 1.2x",
            transform=ax_r.get_yaxis_transform(),
            fontsize=6.5,
            va="bottom",
            ha="right",
            color="#555555",
        )
    ratios = [ln.get_ydata() for ln in ax_r.get_lines()]
    top = max([max(y) for y in ratios if len(y)] + [2.5])
    if top > 20:
        ax_r.set_yscale("log")
    else:
        ax_r.set_ylim(0, top * 1.08)
    ax_r.set_xlabel("delay before the wake-up (µs)")
    ax_r.set_ylabel("cost / min(spin, park)")
    ax_r.set_title("competitive ratio (spinpark must stay under 2)")
    handles = common.series_handles(styles, ["wait:" + p for p in pols])
    handles += [
        common.Line2D([], [], color="black", linewidth=1.6),
        common.Line2D([], [], color="black", linewidth=1.2, linestyle="--"),
    ]
    title = "wake: a waiter's cost against the delay, " + (
        "oversubscribed (a busy thread on every CPU but the signaller's)"
        if over
        else "not oversubscribed"
    )
    sub = common.machine_line(data)
    fig.suptitle(title + (f"\n{sub}" if sub else ""), fontsize=9.5)
    common.legend_below(fig, handles, labels, ncol)
    drawn.save(
        fig,
        "wake_" + ("oversubscribed" if over else "idle"),
        "wake",
        source,
        {"oversubscribed": over},
        [{"name": "cost", "series": pols}, {"name": "ratio", "series": pols}],
        title,
        {"points": points},
    )
