import sys,re,statistics as st
rounds=[];cur=None
for f in sys.argv[1:]:
    for line in open(f):
        if line.startswith('pq'):
            m=re.match(r'pq L=(\d+).* (\d+) threads',line); cur={'th':int(m.group(2))}; rounds.append(cur); continue
        p=line.split()
        if len(p)>5 and cur is not None: cur[p[1]]=(float(p[2]),float(p[4]))
for th in sorted(set(r['th'] for r in rounds)):
    rs=[r for r in rounds if r['th']==th]
    for k in ['qd:spinpark','qd:yield']:
        rr=[r[k][0]/r['peer:qdlib_qd'][0] for r in rs if k in r]
        fd=[r[k][1]-r['peer:qdlib_qd'][1] for r in rs if k in r]
        print(th,k,'rate ratio med %.2f (%.2f-%.2f)'%(st.median(rr),min(rr),max(rr)),'fair diff med %+.2f (%+.2f..%+.2f)'%(st.median(fd),min(fd),max(fd)), 'fair<theirs in %d/%d'%(sum(1 for x in fd if x<0),len(fd)))
