"""PyTorch's side of scripts/gpu-check.sh, measured on the same machine as ember's benches:
  - matmul C = A @ B, n x n, A and B uniform [0, 10), fp32 and TF32, at `ember bench matmul`'s
    default sizes (the values differ from ember's Philox ones; a matmul's speed does not depend on them);
  - pinned-memory copy_ bandwidth H2D and D2H (as `ember bench bandwidth`: 32 MiB, GB/s = 1e9 bytes/s);
  - mnistnet (pytorch/examples' Net, tests/golden/make_golden.py) training, eager, SGD momentum 0.9,
    batch 128 on random inputs (as `ember bench train --models mnistnet --batch-sizes 128`).
Prints one JSON object. Runs on the CPU too (--device cpu, the default without CUDA): TF32 and the
bandwidth then say why they were not measured.
  usage: python3 bench/torch_gpu.py [--device cuda|cpu] [--sizes 50,100,...] [--train-steps N]"""
import argparse
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "golden"))
from make_golden import MnistNet  # noqa: E402  (the architecture the golden tests pin down)

DEFAULT_SIZES = "50,100,500,1000,2000,4096,8192"  # ember bench matmul's defaults


class Timer:
    """CUDA events on a GPU, perf_counter on the CPU; elapsed() in milliseconds."""

    def __init__(self, device):
        self.cuda = device.type == "cuda"

    def __enter__(self):
        if self.cuda:
            self.start, self.stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            self.start.record()
        else:
            self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        if self.cuda:
            self.stop.record()
            self.stop.synchronize()
            self.ms = self.start.elapsed_time(self.stop)
        else:
            self.ms = (time.perf_counter() - self.t0) * 1e3


def matmul(n, tf32, device):
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = tf32
    g = torch.Generator(device="cpu").manual_seed(0)
    a = (torch.rand(n, n, generator=g) * 10).to(device)
    b = (torch.rand(n, n, generator=g) * 10).to(device)
    a @ b  # warm-up (cuBLAS handle, kernels)
    with Timer(device) as once:
        a @ b
    reps = int(min(max(300.0 / max(once.ms, 1e-3), 2), 1000))  # ~0.3 s, as ember's
    with Timer(device) as t:
        for _ in range(reps):
            a @ b
    ms = t.ms / reps
    return {"n": n, "dtype": "tf32" if tf32 else "float32", "ms": ms, "gflops": 2 * n ** 3 / (ms * 1e-3) / 1e9}


def pinned_bandwidth(device, mib=32, reps=20):
    nbytes = mib << 20
    host = torch.empty(nbytes, dtype=torch.uint8).pin_memory()
    dev = torch.empty(nbytes, dtype=torch.uint8, device=device)
    out = {"mib": mib}
    for name, dst, src in (("h2d_pinned", dev, host), ("d2h_pinned", host, dev)):
        dst.copy_(src, non_blocking=True)  # warm-up
        with Timer(device) as t:
            for _ in range(reps):
                dst.copy_(src, non_blocking=True)
        out[name] = nbytes * reps / (t.ms * 1e-3) / 1e9
    return out


def train_samples_per_s(device, batch, steps, warmup):
    torch.manual_seed(0)
    model = MnistNet().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(batch, 1, 28, 28, device=device)
    y = torch.randint(0, 10, (batch,), device=device)

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        loss.item()  # synchronises, as ember's bench does each step

    for _ in range(warmup):
        step()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    return {"model": "mnistnet", "batch_size": batch, "steps": steps,
            "samples_per_s": batch * steps / (time.perf_counter() - t0)}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--sizes", default=DEFAULT_SIZES, help="comma-separated n (default: %(default)s)")
    p.add_argument("--train-batch", type=int, default=128)
    p.add_argument("--train-steps", type=int, default=50)
    p.add_argument("--train-warmup", type=int, default=5)
    a = p.parse_args(argv)
    device = torch.device(a.device)
    sizes = [int(s) for s in a.sizes.split(",")]
    out = {"torch": torch.__version__, "device": str(device),
           "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
           "threads": torch.get_num_threads()}
    out["matmul"] = [matmul(n, False, device) for n in sizes]
    if device.type == "cuda":
        out["matmul"] += [matmul(n, True, device) for n in sizes]
        out["bandwidth"] = pinned_bandwidth(device)
    else:
        out["tf32"] = "TF32 applies to CUDA devices only: not measured on the CPU"
        out["bandwidth"] = None
        out["bandwidth_skipped"] = "pinned copy_ bandwidth needs a CUDA device"
    out["train"] = [train_samples_per_s(device, a.train_batch, a.train_steps, a.train_warmup)]
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
