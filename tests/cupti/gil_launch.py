# gil_launch.py: a GPU starved by GIL contention, for t-gpu-idle.sh. The main thread launches a
# kernel through a C library with ctypes (libpylaunch.so, the stand-in libcupti behind it; each
# kernel takes 100 us; prepare, ~50 us of Python, comes between launches), which releases the GIL for the call; two other threads hold the GIL
# spinning in pure Python, so after every launch the main thread waits in take_gil for its turn
# (the switch interval, 5 ms, per thread ahead of it) while the GPU has nothing to do. Recorded
# with `record --idle --gpu on`, the GPU's idle time is mostly off-CPU, under take_gil.
# Prints "ok: gil: launches N kernel_ns X" on stdout.
import ctypes
import os
import sys
import threading
import time

lib = ctypes.CDLL(sys.argv[1])
lib.pl_launch.argtypes = [ctypes.c_char_p, ctypes.c_uint32]
seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 1.5
stop = False


def spin():
    x = 1
    while not stop:
        x = (x * 3 + 1) & 0xFFFFFFFF


def prepare():
    y = 0
    for i in range(1000):
        y += i * i
    return y


def launch(corr):
    lib.pl_launch(b"gil_kernel", corr)


def main():
    global stop
    if lib.pl_init(os.environ.get("CUDA_INJECTION64_PATH", "").encode()) != 0:
        print("gil_launch.py: pl_init failed", file=sys.stderr)
        sys.exit(2)
    spinners = [threading.Thread(target=spin) for _ in range(2)]
    for t in spinners:
        t.start()
    corr, end = 0, time.monotonic() + seconds
    while time.monotonic() < end:
        corr += 1
        launch(corr)
        prepare()
    stop = True
    for t in spinners:
        t.join()
    lib.pl_deliver()
    print("ok: gil: launches %d kernel_ns %d" % (corr, corr * 100000))


main()
