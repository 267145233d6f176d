# launch.py: a Python program that launches GPU kernels through a C library (ctypes), for
# t-python-launch.sh. train_step launches forward_kernel from forward and backward_kernel from
# backward; the GPU side is the stand-in libcupti (libpylaunch.so). The launches of the last
# step come after a pause of more than a second, so that the injection library writes its
# launch buffer (it does every second) while the process still runs: the recorder names the
# Python frames from the live process.
import ctypes
import os
import sys
import time

lib = ctypes.CDLL(sys.argv[1])
lib.pl_launch.argtypes = [ctypes.c_char_p, ctypes.c_uint32]
corr = 0


def launch(kernel):
    global corr
    corr += 1
    lib.pl_launch(kernel, corr)


def forward():
    launch(b"forward_kernel")


def backward():
    launch(b"backward_kernel")


def train_step():
    forward()
    backward()


def main():
    if lib.pl_init(os.environ.get("CUDA_INJECTION64_PATH", "").encode()) != 0:
        print("launch.py: pl_init failed", file=sys.stderr)
        sys.exit(2)
    for _ in range(9):
        train_step()
    time.sleep(1.2)
    train_step()
    lib.pl_deliver()
    time.sleep(1.5)


main()
