import json, glob, statistics, collections, sys
D=sys.argv[1] if len(sys.argv)>1 else '/tmp/rt/fb'
res=collections.defaultdict(list)
for f in sorted(glob.glob(D+'/make-*.json')):
    v=f.split('make-')[1].split('.')[0]; r=f.split('.')[-2]
    for x in json.load(open(f))['results']:
        res[(x['lock'].split(':')[0] if not x['lock'].startswith('runner') else 'default(runner)', x['threads'], v)].append((int(r), x['ops_per_s']/1e6, x['fairness']))
print('| lock | threads | before Mops/s (3 rounds) | after | after/before, paired (range) | fairness before / after |')
print('|---|---:|---|---|---|---|')
for lock in ['default(runner)','mcs','qd']:
    for t in [1,2,8]:
        a=sorted(res[(lock,t,'pre')]); b=sorted(res[(lock,t,'now')])
        if not a or not b: continue
        rr=sorted(y[1]/x[1] for x,y in zip(a,b))
        print('| %s | %d | %s | %s | %.2f (%.2f-%.2f) | %.2f / %.2f |'%(lock,t,', '.join('%.1f'%x[1] for x in a),', '.join('%.1f'%x[1] for x in b),statistics.median(rr),rr[0],rr[-1],statistics.median(x[2] for x in a),statistics.median(x[2] for x in b)))
