"""A test target whose on-CPU time is in libtorch_cpu.so (a library with 530,000 symbols):
matrix products on one intra-op thread, in a loop. Prints "ready" once it computes; exits
after --seconds."""

import argparse
import time

import torch

p = argparse.ArgumentParser()
p.add_argument("--seconds", type=float, default=30)
args = p.parse_args()
torch.set_num_threads(1)
a = torch.randn(256, 256)
b = torch.randn(256, 256)
end = time.monotonic() + args.seconds
a @ b
print("ready", flush=True)
while time.monotonic() < end:
    for _ in range(50):
        c = a @ b
    c.relu_().sum().item()
