# summary.py: qd and ccsynch against the QD authors' library, paired by round
import json, glob, statistics, collections, os
D = os.path.dirname(os.path.abspath(__file__))
R = collections.defaultdict(dict)
for f in sorted(glob.glob(D + '/pq.*.json')):
    r = int(f.split('.')[-2])
    for x in json.load(open(f))['results']:
        name = x['lock'] if x['lock'].startswith('peer:') else x['lock'].split(':')[0]
        R[(x['threads'], x['local_work'], name)][r] = (x['ops_per_s'] / 1e6, x['fairness'])
print('| threads | L | qd / their QD, paired (range) | fairness qd / theirs (medians) | ccsynch / their CC-Synch | fairness ccsynch / theirs |')
print('|---:|---:|---|---|---|---|')
for t in [2, 8, 16]:
    for L in [0, 128]:
        cols = []
        for ours, theirs in [('qd', 'peer:qdlib_qd'), ('ccsynch', 'peer:qdlib_ccsynch')]:
            a, b = R[(t, L, ours)], R[(t, L, theirs)]
            rr = sorted(a[k][0] / b[k][0] for k in a if k in b)
            cols.append('%.2f (%.2f-%.2f)' % (statistics.median(rr), rr[0], rr[-1]))
            cols.append('%.2f / %.2f' % (statistics.median(v[1] for v in a.values()), statistics.median(v[1] for v in b.values())))
        print('| %d | %d | %s |' % (t, L, ' | '.join(cols)))
