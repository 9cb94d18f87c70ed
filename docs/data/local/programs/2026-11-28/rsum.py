import sys, collections, statistics as st
for f in sys.argv[1:]:
    d = collections.defaultdict(dict)
    bad = []
    for line in open(f):
        r, h, p, k, rc, ms = line.split()
        if rc != '0': bad.append(line.strip())
        d[(p, int(r))][k] = int(ms)
    progs = sorted({p for p, _ in d})
    kinds = sorted({k for v in d.values() for k in v if k != 'stock'})
    print(f, 'failures:', bad or 'none')
    for p in progs:
        rs = [r for (q, r) in d if q == p]
        out = [p.ljust(8), 'stock %6d ms' % st.median(d[(p, r)]['stock'] for r in rs)]
        for k in kinds:
            rat = [d[(p, r)]['stock'] / d[(p, r)][k] for r in rs if k in d[(p, r)]]
            out.append('%s %6d ms  speed x%.2f (%.2f-%.2f)' % (k, st.median(d[(p, r)][k] for r in rs), st.median(rat), min(rat), max(rat)))
        print('  '.join(out))
