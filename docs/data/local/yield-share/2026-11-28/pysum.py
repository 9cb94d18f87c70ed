import sys,statistics as st,collections
t=collections.defaultdict(dict)
for line in open(sys.argv[1]):
    r,h,p,c,rc,ms=line.split()
    if rc!='0': print('FAILED',line.strip())
    t[(p,h,r)][c]=int(ms)
for cfg in ('base','new'):
  for key in sorted(set((p,h) for p,h,r in t)):
    rs=sorted(v['stock']/v[cfg] for (p,h,r),v in t.items() if (p,h)==key and cfg in v and 'stock' in v)
    print('%s hog=%s %s: stock/kind median %.2f range %.2f-%.2f n=%d below1=%d' % (key[0],key[1],cfg,st.median(rs),rs[0],rs[-1],len(rs),sum(x<1 for x in rs)))
