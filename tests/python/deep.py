# deep.py: a deep Python workload with a known split of CPU time, for csampler's Python tests.
# Every phase runs under a 40-deep recursion (descend), as real training loops are 30-60 frames
# deep: 40% in spin_plain (a pure Python loop), 20% in gen_values (a generator, driven by
# gen_consume), 20% in key_of (Python called back from C: sorted's key), 20% in cmp_cb (a
# ctypes callback called by libc's qsort). Each phase runs for its share of the thread's CPU
# time (what cpu-clock samples), so the split holds on a loaded machine. With "threads" as
# second argument, the four phases run at once in four threads (each 25%); with "gen", the
# generator phase alone runs (for events that only it has, counted over more of its time).
import ctypes
import sys
import threading
import time

DEPTH = 40
LIBC = ctypes.CDLL(None)
CMP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int))


def spin_plain(deadline):
    n = 0
    while time.thread_time() < deadline:
        for i in range(2000):
            n += i * i
    return n


def gen_values(deadline):
    while time.thread_time() < deadline:
        for i in range(2000):
            yield i ^ 5


def gen_consume(deadline):
    n = 0
    for v in gen_values(deadline):
        n += v
    return n


def key_of(v):
    x = 0
    for i in range(20):
        x += v * i
    return x


def sort_keys(deadline):
    data = list(range(300, 0, -1))
    n = 0
    while time.thread_time() < deadline:
        n += sorted(data, key=key_of)[0]
    return n


@CMP
def cmp_cb(a, b):
    x = 0
    for i in range(20):
        x += i
    return a[0] - b[0]


def qsort_calls(deadline):
    arr = (ctypes.c_int * 300)(*range(300, 0, -1))
    while time.thread_time() < deadline:
        for i in range(300):
            arr[i] = 300 - i
        LIBC.qsort(arr, 300, ctypes.sizeof(ctypes.c_int), cmp_cb)
    return arr[0]


def descend(depth, phase, deadline):
    if depth > 0:
        return descend(depth - 1, phase, deadline)
    return phase(deadline)


PHASES = [(spin_plain, 0.40), (gen_consume, 0.20), (sort_keys, 0.20), (qsort_calls, 0.20)]


def run_phases(seconds):
    rounds = 8
    for _ in range(rounds):
        for phase, share in PHASES:
            start = time.thread_time()
            descend(DEPTH, phase, start + share * seconds / rounds)


def run_threads(seconds):
    threads = [threading.Thread(target=lambda p=p: descend(DEPTH, p, time.thread_time() + seconds))
               for p, _ in PHASES]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    # Let the recorder finish opening the interpreter's files (sleeping costs no CPU samples).
    time.sleep(1.0)
    if len(sys.argv) > 2 and sys.argv[2] == "threads":
        run_threads(seconds)
    elif len(sys.argv) > 2 and sys.argv[2] == "gen":
        descend(DEPTH, gen_consume, time.thread_time() + seconds)
    else:
        run_phases(seconds)


if __name__ == "__main__":
    main()
