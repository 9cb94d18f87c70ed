import json,glob,sys,statistics as st,collections,os
out=sys.argv[1]
d=collections.defaultdict(dict)
for f in glob.glob(out+'/*.json'):
  b=os.path.basename(f)[:-5]; v,l,t,r=b.split('_',1)[0],*b.split('_',1)[1].rsplit('_',2)
  for x in json.load(open(f))['results']:
    d[(x['lock'],x['threads'],x.get('local_work',0))][(v,r)]=(x['ops_per_s']/1e6,x['fairness'],x.get('vcsw',0)/max(1,x['ops'])*1e3)
for k in sorted(d):
  e=d[k]; rs=sorted(set(r for v,r in e))
  pr=[(e[('base',r)],e[('new',r)]) for r in rs if ('base',r) in e and ('new',r) in e]
  rat=[n[0]/b[0] for b,n in pr]
  med=lambda i,j: st.median([p[j][i] for p in pr])
  print(f"{k[0]:18s} t={k[1]:2d} L={k[2]} n={len(pr)} base {med(0,0):6.2f} f{med(1,0):.2f} v{med(2,0):6.2f} | new {med(0,1):6.2f} f{med(1,1):.2f} v{med(2,1):6.2f} | ratio {st.median(rat):.2f} ({min(rat):.2f}-{max(rat):.2f})")
