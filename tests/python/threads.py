# threads.py: Python threads and a multiprocessing child, each spinning in its own function,
# so csampler's test can check that every OS thread's samples carry that thread's Python frames.
import multiprocessing
import sys
import threading
import time


def spin(deadline):
    n = 0
    while time.monotonic() < deadline:
        n += 1
    return n


def worker_a(deadline):
    return spin(deadline)


def worker_b(deadline):
    return spin(deadline)


def child_work(deadline):
    return spin(deadline)


def main_spin(deadline):
    return spin(deadline)


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    deadline = time.monotonic() + seconds
    child = multiprocessing.get_context("fork").Process(target=child_work, args=(deadline,))
    child.start()
    threads = [threading.Thread(target=f, args=(deadline,)) for f in (worker_a, worker_b)]
    for t in threads:
        t.start()
    main_spin(deadline)
    for t in threads:
        t.join()
    child.join()


if __name__ == "__main__":
    main()
