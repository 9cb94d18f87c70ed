import threading, time, sys, queue
def work(n):
    s = 0
    for i in range(n): s += i
    return s
def timed(name, f):
    t = time.perf_counter(); f(); print("%-10s %.3f" % (name, time.perf_counter() - t))
def gil(T=4, n=1500000):
    ts = [threading.Thread(target=work, args=(n,)) for _ in range(T)]
    for t in ts: t.start()
    for t in ts: t.join()
def q(T=4, N=20000):
    qq = queue.Queue(64)
    def p():
        for i in range(N): qq.put(i)
    def c():
        for i in range(N): qq.get()
    ts = [threading.Thread(target=p) for _ in range(T)] + [threading.Thread(target=c) for _ in range(T)]
    for t in ts: t.start()
    for t in ts: t.join()
def pp():
    cv = threading.Condition(); turn = [0]
    def f(me):
        for _ in range(3000):
            with cv:
                while turn[0] % 2 != me: cv.wait()
                turn[0] += 1; cv.notify_all()
    ts = [threading.Thread(target=f, args=(m,)) for m in (0, 1)]
    for t in ts: t.start()
    for t in ts: t.join()
timed("gil1", lambda: gil(1, 6000000)); timed("gil4", gil); timed("queue", q); timed("pingpong", pp)
