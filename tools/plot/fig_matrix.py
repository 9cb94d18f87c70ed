"""fig_matrix.py - the never-lose matrix (`baton bench matrix --json`): the
ratio default / fastest reference lock of every cell as a heat map, one row
per cell family and parameters, one column per thread count, on a
diverging colour map centred on 1.0 (blue: the default wins; red: it
loses).  The number in each square is the ratio.
"""

import math

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import FuncNorm

# The parameters that name a row, per family, in this order.
ROW_KEYS = {
    "micro": [
        ("shared_lines", "S"),
        ("local_work", "L"),
        ("lock_count", "locks"),
        ("hogs", "hogs"),
    ],
    "pq": [("local_work", "L")],
    "elide": [("mix_get", "get%")],
    "server": [("workload", ""), ("interval_cycles", "I")],
    "rw": [("reads_pct", "reads%"), ("local_work", "L")],
}
FAMILIES = ["micro", "pq", "elide", "server", "rw"]


def row_label(r):
    fam = r.get("bench", "?")
    bits = [fam]
    for k, short in ROW_KEYS.get(fam, []):
        if k in r:
            bits.append(f"{short}={r[k]}" if short else str(r[k]))
    return " ".join(bits)


def row_key(r):
    fam = r.get("bench", "?")
    order = FAMILIES.index(fam) if fam in FAMILIES else len(FAMILIES)
    return (
        order,
        tuple(
            str(r.get(k, "")) if isinstance(r.get(k), str) else (r.get(k) or 0)
            for k, _ in ROW_KEYS.get(fam, [])
        ),
    )


def plot(data, records, source, drawn):
    rows = {}
    for r in records:
        rows.setdefault(row_label(r), (row_key(r), []))[1].append(r)
    labels = sorted(rows, key=lambda lab: rows[lab][0])
    threads = sorted({r["threads"] for r in records})
    nr, nc = len(labels), len(threads)
    grid = [[math.nan] * nc for _ in range(nr)]
    text = [[""] * nc for _ in range(nr)]
    cells = 0
    for i, lab in enumerate(labels):
        for r in rows[lab][1]:
            j = threads.index(r["threads"])
            # A duel's ratio judges its cell where one ran (bench/matrix.c).
            duel = r.get("duel") or {}
            v = duel.get("ratio", r.get("ratio"))
            cells += 1
            if v is None:
                # No reference ran to the end: the default wins outright.
                text[i][j] = "inf" if (r.get("default") or {}).get("status") == "ok" else "-"
                grid[i][j] = math.inf
            else:
                grid[i][j] = v
                text[i][j] = f"{v:.2f}"
    finite = [v for row in grid for v in row if math.isfinite(v) and v > 0]
    lo = min(finite + [0.5])
    hi = max(finite + [2.0])
    # Symmetric in log: 0.5x is as far below 1 as 2x above it, and 1.0 is
    # the map's centre (white).
    span = max(math.log2(hi), -math.log2(max(lo, 1e-3)), 1.0)
    norm = FuncNorm(
        (lambda v: np.log2(np.clip(v, 1e-6, None)), np.exp2), vmin=2**-span, vmax=2**span
    )
    shown = [
        [(2**span if v == math.inf else (v if math.isfinite(v) else math.nan)) for v in row]
        for row in grid
    ]

    fig_h = 1.6 + 0.24 * nr
    fig, ax = plt.subplots(figsize=(2.6 + 0.75 * nc, fig_h), layout="constrained")
    cmap = plt.get_cmap("RdBu").copy()
    cmap.set_bad("#f2f2f2")
    im = ax.imshow(shown, cmap=cmap, norm=norm, aspect="auto", interpolation="nearest")
    for i in range(nr):
        for j in range(nc):
            if not text[i][j]:
                continue
            v = shown[i][j]
            dark = math.isfinite(v) and abs(math.log2(max(v, 1e-9))) > span * 0.55
            weight = "bold" if math.isfinite(grid[i][j]) and grid[i][j] < 0.95 else "normal"
            ax.text(
                j,
                i,
                text[i][j],
                ha="center",
                va="center",
                fontsize=6.5,
                color="white" if dark else "black",
                fontweight=weight,
            )
    ax.set_xticks(range(nc))
    ax.set_xticklabels([str(t) for t in threads])
    ax.set_xlabel("threads")
    ax.set_yticks(range(nr))
    ax.set_yticklabels(labels, fontsize=7)
    ax.grid(False)
    for s in ax.spines.values():
        s.set_visible(False)
    # Lines between the families.
    prev = None
    for i, lab in enumerate(labels):
        fam = lab.split()[0]
        if prev is not None and fam != prev:
            ax.axhline(i - 0.5, color="black", linewidth=0.8)
        prev = fam
    ticks = [2**k for k in range(-int(span), int(span) + 1)]
    cb = fig.colorbar(im, ax=ax, shrink=min(1.0, 6 / max(nr, 1) + 0.3), ticks=ticks, pad=0.02)
    cb.ax.set_yticklabels([f"{t:g}x" for t in ticks])
    cb.set_label("default / fastest reference (>1: default faster)")
    won, near, lost = data.get("won"), data.get("within_5pct"), data.get("lost")
    summary = ""
    if won is not None:
        duels = f", {data['duels']} by a duel" if data.get("duels") else ""
        summary = f"\n{won} cells won, {near} within 5%, {lost} lost{duels} (bold: ratio < 0.95)"
    title = f"matrix: does the default lock ever lose? (plan {data.get('plan', '?')}){summary}"
    m = data.get("machine") or {}
    sub = ", ".join(
        x
        for x in [
            m.get("cpu_model"),
            f"{m.get('cpus')} CPUs" if m.get("cpus") else None,
            (m.get("date") or "")[:10],
        ]
        if x
    )
    ax.set_title(title + (f"\n{sub}" if sub else ""), fontsize=8.5)
    ratios = {
        f"{lab} N={threads[j]}": grid[i][j]
        for i, lab in enumerate(labels)
        for j in range(nc)
        if text[i][j]
    }
    drawn.save(
        fig,
        f"matrix_{data.get('plan', 'cells')}",
        "matrix",
        source,
        {},
        [{"name": "ratio", "series": ["default"]}],
        title,
        {
            "cells": cells,
            "rows": labels,
            "threads": threads,
            "ratios": {
                k: (None if not math.isfinite(v) else round(v, 4)) for k, v in ratios.items()
            },
            "norm_center": round(float(norm.inverse(0.5)), 6),
        },
    )
