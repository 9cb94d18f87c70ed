#!/usr/bin/env python3
"""ab.py REPS CELLS...: A/B the old (/tmp/wt-head) and new (/work/main) builds
cell = threads:S:L:lockcount:hog ; locks default,ttas,peer:ck_fas,peer:tbb_spin"""
import json, subprocess, sys, statistics, collections, random
reps=int(sys.argv[1]); cells=sys.argv[2:]
B={'delta':'/tmp/wt-l1/build/src/cli/baton','const':'/work/main/build/src/cli/baton'}
locks='default,ttas,peer:ck_fas,peer:tbb_spin'
res=collections.defaultdict(list)
for r in range(reps):
    for c in cells:
        t,S,L,n,h=c.split(':')
        order=list(B); random.shuffle(order)
        for v in order:
            subprocess.run([B[v],'bench','micro','--locks',locks,'--threads',t,'--shared-lines',S,'--local-work',L,'--lock-count',n,'--hog',h,'--duration','0.3','--repeat','1','--json','/tmp/rt/ab.json'],capture_output=True)
            d=json.load(open('/tmp/rt/ab.json'))
            for x in d['results']:
                res[(c,v,x['lock'])].append(x['ops_per_s']/1e6)
for c in cells:
    print(c)
    for v in B:
        row=[]
        for lk in ['runner:spinpark','ttas:backoff','peer:ck_fas','peer:tbb_spin']:
            xs=res[(c,v,lk)]
            row.append('%s %6.1f'%(lk.split(':')[0] if not lk.startswith('peer') else lk[5:],statistics.median(xs)) if xs else lk+' -')
        print('  %s  '%v+'  '.join(row))
    # per-rep paired ratio new/old runner
    o=res[(c,'delta','runner:spinpark')]
    out=[]
    for v in B:
        n=res[(c,v,'runner:spinpark')]
        rr=sorted(b/a for a,b in zip(o,n))
        pn=sorted(a/max(x,y) for a,x,y in zip(n,res[(c,v,'peer:ck_fas')],res[(c,v,'peer:tbb_spin')]))
        out.append('%s: /old %.2f [%.2f..%.2f] /peer %.2f'%(v,statistics.median(rr),rr[0],rr[-1],statistics.median(pn)))
    print('  runner '+' | '.join(out))
