"""PyTorch's side of scripts/gpu-check.sh: the same matmul sizes (uniform [0,10), CUDA-event
timing) and mnistnet training steps (batch 64..512, SGD momentum) on cuda:0, as JSON."""
import json
import os
import sys
import time

import torch
import torch.nn.functional as F


def matmul_gflops(n, tf32):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    g = torch.Generator(device="cpu").manual_seed(0)
    a = (torch.rand(n, n, generator=g) * 10).cuda()
    b = (torch.rand(n, n, generator=g) * 10).cuda()
    a @ b
    torch.cuda.synchronize()
    reps = 20 if n <= 4096 else 5
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        a @ b
    stop.record()
    stop.synchronize()
    ms = start.elapsed_time(stop) / reps
    return {"n": n, "tf32": tf32, "ms": ms, "gflops": 2 * n ** 3 / (ms * 1e-3) / 1e9}


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "golden"))
from make_golden import MnistNet  # noqa: E402  (the architecture the golden tests pin down)


def train_samples_per_s(batch, steps=50):
    torch.manual_seed(0)
    model = MnistNet().cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(batch, 1, 28, 28, device="cuda")
    y = torch.randint(0, 10, (batch,), device="cuda")
    for i in range(steps + 5):
        if i == 5:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
    torch.cuda.synchronize()
    return {"batch": batch, "samples_per_s": batch * steps / (time.perf_counter() - t0)}


out = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0),
       "matmul": [matmul_gflops(n, tf) for tf in (False, True) for n in (256, 1024, 4096, 8192)],
       "train_mnistnet": [train_samples_per_s(b) for b in (64, 128, 256, 512)]}
print(json.dumps(out, indent=2))
