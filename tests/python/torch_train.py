# torch_train.py: a small PyTorch CPU training loop (Debian's python3-torch), for csampler's
# acceptance test of Python frames on PyTorch: the report's top Python frames must be this
# file's functions (train_step, TinyNet.forward), with torch's native code under them.
# Two intra-op threads, so torch starts threads of its own (OpenMP workers); passive waiting,
# so that they do not spin on a machine with few cores.
#   python3 torch_train.py SECONDS
import os
import sys
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
import torch  # noqa: E402

# Keep every tensor's memory in malloc's heap: by default glibc maps each large block afresh
# (and its threshold moves as blocks are freed), so a step's time hung on page faults and
# zeroing, 57 to 140 ms a step from run to run and within one, and the loop's split with it
# (backward 45-66% of the samples). Heap-only, a step takes 17-20 ms every time.
try:
    import ctypes  # noqa: E402
    _libc = ctypes.CDLL(None)
    _libc.mallopt(-3, 1 << 30)   # M_MMAP_THRESHOLD
    _libc.mallopt(-1, 1 << 30)   # M_TRIM_THRESHOLD
    _libc.mallopt(-2, 64 << 20)  # M_TOP_PAD
except (OSError, AttributeError):
    pass


class TinyNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(16, 32, 3, padding=1)
        self.fc = torch.nn.Linear(32 * 16 * 16, 10)

    def forward(self, x):
        x = torch.relu(self.conv1(x))
        x = torch.max_pool2d(torch.relu(self.conv2(x)), 2)
        return self.fc(x.flatten(1))


def train_step(model, opt, x, y):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss


def main(seconds, threads):
    torch.manual_seed(0)
    torch.set_num_threads(threads)
    model = TinyNet()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(32, 3, 32, 32), torch.randint(0, 10, (32,))
    deadline = time.monotonic() + seconds
    steps = 0
    while time.monotonic() < deadline:
        loss = train_step(model, opt, x, y)
        steps += 1
    print(f"torch_train: {steps} steps, loss {loss.item():.3f}", file=sys.stderr)


if __name__ == "__main__":
    # argv: seconds (4), torch's intra-op threads (2; 1 keeps the split of the main thread's
    # time free of waits on the other threads, which vary with the machine's load)
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 4.0,
         int(sys.argv[2]) if len(sys.argv) > 2 else 2)
