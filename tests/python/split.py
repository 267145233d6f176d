# split.py: a Python workload with a known split of CPU time, for csampler's Python tests:
# about 60% in hot_loop, 25% in recurse (recursive) and 15% in compress_data (zlib.compress, a C
# call). Each phase runs for its share of the thread's CPU time (what cpu-clock samples), so
# the split holds on a loaded machine.
import sys
import time
import zlib


def hot_loop(deadline):
    n = 0
    while time.thread_time() < deadline:
        for i in range(2000):
            n += i * i
    return n


def recurse(depth, deadline):
    if depth > 0:
        return recurse(depth - 1, deadline)
    n = 0
    while time.thread_time() < deadline:
        for i in range(2000):
            n += i ^ 3
    return n


def compress_data(data, deadline):
    n = 0
    while time.thread_time() < deadline:
        n += len(zlib.compress(data, 9))
    return n


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    data = bytes((i * 7919) % 251 for i in range(200000))
    # csampler reads Python frames when it processes a sample; at start-up it is busy opening
    # the interpreter's files and falls behind for a moment. A pause lets it catch up before
    # the measured phases (sleeping costs no CPU samples).
    time.sleep(1.0)
    rounds = 8
    for _ in range(rounds):
        start = time.thread_time()
        hot_loop(start + 0.60 * seconds / rounds)
        start = time.thread_time()
        recurse(20, start + 0.25 * seconds / rounds)
        start = time.thread_time()
        compress_data(data, start + 0.15 * seconds / rounds)


if __name__ == "__main__":
    main()
