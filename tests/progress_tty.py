#!/usr/bin/env python3
"""progress_tty.py - a long bench prints its progress on stderr when that
is a terminal, and only then.

    progress_tty.py BATON

Runs a small `baton bench micro` (two cells) with stderr on a
pseudo-terminal: the line must say "cell 1 of 2" and "cell 2 of 2", with
the time left; then with stderr on a pipe: no progress at all, and the
same tables on stdout.  And `bench barrier`, whose cells the bench
iterates itself.
"""

import os
import re
import subprocess
import sys


def run_tty(cmd):
    master, slave = os.openpty()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    err = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the child closed its end
            break
        if not chunk:
            break
        err += chunk
    out = p.stdout.read()
    p.wait()
    os.close(master)
    return p.returncode, out.decode(errors="replace"), err.decode(errors="replace")


def main():
    baton = sys.argv[1]
    micro = [
        baton,
        "bench",
        "micro",
        "--locks",
        "tas,pthread",
        "--threads",
        "1,2",
        "--duration",
        "0.4",
        "--repeat",
        "1",
    ]
    rc, out, err = run_tty(micro)
    fails = []
    if rc != 0:
        fails.append(f"micro exited {rc}")
    for want in (
        r"\[cell 1 of 2, ",
        r"\[cell 2 of 2, [^\]]*left\] micro S=1 P=0 L=0 locks=1 hogs=0 N=2",
        r": 1/2 tas",
    ):
        if not re.search(want, err):
            fails.append(f"micro, stderr a terminal: no /{want}/ in {err!r}")
    if "\r" not in err or "\033[K" not in err:
        fails.append("micro: the progress line is not rewritten in place")
    p = subprocess.run(micro, capture_output=True, text=True)
    if "cell" in p.stderr or "\r" in p.stderr:
        fails.append(f"micro, stderr a pipe: progress printed anyway: {p.stderr!r}")
    if p.stdout.count("rank") != out.count("rank") or p.stdout.count("rank") != 2:
        fails.append("micro: the tables differ with and without a terminal")

    barrier = [
        baton,
        "bench",
        "barrier",
        "--barriers",
        "central,twolevel",
        "--threads",
        "2",
        "--work-ns",
        "0,1000",
        "--episodes",
        "200",
        "--time-box",
        "0.05",
    ]
    rc, out, err = run_tty(barrier)
    if not re.search(r"\[cell 2 of 2, [^\]]*\] barrier W=1000 ns N=2", err):
        fails.append(f"barrier, stderr a terminal: no cell 2 of 2 in {err!r}")
    p = subprocess.run(barrier, capture_output=True, text=True)
    if "cell" in p.stderr or "\r" in p.stderr:
        fails.append(f"barrier, stderr a pipe: progress printed anyway: {p.stderr!r}")
    for f in fails:
        print("progress_tty: FAIL:", f, file=sys.stderr)
    if not fails:
        print("progress_tty: ok")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
