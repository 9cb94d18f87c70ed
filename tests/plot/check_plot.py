#!/usr/bin/env python3
"""check_plot.py - the test of `baton plot` over one bench's JSON (standard
library, and Pillow where it is: it checks the plotter's output without
trusting matplotlib).

    check_plot.py --baton BATON --deps tools/plot-deps.sh --venv VENV --out DIR FIXTURE.json...
    check_plot.py --self-test          the checks must catch a blank PNG, a
                                       broken one and a missing series

It makes the plotting environment with the project's script when it is
missing (exit 77, skipped, only when that fails), runs `baton plot
FIXTURE... -o DIR --report-json --report`, and then checks:
  - every figure is a PNG (signature, chunk CRCs, IHDR first, a sane size)
    that is not blank: enough pixels off the background, and colours
    (decoded by Pillow where the plotting environment has it, else here);
  - each figure's panels hold one series per lock (barrier, policy) among
    the fixture's records that the figure selects ("where"), and each
    series as many points as those records have results; every record is
    in some figure; the matrix has one square per cell, with its ratio;
  - the report embeds every figure byte for byte as a data URI and loads
    nothing from outside.
"""

import argparse
import base64
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import zlib

SKIP = 77
PNG_SIG = b"\x89PNG\r\n\x1a\n"


class Fail(Exception):
    pass


# --- PNG ---------------------------------------------------------------------------


def png_chunks(data):
    if data[:8] != PNG_SIG:
        raise Fail("not a PNG (bad signature)")
    pos, out = 8, []
    while pos + 8 <= len(data):
        n, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + n]
        if len(body) != n:
            raise Fail("truncated PNG chunk")
        crc = struct.unpack(">I", data[pos + 8 + n : pos + 12 + n])[0]
        if zlib.crc32(kind + body) & 0xFFFFFFFF != crc:
            raise Fail(f"bad CRC in PNG chunk {kind!r}")
        out.append((kind, body))
        pos += 12 + n
        if kind == b"IEND":
            return out
    raise Fail("PNG without IEND")


def png_pixels(data):
    """(width, height, rows of RGB bytes) of an 8-bit RGB or RGBA,
    non-interlaced PNG, as matplotlib's Agg writes them."""
    chunks = png_chunks(data)
    if chunks[0][0] != b"IHDR":
        raise Fail("PNG: IHDR is not the first chunk")
    w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    if depth != 8 or ctype not in (2, 6) or interlace:
        raise Fail(
            f"PNG: unexpected format (depth {depth}, colour type {ctype}, interlace {interlace})"
        )
    bpp = 4 if ctype == 6 else 3
    raw = zlib.decompress(b"".join(b for k, b in chunks if k == b"IDAT"))
    stride = w * bpp
    if len(raw) != h * (stride + 1):
        raise Fail("PNG: image data of the wrong size")
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + ((a + b) >> 1)) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
            elif f != 0:
                raise Fail(f"PNG: unknown filter {f}")
        rows.append(
            bytes(line)
            if bpp == 3
            else bytes(v for x in range(w) for v in line[x * 4 : x * 4 + 3])
        )
        prev = line
    return w, h, rows


def pixels_pillow(path, w, h):
    """Rows of RGB bytes through Pillow, where it is (the plotting
    environment has it): the pure-Python decoder takes seconds a figure."""
    try:
        from PIL import Image
    except ImportError:
        return None
    with Image.open(path) as im:
        if im.size != (w, h):
            raise Fail(f"{path}: Pillow reads {im.size}, IHDR says {w}x{h}")
        data = im.convert("RGB").tobytes()
    return [data[y * w * 3 : (y + 1) * w * 3] for y in range(h)]


