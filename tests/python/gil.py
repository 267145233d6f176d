# gil.py: two threads running pure Python at once, for t-python-gil.sh: only one holds the GIL
# at a time, so each spends about half its time waiting for it (take_gil, a futex wait), which
# `record --idle` shows as off-CPU time under the thread's Python frames.
import sys
import threading
import time


def spin(deadline):
    n = 0
    while time.monotonic() < deadline:
        n += 1
    return n


def worker(deadline):
    return spin(deadline)


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
    deadline = time.monotonic() + seconds
    threads = [threading.Thread(target=worker, args=(deadline,), name="gil-%d" % i) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


main()
