import sys,statistics as st
from collections import defaultdict
d=defaultdict(list)
for f in sys.argv[1:]:
  for l in open(f):
    p=l.split()
    if len(p)==5: d[(p[1],p[0])].append((float(p[2]),float(p[3])))
for k in sorted(d):
    v=d[k]; r=[x[0] for x in v]; fa=[x[1] for x in v]
    print(k, 'Mops med %.1f (%.1f-%.1f)'%(st.median(r),min(r),max(r)), 'fair med %.2f (%.2f-%.2f)'%(st.median(fa),min(fa),max(fa)))
