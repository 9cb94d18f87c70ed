"""report.py - the HTML report of `baton plot --report` (and of `make
bench`): one self-contained page, every image embedded as a data URI, no
script, no external style sheet or font.  Standard library only, so that
the page is written, saying why, when matplotlib is missing.
"""

import base64
import datetime
import html
import json
import os

CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto;
       max-width: 1100px; padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { margin-top: 2em; border-bottom: 1px solid #ccc; }
h3 { margin-top: 1.5em; }
pre { background: #f6f6f6; padding: 0.8em; overflow-x: auto; font-size: 12px; line-height: 1.3; }
figure { margin: 1.2em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: 12px; color: #555; }
.missing { background: #fff4e5; border: 1px solid #f0b36b; padding: 0.8em; }
table { border-collapse: collapse; font-size: 12px; margin: 0.5em 0; }
td, th { border: 1px solid #ddd; padding: 2px 6px; text-align: right; white-space: nowrap; }
th { background: #f0f0f0; } td.t, th.t { text-align: left; }
.meta { color: #666; font-size: 12px; }
details { margin: 0.6em 0; } summary { cursor: pointer; color: #1f4f8f; }
"""

MIME = {".png": "image/png", ".svg": "image/svg+xml"}

# Machine facts shown first, in this order, where present.
MACHINE_KEYS = [
    ("cpu_model", "CPU"),
    ("cpus", "CPUs"),
    ("cores", "cores"),
    ("packages", "packages"),
    ("numa_nodes", "NUMA nodes"),
    ("smt_per_core", "threads per core"),
    ("cacheline", "cache line (bytes)"),
    ("kernel", "kernel"),
    ("compiler", "compiler"),
    ("hostname", "host"),
    ("date", "date"),
    ("elide", "lock elision"),
    ("monitor_hw", "monitor"),
    ("line_rtt_ns", "line round trip (ns)"),
    ("futex_wake_ns", "futex wake (ns)"),
    ("park_cost_ns", "park cost (ns)"),
    ("spin_budget_ns", "spin budget (ns)"),
    ("tsc_ghz", "TSC (GHz)"),
]

# Columns of the per-file record tables: the keys first seen that hold a
# number, a string or a boolean, minus these (arrays and long detail).
SKIP_KEYS = {
    "runs_ops_per_s",
    "message",
    "bench",
    "target_duration_s",
    "duration_s",
    "ops",
    "min_thread_ops",
    "max_thread_ops",
    "cpu_s",
    "edp",
    "edp_ref",
}


def esc(s):
    return html.escape(str(s), quote=True)


def data_uri(path):
    ext = os.path.splitext(path)[1].lower()
    with open(path, "rb") as f:
        b64 = base64.b64encode(f.read()).decode("ascii")
    return f"data:{MIME.get(ext, 'application/octet-stream')};base64,{b64}"


def read_text(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError as e:
        return f"(cannot read {path}: {e})"


def fmt(v):
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        a = abs(v)
        if a == 0:
            return "0"
        if a >= 1e6:
            return f"{v:.4g}"
        if a >= 100:
            return f"{v:.0f}"
        if a >= 1:
            return f"{v:.3g}"
        return f"{v:.3g}"
    return str(v)


def flat(r):
    """A record's scalar members; nested objects one level down as a.b
    (the matrix's default.ops_per_s), abort causes and roles skipped."""
    out = {}
    for k, v in r.items():
        if k in SKIP_KEYS or isinstance(v, list):
            continue
        if isinstance(v, dict):
            if k in ("default", "fastest_reference", "best_also"):
                for kk in ("lock", "ops_per_s"):
                    if kk in v:
                        out[f"{k}.{kk}"] = v[kk]
            continue
        if v is None:
            v = "-"
        out[k] = v
    if "ops_per_s" in out and isinstance(out["ops_per_s"], (int, float)):
        out["Mops/s"] = out.pop("ops_per_s") / 1e6
    for k in ("default.ops_per_s", "fastest_reference.ops_per_s"):
        if k in out and isinstance(out[k], (int, float)):
            out[k.replace("ops_per_s", "Mops/s")] = out.pop(k) / 1e6
    return out


def records_table(recs):
    rows = [flat(r) for r in recs]
    cols = []
    for row in rows:
        for k in row:
            if k not in cols:
                cols.append(k)
    out = ["<table><tr>"]
    for c in cols:
        out.append(f'<th class="t">{esc(c)}</th>')
    out.append("</tr>")
    for row in rows:
        out.append("<tr>")
        for c in cols:
            v = row.get(c, "")
            cls = ' class="t"' if isinstance(v, str) else ""
            out.append(f"<td{cls}>{esc(fmt(v))}</td>")
        out.append("</tr>")
    out.append("</table>")
    return "".join(out)


def machine_table(m):
    rows = []
    for k, label in MACHINE_KEYS:
        if k in m and m[k] not in (None, "", -1):
            rows.append(
                f'<tr><th class="t">{esc(label)}</th><td class="t">{esc(fmt(m[k]))}</td></tr>'
            )
    return "<table>" + "".join(rows) + "</table>" if rows else ""


def write(path, title, inputs, figures, missing, texts, info, machine):
    """inputs: (path, data, kind) of each JSON; figures: the entries of
    common.Drawn; missing: why there are no figures, or None."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{esc(title)}</h1>",
        f'<p class="meta">written {esc(now)} by baton plot</p>',
    ]

    # Contents.
    out.append("<ul>")
    out.append('<li><a href="#machine">the machine</a></li>')
    for i, (p, _, kind) in enumerate(inputs):
        out.append(f'<li><a href="#in{i}">{esc(kind)}: {esc(os.path.basename(p))}</a></li>')
    for i, t in enumerate(texts):
        out.append(f'<li><a href="#text{i}">tables: {esc(os.path.basename(t))}</a></li>')
    out.append("</ul>")

    if missing:
        out.append('<div class="missing"><b>Figures are missing.</b> ' f"{esc(missing)}</div>")

    out.append('<h2 id="machine">The machine</h2>')
    m = None
    if machine and os.path.exists(machine):
        try:
            with open(machine) as f:
                m = json.load(f).get("machine")
        except (OSError, ValueError):
            m = None
    if m is None and inputs:
        m = inputs[0][1].get("machine")
    if m:
        out.append(machine_table(m))
    if info:
        out.append(f"<h3>baton info</h3><pre>{esc(read_text(info))}</pre>")
    if not m and not info:
        out.append("<p>not recorded</p>")

    for i, (p, data, kind) in enumerate(inputs):
        out.append(f'<h2 id="in{i}">{esc(kind)}: {esc(p)}</h2>')
        header = {k: v for k, v in data.items() if k not in ("machine", "results")}
        if header:
            out.append(
                '<p class="meta">'
                + esc(", ".join(f"{k} {json.dumps(v)}" for k, v in header.items()))
                + "</p>"
            )
        mine = [f for f in figures if f["source"] == p]
        if not mine:
            out.append(f"<p>no figures{': see above' if missing else ''}</p>")
        for fig in mine:
            try:
                uri = data_uri(fig["file"])
            except OSError as e:
                out.append(f"<p>cannot read {esc(fig['file'])}: {esc(e)}</p>")
                continue
            out.append(
                f'<figure><img alt="{esc(fig["title"])}" src="{uri}">'
                f"<figcaption>{esc(fig['title'])} ({esc(os.path.basename(fig['file']))})"
                "</figcaption></figure>"
            )
        recs = data.get("results") or []
        out.append(
            f"<details><summary>every record ({len(recs)})</summary>{records_table(recs)}</details>"
        )

    for i, t in enumerate(texts):
        out.append(f'<h2 id="text{i}">Tables: {esc(t)}</h2><pre>{esc(read_text(t))}</pre>')

    out.append("</body></html>")
    tmp = path + ".tmp"
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    with open(tmp, "w") as f:
        f.write("\n".join(out))
    os.replace(tmp, path)
