import json,sys
for fn in sys.argv[1:]:
  d=json.load(open(fn))
  rs=d.get('results') or d.get('records') or []
  for r in rs:
    ops=r.get('ops',0) or 1
    print(f"{r['lock']:28s} t={r['threads']:3d} L={r.get('local_work','-')} {r['ops_per_s']/1e6:7.2f} Mops/s fair={r.get('fairness',0):.2f} vcsw/kop={r.get('vcsw',0)/ops*1e3:8.3f} ivcsw/kop={r.get('ivcsw',0)/ops*1e3:8.3f}")
