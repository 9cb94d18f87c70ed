import json,sys,statistics as st
from collections import defaultdict
new=json.load(open(sys.argv[1])); old=json.load(open(sys.argv[2])) if len(sys.argv)>2 else None
def summary(d,label):
    r=d['results']; won=sum(1 for x in r if x['ratio']>=1); w5=sum(1 for x in r if 0.95<=x['ratio']<1); lost=sum(1 for x in r if x['ratio']<0.95)
    print(label, 'cells',len(r),'won',won,'within5',w5,'lost',lost)
    micro=[x for x in r if x['bench']=='micro']
    print(' micro: lost',sum(1 for x in micro if x['ratio']<0.95),'of',len(micro))
    ov=[x for x in r if x['threads']>2 and x['bench']=='micro']
    cpu_ok=sum(1 for x in ov if x['default']['cpu_s_per_mop']<=x['fastest_reference']['cpu_s_per_mop']); cpu_bad=sum(1 for x in ov if x['default']['cpu_s_per_mop']>1.05*x['fastest_reference']['cpu_s_per_mop'])
    print(' oversubscribed micro cells',len(ov),'cpu no higher',cpu_ok,'higher by >5%',cpu_bad)
    f=[x for x in r if x['threads']>=2 and not x['cell'].startswith('server imbalanced')]
    fb=[x for x in f if x['default']['fairness']<0.5]
    byt=defaultdict(int)
    for x in fb: byt[x['threads']]+=1
    print(' fairness<0.5:',len(fb),'of',len(f),dict(sorted(byt.items())),' ref<0.5:',sum(1 for x in f if x['fastest_reference']['fairness']<0.5))
    byclass=defaultdict(list)
    for x in micro: byclass[(x['lock_count'],x['local_work'])].append(x['ratio'])
    for k in sorted(byclass): v=byclass[k]; print('  locks=%d L=%d: median ratio %.2f, min %.2f, lost %d/%d'%(k[0],k[1],st.median(v),min(v),sum(1 for y in v if y<0.95),len(v)))
    return {x['cell']:x for x in r}
a=summary(new,'new')
if old:
    b=summary(old,'old')
    both=[c for c in a if c in b]
    lost_both=[c for c in both if a[c]['ratio']<0.95 and b[c]['ratio']<0.95]
    print('lost in both:',len(lost_both))
