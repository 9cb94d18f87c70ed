import subprocess, statistics, sys, os
m = sys.argv[1] if len(sys.argv) > 1 else "0"
R = int(sys.argv[2]) if len(sys.argv) > 2 else 20
libs = {"base": os.environ.get("BASE_LIB", "/tmp/s32/base/build/src/preload/libbaton-preload.so"),
        "new": os.environ.get("NEW_LIB", "/work/main/build/src/preload/libbaton-preload.so")}
extra = dict(x.split("=",1) for x in sys.argv[3:])
res = {"stock": [], "base": [], "new": []}
def run(lib):
    env = dict(os.environ); env.update(extra)
    if lib: env["LD_PRELOAD"] = lib
    out = subprocess.run([os.environ.get("RDBENCH", "/tmp/s32/rdbench"), "3000000", m], env=env, capture_output=True, text=True).stdout
    return float(out.split()[1])
for i in range(R):
    order = ["stock", "base", "new"] if i % 2 == 0 else ["stock", "new", "base"]
    for k in order:
        res[k].append(run(libs.get(k)))
rb = [b / s for b, s in zip(res["base"], res["stock"])]
rn = [n / s for n, s in zip(res["new"], res["stock"])]
rnb = [n / b for n, b in zip(res["new"], res["base"])]
for k, v in res.items():
    print(f"{k:6s} median {statistics.median(v):6.2f} min {min(v):6.2f} max {max(v):6.2f}")
print(f"base/stock median {statistics.median(rb):.2f}  new/stock {statistics.median(rn):.2f}  new/base {statistics.median(rnb):.3f} (q1 {statistics.quantiles(rnb)[0]:.3f} q3 {statistics.quantiles(rnb)[2]:.3f})")
