# reuse.py: a code object freed and its address taken by another code object of another frame
# size (tests/python/t-python-deep.sh). rec's code is replaced by a copy (A) that run_a runs for
# 0.5 s; then A is freed and CPython's allocator gives the next code object of its size (C, 47
# more stack slots) the same address: run_c runs it for a second. Prints "reused 1" to stderr
# when it did (else the run checks nothing).
import sys, time


def rec(n):
    if n <= 0:
        t = time.perf_counter() + 0.0002
        while time.perf_counter() < t:
            pass
        return 0
    return rec(n - 1) + 1


def run_a(secs):
    end = time.perf_counter() + secs
    while time.perf_counter() < end:
        rec(30)


def run_c(secs):
    end = time.perf_counter() + secs
    while time.perf_counter() < end:
        rec(30)


def main():
    a = rec.__code__.replace(co_stacksize=rec.__code__.co_stacksize + 3)
    rec.__code__ = a
    run_a(0.5)
    at = id(a)
    b = a.replace(co_stacksize=a.co_stacksize + 40)
    rec.__code__ = b
    del a
    c = b.replace(co_stacksize=b.co_stacksize + 7)
    rec.__code__ = c
    print("reused", int(id(c) == at), file=sys.stderr)
    run_c(float(sys.argv[1]) if len(sys.argv) > 1 else 1.0)


main()
