import os, threading, multiprocessing as mp, time, sys
lk = threading.Lock(); stop = False; n = [0]
def spin():
    while not stop:
        with lk: n[0] += 1
ts = [threading.Thread(target=spin) for _ in range(3)]
for t in ts: t.start()
kids = []
for i in range(20):
    pid = os.fork()
    if pid == 0:
        # the child: the lock may have been held by another thread at fork (CPython reinits it)
        with lk: pass
        c = threading.Condition()
        def w():
            with c: c.wait(0.01)
        x = threading.Thread(target=w); x.start(); x.join()
        os._exit(0)
    kids.append(pid)
for p in kids:
    _, st = os.waitpid(p, 0)
    assert st == 0, st
stop = True
for t in ts: t.join()
def sq(x): return x * x
ctx = mp.get_context('fork')
with ctx.Pool(3) as p:
    assert sum(p.map(sq, range(1000))) == sum(x*x for x in range(1000))
print("pyfork ok", n[0] > 0)
