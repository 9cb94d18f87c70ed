"""common.py - what every figure of `baton plot` shares: the look, one
style per lock (kept across figures, so a lock looks the same everywhere),
axis helpers, and the record of what each figure drew (--report-json).

matplotlib is imported by baton_plot.py (Agg backend) before this module.
"""

import math
import os

import matplotlib.pyplot as plt
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

# The look: a paper's column figures, readable when scaled down.
STYLE = {
    "font.size": 8.5,
    "axes.titlesize": 9,
    "axes.labelsize": 8.5,
    "legend.fontsize": 7.5,
    "xtick.labelsize": 7.5,
    "ytick.labelsize": 7.5,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#dddddd",
    "grid.linewidth": 0.6,
    "axes.axisbelow": True,
    "lines.linewidth": 1.1,
    "lines.markersize": 3.8,
    "savefig.dpi": 150,
    "figure.dpi": 150,
    "svg.fonttype": "none",
}

# Ten colours that stay apart (matplotlib's tab10), and markers and dashes
# that change at other periods, so that 30 locks still get 30 styles.
COLOURS = [
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
]
MARKERS = ["o", "s", "^", "D", "v", "P", "X"]

LINE = 1.1  # every series but the default's

# A range wider than this (max / min) is drawn on a log axis.
LOG_RANGE = 20.0


def apply_style():
    plt.rcParams.update(STYLE)


class Styles:
    """One colour, marker and dash per series name, in order of first use.
    Peers (peer:...) are dashed, baton's own kinds solid; the default kind
    is drawn thicker, as it is the one every figure is about."""

    def __init__(self):
        self.known = {}

    def get(self, name):
        if name not in self.known:
            i = len(self.known)
            self.known[name] = {
                "color": COLOURS[i % len(COLOURS)],
                "marker": MARKERS[i % len(MARKERS)],
                # Earlier series get bigger markers: where two coincide,
                # the one drawn over the other leaves a ring of it showing.
                "markersize": 5.6 - 0.3 * (i % 7),
            }
        s = dict(self.known[name])
        s["linestyle"] = "--" if is_peer(name) else "-"
        if is_default(name):
            s["linewidth"] = 2.6
            s["zorder"] = 5
        return s


def is_peer(name):
    return name.startswith("peer:") or name == "pthread"


# Drawn thicker: the default lock kind and the default barrier.
DEFAULT_NAMES = ("default", "runner", "twolevel")


def is_default(name):
    base = name.split(":")[0].split(",")[0]
    return base in DEFAULT_NAMES


def kind_sort_key(name):
    """baton's kinds first (the default first of all), then pthread and the
    peers, each group in name order."""
    return (0 if is_default(name) else 1 if not is_peer(name) else 2, name)


def wide(values):
    v = [x for x in values if x is not None and x > 0]
    return bool(v) and max(v) / min(v) > LOG_RANGE


def set_thread_axis(ax, threads, label="threads"):
    """Thread counts on a base-2 log axis, ticked at the counts measured."""
    ts = sorted({t for t in threads if t})
    if len(ts) > 1 and ts[-1] / ts[0] >= 4:
        ax.set_xscale("log", base=2)
    ax.set_xticks(ts)
    ax.set_xticklabels([str(t) for t in ts])
    ax.minorticks_off() if ax.get_xscale() == "log" else None
    ax.set_xlabel(label)
    if ts:
        lo, hi = ts[0], ts[-1]
        if ax.get_xscale() == "log":
            ax.set_xlim(lo / 1.25, hi * 1.25)
        elif hi > lo:
            pad = (hi - lo) * 0.05
            ax.set_xlim(lo - pad, hi + pad)


def mark_oversubscribed(ax, cpus, threads, label=False):
    """Shade the thread counts above the CPUs: there every FIFO handoff
    may go to a thread that must first get a CPU."""
    above = sorted(t for t in threads if t > cpus) if cpus else []
    if not above:
        return
    # From between the CPU count (or the last count under it) and the
    # first count above it, so that no measured point sits on the edge.
    below = max([t for t in threads if t <= cpus] or [cpus])
    log = ax.get_xscale() == "log"
    start = (below * above[0]) ** 0.5 if log else (below + above[0]) / 2
    ax.axvspan(start, ax.get_xlim()[1], color="#f3f3f3", zorder=0, linewidth=0)
    if label:
        ax.text(
            start,
            1.0,
            f" more threads than CPUs ({cpus})",
            transform=ax.get_xaxis_transform(),
            fontsize=6.5,
            color="#777777",
            ha="left",
            va="top",
        )


