"""fig_server.py - server: messages per critical section against the
clients, with the pLock paper's best and worst cases (Tang et al., ASPLOS
2019, Equations 1-7, per section: basic 3; chain between (2N+1)/N and 3;
hier between 3 + 3T/(NS) and 6; hier+chain between ((2N+1)S + 2T + 1)/(NS)
and 6), beside throughput and the latency of a section.  One figure per
workload and interval.
"""

import common


def design(lock):
    """basic, chain, hier, hier+chain, or None (not a server kind), from a
    spec's kind and switches; with leases (keep_us > 0) the paper has no
    formula, and the design is named with +keep."""
    kind, _, rest = lock.partition(",")
    if kind.split(":")[0] != "server":
        return None
    opts = {}
    for item in rest.split(",") if rest else []:
        k, _, v = item.partition("=")
        opts[k] = v if v else "1"
    on = lambda k: opts.get(k, "0") not in ("0", "")  # noqa: E731
    d = ("hier+" if on("hier") else "") + ("chain" if on("chain") else "")
    d = d.rstrip("+") or "basic"
    try:
        keep = float(opts.get("keep_us", "0")) > 0
    except ValueError:
        keep = False
    return d + "+keep" if keep else d


def ok(r):
    return r.get("status") == "ok" and (r.get("ops_per_s") or 0) > 0


def plot(data, records, source, drawn, styles):
    groups = {}
    for r in records:
        groups.setdefault((r.get("workload", "counter"), r.get("interval_ns", 0)), []).append(r)
    for key in sorted(groups):
        plot_cell(data, groups[key], key, source, drawn, styles)


def bounds(threads, recs, groups):
    """Per N: (chain best, hier+chain best) of Eq. 3 and 7, with S the
    sections per client measured and T the local servers."""
    out = {}
    for n in threads:
        s = [r["ops"] / n for r in recs if r["threads"] == n and r.get("ops")]
        S = max(s) if s else 1e9
        out[n] = (
            (2 * n + 1) / n,
            ((2 * n + 1) * S + 2 * groups + 1) / (n * S),
            (3 * n * S + 3 * groups) / (n * S),
        )
    return out


def plot_cell(data, recs, key, source, drawn, styles):
    workload, interval = key
    locks = sorted({r["lock"] for r in recs}, key=common.kind_sort_key)
    servers = [
        lk
        for lk in locks
        if design(lk)
        and any(r["lock"] == lk and r.get("messages_per_op") is not None for r in recs)
    ]
    threads = sorted({r["threads"] for r in recs})
    labels = locks + [
        "basic (Eq. 1), chain worst (Eq. 2), hier best (Eq. 5)",
        "hier, hier+chain worst (Eq. 4, 6)",
        "chain, hier+chain best (Eq. 3, 7)",
    ]
    fig, (ax_m, ax_t, ax_l), ncol = common.new_figure(3, len(labels), labels)
    points = {}
    tput, lat, msgs = [], [], []
    for lk in locks:
        mine = sorted((r for r in recs if r["lock"] == lk and ok(r)), key=lambda r: r["threads"])
        s = styles.get(lk)
        kw = dict(
            color=s["color"],
            marker=s["marker"],
            markersize=s["markersize"],
            linestyle=s["linestyle"],
            linewidth=s.get("linewidth", common.LINE),
            zorder=s.get("zorder", 3),
        )
        xs = [r["threads"] for r in mine]
        ax_t.plot(xs, [r["ops_per_s"] / 1e6 for r in mine], **kw)
        tput += [r["ops_per_s"] / 1e6 for r in mine]
        lm = [(r["threads"], r["latency_ns"] / 1e3) for r in mine if r.get("latency_ns")]
        ax_l.plot([x for x, _ in lm], [y for _, y in lm], **kw)
        lat += [y for _, y in lm]
        if lk in servers:
            mm = [
                (r["threads"], r["messages_per_op"])
                for r in mine
                if r.get("messages_per_op") is not None
            ]
            ax_m.plot([x for x, _ in mm], [y for _, y in mm], **kw)
            msgs += [y for _, y in mm]
        points[lk] = len(mine)
    groups = (data.get("machine") or {}).get("numa_nodes") or 1
    b = bounds(threads, [r for r in recs if r["lock"] in servers], groups)
    ax_m.axhline(3, color="black", linewidth=1.4, zorder=1)
    ax_m.axhline(6, color="black", linewidth=1.2, linestyle="--", zorder=1)
    ax_m.plot(
        threads, [b[n][0] for n in threads], color="black", linewidth=1.2, linestyle=":", zorder=1
    )
    ax_m.set_ylim(0, max(msgs + [6]) * 1.12)
    ax_m.set_ylabel("messages per critical section")
    ax_m.set_title("messages (the paper's bounds in black)")
    for ax in (ax_m, ax_t, ax_l):
        common.set_thread_axis(ax, threads, "clients (threads)")
    common.set_value_axis(ax_t, tput, "throughput (Mops/s)")
    ax_t.set_title("throughput (higher is better)")
    common.set_value_axis(ax_l, lat, "lock to unlock (µs)")
    ax_l.set_title("latency of a section (lower is better)")
    if not servers:
        ax_m.text(0.5, 0.5, "no server kind in this run", transform=ax_m.transAxes, ha="center")
    handles = common.series_handles(styles, locks)
    handles += [
        common.Line2D([], [], color="black", linewidth=1.4),
        common.Line2D([], [], color="black", linewidth=1.2, linestyle="--"),
        common.Line2D([], [], color="black", linewidth=1.2, linestyle=":"),
    ]
    unit = "ns" if interval else ""
    title = (
        f"server: {workload}, interval {interval:g} {unit} of local work"
        f"{' x client number' if workload == 'imbalanced' else ''} (pLock, Tang et al.)"
    )
    sub = common.machine_line(data)
    fig.suptitle(
        title + (f"\n{sub}; T = {groups} local server{'s' if groups != 1 else ''}" if sub else ""),
        fontsize=9.5,
    )
    common.legend_below(fig, handles, labels, ncol)
    drawn.save(
        fig,
        f"server_{workload}_I{interval}",
        "server",
        source,
        {"workload": workload, "interval_ns": interval},
        [
            {"name": "messages", "series": servers},
            {"name": "throughput", "series": locks},
            {"name": "latency", "series": locks},
        ],
        title,
        {"points": points},
    )
