import json,glob,sys,os,collections,statistics as st
d=collections.defaultdict(list)
for f in glob.glob(sys.argv[1]+'/*.json'):
  v,L,r=os.path.basename(f)[:-5].split('_')
  rs={x['lock'].split(':')[0]:x for x in json.load(open(f))['results']}
  a=rs['runner']; b=rs['peer']
  d[(int(L),v)].append((a['ops_per_s']/1e6,b['ops_per_s']/1e6,a['ops_per_s']/b['ops_per_s'],a['fairness']))
for k in sorted(d):
  x=d[k]; rat=[y[2] for y in x]
  print(f"L={k[0]:4d} {k[1]:>3s} n={len(x)} default {st.median([y[0] for y in x]):6.2f} tbb {st.median([y[1] for y in x]):6.2f} ratio {st.median(rat):.2f} ({min(rat):.2f}-{max(rat):.2f}) fair {st.median([y[3] for y in x]):.2f}")
