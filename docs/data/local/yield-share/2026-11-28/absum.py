import json,glob,sys,statistics as st,collections
d=sys.argv[1] if len(sys.argv)>1 else '/tmp/s30/ab'
v=collections.defaultdict(dict)
for f in glob.glob(d+'/m-*.json'):
    _,r,c,kind=f.split('/')[-1][:-5].split('-')
    for x in json.load(open(f))['results']:
        if not x.get('verified'): print('UNVERIFIED',f,x['threads'])
        k=(x['hogs'],x['threads'],x['local_work'],x['lock_count'])
        v[k].setdefault(c,{})[r]=x['ops_per_s']
for k in sorted(v):
    b=v[k].get('base',{}); n=v[k].get('new',{})
    rs=sorted(n[r]/b[r] for r in b if r in n)
    if not rs: continue
    print('hog=%d thr=%2d L=%3d locks=%2d  new/base median %.2f  range %.2f-%.2f  n=%d  base %.1f Mops' % (k+(st.median(rs),rs[0],rs[-1],len(rs),st.median(b.values())/1e6)))
