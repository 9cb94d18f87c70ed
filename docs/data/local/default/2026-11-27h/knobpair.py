import json,glob,sys,os,collections,statistics as st
d={}
for f in glob.glob(sys.argv[1]+'/*.json'):
  v,L,r=os.path.basename(f)[:-5].split('_')
  rs={x['lock'].split(':')[0]:x for x in json.load(open(f))['results']}
  d[(int(L),v,int(r))]=(rs['runner']['ops_per_s']/1e6, rs['peer']['ops_per_s']/1e6, rs['runner']['fairness'])
vals=sorted(set(k[1] for k in d)); base=vals[0]
for L in sorted(set(k[0] for k in d)):
  for v in vals[1:]:
    rs=sorted(set(k[2] for k in d if k[0]==L))
    p=[d[(L,v,r)][0]/d[(L,base,r)][0] for r in rs if (L,v,r) in d and (L,base,r) in d]
    t=[d[(L,v,r)][1]/d[(L,base,r)][1] for r in rs if (L,v,r) in d and (L,base,r) in d]
    print(f"L={L:4d} {v}/{base}: default {st.median(p):.2f} ({min(p):.2f}-{max(p):.2f})  tbb same runs {st.median(t):.2f}  fair {st.median([d[(L,v,r)][2] for r in rs]):.2f}/{st.median([d[(L,base,r)][2] for r in rs]):.2f}")
