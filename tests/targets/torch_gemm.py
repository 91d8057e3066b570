"""A test target whose on-CPU time is in libtorch_cpu.so (a library with 530,000 symbols):
matrix products on one intra-op thread, in a loop, and between them operations on a tiny
tensor, whose time goes to torch's C++ dispatch and kernels (``at::``: the products' time is
in MKL's kernels, whose callers frame-pointer unwinding rarely reaches, so ``at::`` frames
were 0.5-1% of a 4 s capture's samples, none at all in 1 of 2 captures beside a busy
neighbour). Prints "ready" once it computes; exits after --seconds."""

import argparse
import time

import torch

p = argparse.ArgumentParser()
p.add_argument("--seconds", type=float, default=30)
args = p.parse_args()
torch.set_num_threads(1)
a = torch.randn(256, 256)
b = torch.randn(256, 256)
tiny = torch.zeros(4)
end = time.monotonic() + args.seconds
a @ b
print("ready", flush=True)
while time.monotonic() < end:
    for _ in range(50):
        c = a @ b
    c.relu_().sum().item()
    for _ in range(2000):
        tiny.add_(1.0)
