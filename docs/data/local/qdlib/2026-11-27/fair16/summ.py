import sys,re,statistics as st
from collections import defaultdict
d=defaultdict(list)
for f in sys.argv[1:]:
    th=None
    for line in open(f):
        m=re.match(r'pq L=(\d+).* (\d+) threads',line)
        if m: th=(int(m.group(2)),int(m.group(1))); continue
        p=line.split()
        if len(p)>5 and th: d[(th,p[1])].append((float(p[2]),float(p[4])))
for k in sorted(d):
    v=d[k]; r=[x[0] for x in v]; f=[x[1] for x in v]
    print(k, len(v), "Mops med %.2f (%.1f-%.1f)"%(st.median(r),min(r),max(r)), "fair med %.2f (%.2f-%.2f)"%(st.median(f),min(f),max(f)))
