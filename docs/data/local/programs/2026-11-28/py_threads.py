import threading, queue, concurrent.futures, sys
N = 4; ITEMS = 20000
q = queue.Queue(maxsize=64)
total = [0]; lk = threading.Lock(); cv = threading.Condition(lk)
def prod(k):
    for i in range(ITEMS):
        q.put(k * ITEMS + i)
def cons():
    s = 0
    while True:
        v = q.get()
        if v is None: break
        s += v
    with lk:
        total[0] += s
ps = [threading.Thread(target=prod, args=(k,)) for k in range(N)]
cs = [threading.Thread(target=cons) for _ in range(N)]
for t in ps + cs: t.start()
for t in ps: t.join()
for _ in cs: q.put(None)
for t in cs: t.join()
n = N * ITEMS
assert total[0] == n * (n - 1) // 2, total[0]
# a condition-variable ping-pong
turn = [0]
def pp(me):
    for _ in range(2000):
        with cv:
            while turn[0] % 2 != me:
                cv.wait()
            turn[0] += 1
            cv.notify_all()
a = [threading.Thread(target=pp, args=(m,)) for m in (0, 1)]
for t in a: t.start()
for t in a: t.join()
assert turn[0] == 4000
with concurrent.futures.ThreadPoolExecutor(8) as ex:
    r = sum(ex.map(lambda x: x * x, range(5000)))
assert r == sum(x * x for x in range(5000))
# RLock, Semaphore, Barrier, Event with timeouts
rl = threading.RLock(); sem = threading.Semaphore(3); bar = threading.Barrier(4); ev = threading.Event()
cnt = [0]
def w():
    for _ in range(500):
        with sem:
            with rl:
                with rl:
                    cnt[0] += 1
    bar.wait()
    ev.wait(5)
ts = [threading.Thread(target=w) for _ in range(4)]
for t in ts: t.start()
assert not ev.wait(0.01)
ev.set()
for t in ts: t.join()
assert cnt[0] == 2000
print("py ok")