def set_value_axis(ax, values, label, zero=True):
    """Log scale where the range is wide, else linear from zero."""
    if wide(values):
        ax.set_yscale("log")
    elif zero:
        ax.set_ylim(bottom=0)
        top = max([v for v in values if v is not None] or [1])
        ax.set_ylim(top=top * 1.08 if top > 0 else 1)
    ax.set_ylabel(label)


def legend_columns(labels, width_in):
    """How many legend columns fit across width_in inches."""
    longest = max(len(lab) for lab in labels) if labels else 1
    per_col_in = 0.55 + 0.058 * longest
    return max(1, min(len(labels), int(width_in / per_col_in)))


def new_figure(npanels, nlegend, labels, panel_w=3.3, panel_h=2.7, title_lines=2):
    """A figure of npanels side by side, tall enough for the panels, the
    title and a legend of nlegend entries under them (constrained layout
    keeps the legend off the data).  Returns (fig, axes, ncol)."""
    width = panel_w * npanels
    ncol = legend_columns(labels, width)
    rows = math.ceil(nlegend / ncol) if nlegend else 0
    height = panel_h + 0.18 * title_lines + 0.17 * rows + 0.15
    fig, axes = plt.subplots(
        1, npanels, figsize=(width, height), layout="constrained", squeeze=False
    )
    return fig, list(axes[0]), ncol


def legend_below(fig, handles, labels, ncol):
    """The legend under the panels, never on the data."""
    if handles:
        fig.legend(
            handles,
            labels,
            loc="outside lower center",
            ncol=ncol,
            frameon=False,
            handlelength=2.6,
            columnspacing=1.2,
        )


def series_handles(styles, names):
    hs = []
    for n in names:
        s = styles.get(n)
        hs.append(
            Line2D(
                [],
                [],
                color=s["color"],
                marker=s["marker"],
                markersize=s["markersize"],
                linestyle=s["linestyle"],
                linewidth=s.get("linewidth", LINE),
            )
        )
    return hs


def fmt_params(params):
    return ", ".join(f"{k}={v}" for k, v in params)


def slug(text):
    out = []
    for ch in text:
        out.append(ch if ch.isalnum() or ch in "-_." else "_")
    s = "".join(out)
    while "__" in s:
        s = s.replace("__", "_")
    return s.strip("_")


def machine_line(data):
    m = data.get("machine") or {}
    parts = []
    if m.get("cpu_model"):
        parts.append(m["cpu_model"])
    if m.get("cpus"):
        parts.append(f"{m['cpus']} CPUs")
    if m.get("numa_nodes"):
        parts.append(f"{m['numa_nodes']} NUMA node{'s' if m['numa_nodes'] != 1 else ''}")
    if m.get("date"):
        parts.append(m["date"][:10])
    return ", ".join(parts)


class Drawn:
    """What the figures of one run drew: file, bench, the parameters that
    select the figure's records, and per panel the series (one per lock,
    barrier or policy).  Written by --report-json, read by the tests."""

    def __init__(self, outdir, fmt):
        self.outdir = outdir
        self.fmt = fmt
        self.figures = []
        self.notes = []

    def save(self, fig, name, bench, source, where, panels, title, extra=None):
        path = os.path.join(self.outdir, f"{slug(name)}.{self.fmt}")
        if any(f["file"] == path for f in self.figures):
            # Two files with the same cells: the second is named after its file too.
            stem = os.path.splitext(os.path.basename(source))[0]
            path = os.path.join(self.outdir, f"{slug(name)}_{slug(stem)}.{self.fmt}")
        fig.savefig(path, facecolor="white")
        plt.close(fig)
        entry = {
            "file": path,
            "bench": bench,
            "source": source,
            "title": title,
            "where": where,
            "panels": panels,
        }
        entry["series"] = sorted({s for p in panels for s in p["series"]})
        if extra:
            entry.update(extra)
        self.figures.append(entry)
        return path

    def note(self, text):
        self.notes.append(text)
