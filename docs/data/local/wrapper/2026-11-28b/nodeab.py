import subprocess, statistics, sys, os, time
R = int(sys.argv[1]); cmd = sys.argv[2:]
libs = {"stock": None, "base": os.environ.get("BASE_LIB", "/tmp/s32/base/build/src/preload/libbaton-preload.so"),
        "new": os.environ.get("NEW_LIB", "/work/main/build/src/preload/libbaton-preload.so")}
res = {k: [] for k in libs}
for i in range(R):
    ks = list(libs); ks = ks[i % 3:] + ks[:i % 3]
    for k in ks:
        env = dict(os.environ)
        if libs[k]: env["LD_PRELOAD"] = libs[k]
        t0 = time.perf_counter()
        p = subprocess.run(cmd, env=env, capture_output=True)
        t = (time.perf_counter() - t0) * 1000
        if p.returncode != 0: print("FAIL", k, p.stderr[-300:]); sys.exit(1)
        res[k].append(t)
for k, v in res.items():
    print(f"{k:6s} median {statistics.median(v):7.1f} ms  min {min(v):7.1f}  max {max(v):7.1f}")
for a in ("base", "new"):
    r = [s / x for s, x in zip(res["stock"], res[a])]
    q = statistics.quantiles(r)
    print(f"stock/{a} per round: median {statistics.median(r):.3f} (q1 {q[0]:.3f} q3 {q[2]:.3f}, min {min(r):.3f} max {max(r):.3f})")
r = [b / n for b, n in zip(res["base"], res["new"])]
print(f"base/new per round: median {statistics.median(r):.3f}")