def check_png(path, nseries):
    with open(path, "rb") as f:
        data = f.read()
    chunks = png_chunks(data)
    if chunks[0][0] != b"IHDR":
        raise Fail("PNG: IHDR is not the first chunk")
    w, h = struct.unpack(">II", chunks[0][1][:8])
    if w < 300 or h < 200 or w > 6000 or h > 12000:
        raise Fail(f"{path}: odd size {w}x{h}")
    rows = pixels_pillow(path, w, h)
    if rows is None:
        _, _, rows = png_pixels(data)
    bg = rows[0][:3]
    ink, colours = 0, set()
    for row in rows[::2]:
        for x in range(0, w * 3, 6):
            px = row[x : x + 3]
            if px != bg:
                ink += 1
                colours.add((px[0] >> 3, px[1] >> 3, px[2] >> 3))
    frac = ink / ((h + 1) // 2 * ((w + 1) // 2))
    if frac < 0.01:
        raise Fail(f"{path}: blank ({frac:.2%} of the pixels drawn)")
    # Each series has a colour of its own (antialiasing adds more).
    if len(colours) < min(nseries, 10) + 2:
        raise Fail(f"{path}: {len(colours)} colours for {nseries} series")
    return w, h


# --- series ----------------------------------------------------------------------------


def ok_rate(r):
    return r.get("verified", r.get("status") == "ok") and (r.get("ops_per_s") or 0) > 0


def server_kind(lock):
    return lock.split(",")[0].split(":")[0] == "server"


def expected(kind, recs, panel):
    """The series a panel must hold, from the records a figure selects,
    and how many points each (None: not counted)."""
    if kind in ("micro", "pq", "rw"):
        return {r["lock"] for r in recs}, {
            lk: sum(1 for r in recs if r["lock"] == lk and ok_rate(r))
            for lk in {r["lock"] for r in recs}
        }
    if kind == "barrier":
        return {r["barrier"] for r in recs}, None
    if kind == "wake":
        return {r["policy"] for r in recs}, None
    if kind == "server":
        if panel == "messages":
            return {
                r["lock"]
                for r in recs
                if server_kind(r["lock"]) and r.get("messages_per_op") is not None
            }, None
        return {r["lock"] for r in recs}, None
    if kind == "elide":
        if panel in ("outcomes", "aborts"):
            return {r["lock"] for r in recs if isinstance(r.get("aborts"), dict)}, None
        return {r["lock"] for r in recs}, None
    raise Fail(f"no expectation for bench {kind}")


def fixture_kind(data):
    res = data["results"]
    if "plan" in data or all("ratio" in r and "default" in r for r in res[:3]):
        return "matrix"
    return res[0]["bench"]


def check_series(fixtures, report):
    figs = report["figures"]
    if not figs:
        raise Fail("no figure drawn")
    for path, data in fixtures:
        kind = fixture_kind(data)
        mine = [f for f in figs if f["source"] == path]
        if not mine:
            raise Fail(f"{path}: no figure")
        recs = data["results"]
        if kind == "matrix":
            (f,) = mine
            if f["cells"] != len(recs):
                raise Fail(f"matrix: {f['cells']} squares for {len(recs)} cells")
            drawn = sorted(v for v in f["ratios"].values() if v is not None)
            want = sorted(round(r["ratio"], 4) for r in recs if r.get("ratio") is not None)
            if drawn != want:
                raise Fail("matrix: the squares' ratios are not the cells' ratios")
            if f.get("norm_center") != 1.0:
                raise Fail("matrix: the colour map is not centred on 1.0")
            continue
        covered = set()
        for f in mine:
            sel = [
                i for i, r in enumerate(recs) if all(r.get(k) == v for k, v in f["where"].items())
            ]
            if not sel:
                raise Fail(f"{f['file']}: selects no record ({f['where']})")
            covered.update(sel)
            for p in f["panels"]:
                want, points = expected(kind, [recs[i] for i in sel], p["name"])
                got = p["series"]
                if len(got) != len(set(got)):
                    raise Fail(f"{f['file']} {p['name']}: a series drawn twice")
                if set(got) != want:
                    raise Fail(
                        f"{f['file']} panel {p['name']}: series {sorted(got)} != the fixture's "
                        f"{sorted(want)}"
                    )
                if points is not None and f.get("points") != points:
                    raise Fail(f"{f['file']}: points per series {f.get('points')} != {points}")
        if len(covered) != len(recs):
            raise Fail(f"{path}: {len(recs) - len(covered)} record(s) in no figure")


def check_report(html_path, report):
    with open(html_path) as f:
        page = f.read()
    if re.search(r'(src|href)="(https?:|//|file:)', page) or "<script" in page or "<link" in page:
        raise Fail("the report loads something from outside")
    uris = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    blobs = {base64.b64decode(u) for u in uris}
    for fig in report["figures"]:
        with open(fig["file"], "rb") as g:
            if g.read() not in blobs:
                raise Fail(f"the report does not embed {fig['file']}")


# --- running ---------------------------------------------------------------------------


def has_matplotlib(venv):
    py = os.path.join(venv, "bin", "python3")
    return (
        os.path.exists(py)
        and subprocess.run([py, "-c", "import matplotlib"], capture_output=True).returncode == 0
    )


def run(args):
    if not has_matplotlib(args.venv):
        r = subprocess.run([args.deps, args.venv])
        if r.returncode != 0 or not has_matplotlib(args.venv):
            print(
                f"check_plot: skipped: the plotting environment cannot be made ({args.deps} "
                f"{args.venv} failed)",
                file=sys.stderr,
            )
            return SKIP
    venv_python = os.path.join(args.venv, "bin", "python3")
    if os.environ.get("CHECK_PLOT_IN_VENV") != "1":
        # Again under the environment's Python, for Pillow's PNG decoder.
        os.environ["CHECK_PLOT_IN_VENV"] = "1"
        os.execv(venv_python, [venv_python, os.path.abspath(__file__), *sys.argv[1:]])
    os.makedirs(args.out, exist_ok=True)
    rj = os.path.join(args.out, "drawn.json")
    html = os.path.join(args.out, "report.html")
    env = dict(os.environ)
    env.pop("BATON_PYTHON", None)  # the build tree's environment, found by baton itself
    cmd = [
        args.baton,
        "plot",
        *args.fixtures,
        "-o",
        args.out,
        "--report-json",
        rj,
        "--report",
        html,
    ]
    r = subprocess.run(cmd, env=env)
    if r.returncode != 0:
        raise Fail(f"{' '.join(cmd)} exited {r.returncode}")
    with open(rj) as f:
        report = json.load(f)
    fixtures = []
    for p in args.fixtures:
        with open(p) as f:
            fixtures.append((p, json.load(f)))
    check_series(fixtures, report)
    for fig in report["figures"]:
        w, h = check_png(fig["file"], len(fig["series"]))
        print(f"ok {fig['file']} {w}x{h}, {len(fig['series'])} series")
    check_report(html, report)
    print(f"ok {len(report['figures'])} figure(s), report {html}")
    return 0


def self_test():
    """The checks above must be able to fail."""
    caught = 0
    with tempfile.TemporaryDirectory(prefix="pl-self-") as d:

        def png(path, w, h, pixel):
            raw = b"".join(b"\0" + pixel(y) * w for y in range(h))

            def chunk(k, b):
                return (
                    struct.pack(">I", len(b))
                    + k
                    + b
                    + struct.pack(">I", zlib.crc32(k + b) & 0xFFFFFFFF)
                )

            with open(path, "wb") as f:
                f.write(
                    PNG_SIG
                    + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                    + chunk(b"IDAT", zlib.compress(raw))
                    + chunk(b"IEND", b"")
                )

        blank = os.path.join(d, "blank.png")
        png(blank, 400, 300, lambda y: b"\xff\xff\xff")
        striped = os.path.join(d, "striped.png")
        png(striped, 400, 300, lambda y: bytes([(y * 37) & 255, (y * 11) & 255, 90]))
        check_png(striped, 3)  # must pass: drawn, many colours
        for path, what in ((blank, "blank PNG"),):
            try:
                check_png(path, 3)
            except Fail as e:
                print(f"caught {what}: {e}")
                caught += 1
        with open(striped, "rb") as f:
            data = f.read()
        broken = os.path.join(d, "broken.png")
        with open(broken, "wb") as f:
            f.write(data[: len(data) // 2])
        try:
            check_png(broken, 3)
        except Fail as e:
            print(f"caught truncated PNG: {e}")
            caught += 1
        recs = [
            {
                "bench": "micro",
                "lock": lk,
                "threads": 2,
                "shared_lines": 1,
                "ops_per_s": 1e6,
                "status": "ok",
                "verified": True,
            }
            for lk in ("mcs", "pthread")
        ]
        fx = [("f.json", {"results": recs})]
        good = {
            "figures": [
                {
                    "file": striped,
                    "source": "f.json",
                    "where": {"shared_lines": 1},
                    "points": {"mcs": 1, "pthread": 1},
                    "panels": [{"name": "throughput", "series": ["mcs", "pthread"]}],
                }
            ]
        }
        check_series(fx, good)  # must pass
        bad = json.loads(json.dumps(good))
        bad["figures"][0]["panels"][0]["series"] = ["mcs"]
        try:
            check_series(fx, bad)
        except Fail as e:
            print(f"caught a missing series: {e}")
            caught += 1
    if caught != 3:
        print(f"check_plot --self-test: caught {caught} of 3 faults", file=sys.stderr)
        return 1
    return 0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--self-test", action="store_true")
    p.add_argument("--baton")
    p.add_argument("--deps")
    p.add_argument("--venv")
    p.add_argument("--out")
    p.add_argument("fixtures", nargs="*")
    a = p.parse_args()
    try:
        return self_test() if a.self_test else run(a)
    except Fail as e:
        print(f"check_plot: FAIL: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
