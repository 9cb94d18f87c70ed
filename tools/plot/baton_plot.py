#!/usr/bin/env python3
"""baton_plot.py - the figures of `baton plot`, and the HTML report.

    baton plot FILE.json... -o DIR [--report FILE.html] [--text FILE.txt]...
               [--machine machine.json] [--info info.txt] [--report-json FILE]
               [--format png|svg]

Reads the JSON that `baton bench micro|pq|rw|barrier|wake|server|elide|
matrix --json` write and draws, into DIR, one figure per cell of each:
  micro, pq, rw   throughput, fairness and CPU-s/Mop against the threads, one
                  figure per set of workload parameters (S, P, L, lock count,
                  hogs; L, prefill; reads, L);
  barrier         us per episode (and CPU us per episode) against N, per W;
  wake            cost against the delay, with min(spin, park) and the
                  2-competitive bound (twice it);
  server          messages per critical section against the clients, with
                  the pLock paper's best and worst cases, and throughput;
  elide           throughput, and commits and aborts by cause per operation;
  matrix          the default / fastest-reference ratio of every cell as a
                  heat map, centred on 1.0.
--report writes one self-contained HTML page: the machine, the text tables
(--text, --info), and every figure embedded.  --report-json lists what each
figure drew (its file, the records it selects, and per panel the series).

Needs matplotlib (tools/plot-deps.sh installs it into a virtual
environment).  Without it, --report still writes the page, saying that the
figures are missing and why, and the exit status is 3.
"""

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import report  # noqa: E402  (stdlib only: works without matplotlib)

EXIT_NO_MATPLOTLIB = 3


def parse_args(argv):
    p = argparse.ArgumentParser(prog="baton plot", description="figures from baton bench JSON")
    p.add_argument(
        "files", nargs="*", metavar="FILE.json", help="JSON written by baton bench --json"
    )
    p.add_argument("-o", "--output", metavar="DIR", help="where the figures go (created)")
    p.add_argument("--format", choices=("png", "svg"), default="png")
    p.add_argument("--report", metavar="FILE.html", help="write a self-contained HTML report")
    p.add_argument("--title", default="baton benchmark report")
    p.add_argument(
        "--text",
        action="append",
        default=[],
        metavar="FILE.txt",
        help="a bench's text output, shown in the report (repeatable)",
    )
    p.add_argument("--info", metavar="FILE.txt", help="`baton info` output, for the report")
    p.add_argument(
        "--machine", metavar="FILE.json", help="`baton info --json` output, for the report"
    )
    p.add_argument("--report-json", metavar="FILE", help="list what each figure drew, as JSON")
    a = p.parse_args(argv)
    if not a.files and not a.report:
        p.error("no JSON files to plot")
    if a.files and not a.output:
        p.error("-o DIR is required")
    return a


def load(path):
    with open(path) as f:
        return json.load(f)


def kind_of(data):
    """Which bench wrote data: the matrix by its ratio records, the others
    by their records' "bench"."""
    res = data.get("results")
    if not isinstance(res, list) or not res:
        return None
    if "plan" in data or all("ratio" in r and "default" in r for r in res[:3]):
        return "matrix"
    return res[0].get("bench")


def no_matplotlib_reason():
    """Why matplotlib cannot be used here, or None when it can."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot  # noqa: F401
    except Exception as e:  # ImportError, or a broken install
        why = f"matplotlib cannot be imported by {sys.executable} ({type(e).__name__}: {e})"
        venv_why = os.environ.get("BATON_PLOT_VENV")
        if venv_why and os.path.exists(venv_why + ".why"):
            with open(venv_why + ".why") as f:
                why += "; installing it failed: " + f.read().strip()
        install = os.environ.get("BATON_PLOT_INSTALL")
        if install:
            why += f". Install it with: {install}"
        return why
    return None


def draw(args, inputs):
    """Draw every figure; returns common.Drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import common
    import fig_barrier
    import fig_elide
    import fig_matrix
    import fig_server
    import fig_throughput
    import fig_wake

    common.apply_style()
    os.makedirs(args.output, exist_ok=True)
    drawn = common.Drawn(args.output, args.format)
    styles = common.Styles()
    # Every name of every file first, in one order: a lock keeps its style
    # from figure to figure, whichever file it first appears in.
    names = set()
    for _, data, kind in inputs:
        for r in data["results"]:
            if kind == "wake":
                names.add("wait:" + r.get("policy", "?"))
            elif kind == "barrier":
                names.add(r.get("barrier", "?"))
            elif kind != "matrix":
                names.add(r.get("lock", "?"))
    for n in sorted(names, key=common.kind_sort_key):
        styles.get(n)
    for path, data, kind in inputs:
        recs = data["results"]
        if kind in fig_throughput.PARAMS:
            fig_throughput.plot(data, recs, kind, path, drawn, styles)
        elif kind == "barrier":
            fig_barrier.plot(data, recs, path, drawn, styles)
        elif kind == "wake":
            fig_wake.plot(data, recs, path, drawn, styles)
        elif kind == "server":
            fig_server.plot(data, recs, path, drawn, styles)
        elif kind == "elide":
            fig_elide.plot(data, recs, path, drawn, styles)
        elif kind == "matrix":
            fig_matrix.plot(data, recs, path, drawn)
        else:
            drawn.note(f"{path}: no figure for bench '{kind}'")
    return drawn


def main(argv):
    args = parse_args(argv)
    inputs = []
    status = 0
    for path in args.files:
        try:
            data = load(path)
        except (OSError, ValueError) as e:
            print(f"baton plot: {path}: {e}", file=sys.stderr)
            return 2
        kind = kind_of(data)
        if kind is None:
            print(
                f"baton plot: {path}: not the JSON of a baton bench (no results)", file=sys.stderr
            )
            return 2
        inputs.append((path, data, kind))

    why = no_matplotlib_reason() if inputs else None
    drawn = None
    if why:
        print(f"baton plot: {why}", file=sys.stderr)
        status = EXIT_NO_MATPLOTLIB
    elif inputs:
        drawn = draw(args, inputs)
        for n in drawn.notes:
            print(f"baton plot: {n}", file=sys.stderr)
        print(f"baton plot: {len(drawn.figures)} figure(s) in {args.output}")

    if args.report_json and drawn is not None:
        with open(args.report_json, "w") as f:
            json.dump(
                {
                    "plotter": os.path.abspath(__file__),
                    "figures": drawn.figures,
                    "notes": drawn.notes,
                },
                f,
                indent=1,
            )
    if args.report:
        report.write(
            args.report,
            title=args.title,
            inputs=inputs,
            figures=drawn.figures if drawn else [],
            missing=why,
            texts=args.text,
            info=args.info,
            machine=args.machine,
        )
        print(f"baton plot: wrote {args.report}")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
