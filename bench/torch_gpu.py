"""PyTorch's side of scripts/gpu-check.sh, measured on the same machine as ember's benches:
  - matmul C = A @ B, n x n, A and B uniform [0, 10), fp32 and TF32, at `ember bench matmul`'s
    default sizes (the values differ from ember's Philox ones; a matmul's speed does not depend on them);
  - pinned-memory copy_ bandwidth H2D and D2H (as `ember bench bandwidth`: 32 MiB, GB/s = 1e9 bytes/s);
  - mnistnet (pytorch/examples' Net, tests/golden/make_golden.py) training, eager, SGD momentum 0.9,
    batch 128 on random inputs (as `ember bench train --models mnistnet --batch-sizes 128`).
Every figure is timed as ember's benches time theirs (src/core/timing.cpp, docs/benchmarks.md): a
warm-up until the time per call settles (at most --max-warmup-time s), then the median of --repeats
repeats of at least --min-time s and a minimum count each, with the spread.
Prints one JSON object. Runs on the CPU too (--device cpu, the default without CUDA): TF32 and the
bandwidth then say why they were not measured.
  usage: python3 bench/torch_gpu.py [--device cuda|cpu] [--sizes 50,100,...] [--train-steps N]
                                    [--min-time S] [--repeats N] [--max-warmup-time S]"""
import argparse
import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "golden"))
from make_golden import MnistNet  # noqa: E402  (the architecture the golden tests pin down)

DEFAULT_SIZES = "50,100,500,1000,2000,4096,8192"  # ember bench matmul's defaults


class Plan:
    """ember's TimingPlan (include/ember/core/timing.h), the same defaults."""

    def __init__(self, min_time=0.5, min_calls=10, repeats=3, warmup=1, max_warmup_time=2.0, tolerance=0.10):
        self.min_time, self.min_calls, self.repeats = min_time, min_calls, repeats
        self.warmup, self.max_warmup_time, self.tolerance = warmup, max_warmup_time, tolerance

    def with_min_calls(self, n):
        return Plan(self.min_time, n, self.repeats, self.warmup, self.max_warmup_time, self.tolerance)


def median(v):
    v = sorted(v)
    m = len(v) // 2
    return v[m] if len(v) % 2 else 0.5 * (v[m - 1] + v[m])


def time_steady_state(run, plan):
    """ember's time_steady_state: run(n) makes n calls and returns their seconds. Returns seconds per
    call of each repeat, the calls and seconds of each, and the warm-up's calls, seconds and whether
    it settled."""
    warm = {"calls": 0, "seconds": 0.0, "settled": False}
    per_call = 0.0

    def warm_up(n):
        nonlocal per_call
        s = run(n)
        warm["calls"] += n
        warm["seconds"] += s
        per_call = s / n
        return s

    if plan.warmup > 0:
        warm_up(plan.warmup)
    if plan.max_warmup_time > 0:
        target, judged, k = plan.min_time / 10, [], 1
        while warm["seconds"] < plan.max_warmup_time:
            if warm_up(k) < target and k < 2 ** 40:
                k *= 2
                continue
            judged.append(per_call)
            last = judged[-3:]
            if len(last) == 3 and max(last) - min(last) <= plan.tolerance * median(last):
                warm["settled"] = True
                break
    reps = []
    for _ in range(plan.repeats):
        n = plan.min_calls
        if per_call > 0:
            n = max(n, math.ceil(plan.min_time / per_call))
        s, done = run(n), n
        while s < plan.min_time:
            rate = s / done if s > 0 else 0
            more = max(1, math.ceil((plan.min_time - s) / rate * 1.05)) if rate > 0 else done
            s, done = s + run(more), done + more
        reps.append({"calls": done, "seconds": s})
        per_call = s / done
    spc = [r["seconds"] / r["calls"] for r in reps]
    med = median(spc)
    spread = max(max(spc) - med, med - min(spc)) / med if med > 0 else 0.0
    return {"median": med, "min": min(spc), "max": max(spc), "spread": spread, "per_repeat": reps, "warmup": warm}


def timer(device):
    """run(fn) -> run(n): seconds of n calls, by CUDA events on a GPU, perf_counter on the CPU."""

    def make(fn):
        def run(n):
            if device.type == "cuda":
                start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                for _ in range(n):
                    fn()
                stop.record()
                stop.synchronize()
                return start.elapsed_time(stop) * 1e-3
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            return time.perf_counter() - t0

        return run

    return make


def timing_fields(t, value):
    """The figure's min/median/max (value of seconds per call: a rate inverts min and max), the spread,
    the repeats and the warm-up, as ember's --json writes them."""
    lo, hi = sorted((value(t["min"]), value(t["max"])))
    return {"min": lo, "median": value(t["median"]), "max": hi, "spread": t["spread"], "repeats": len(t["per_repeat"]),
            "per_repeat": t["per_repeat"], "warmup": t["warmup"]}


def matmul(n, tf32, device, plan):
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = tf32
    g = torch.Generator(device="cpu").manual_seed(0)
    a = (torch.rand(n, n, generator=g) * 10).to(device)
    b = (torch.rand(n, n, generator=g) * 10).to(device)
    t = time_steady_state(timer(device)(lambda: a @ b), plan)
    ms = t["median"] * 1e3
    return {"n": n, "dtype": "tf32" if tf32 else "float32", "ms": ms, "gflops": 2 * n ** 3 / (ms * 1e-3) / 1e9,
            "timing": timing_fields(t, lambda s: s * 1e3)}


def pinned_bandwidth(device, plan, mib=32):
    nbytes = mib << 20
    host = torch.empty(nbytes, dtype=torch.uint8).pin_memory()
    dev = torch.empty(nbytes, dtype=torch.uint8, device=device)
    out = {"mib": mib}
    for name, dst, src in (("h2d_pinned", dev, host), ("d2h_pinned", host, dev)):
        t = time_steady_state(timer(device)(lambda: dst.copy_(src, non_blocking=True)), plan)
        out[name] = nbytes / t["median"] / 1e9
        out[name + "_timing"] = timing_fields(t, lambda s: nbytes / s / 1e9)
    return out


def train_samples_per_s(device, batch, plan):
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

    def run(n):  # wall time: each step synchronises, as ember's bench train times it
        t0 = time.perf_counter()
        for _ in range(n):
            step()
        return time.perf_counter() - t0

    t = time_steady_state(run, plan)
    return {"model": "mnistnet", "batch_size": batch, "steps": sum(r["calls"] for r in t["per_repeat"]),
            "samples_per_s": batch / t["median"], "timing": timing_fields(t, lambda s: batch / s)}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--sizes", default=DEFAULT_SIZES, help="comma-separated n (default: %(default)s)")
    p.add_argument("--train-batch", type=int, default=128)
    p.add_argument("--train-steps", type=int, default=10, help="timed steps per repeat, at least (default: %(default)s)")
    p.add_argument("--train-warmup", type=int, default=1, help="untimed warm-up calls first (default: %(default)s)")
    p.add_argument("--min-time", type=float, default=0.5, help="seconds each repeat times at least (default: %(default)s)")
    p.add_argument("--repeats", type=int, default=3, help="repeats per figure, their median kept (default: %(default)s)")
    p.add_argument("--max-warmup-time", type=float, default=2.0,
                   help="seconds the warm-up may wait for the time per call to settle (default: %(default)s)")
    a = p.parse_args(argv)
    if a.min_time < 0 or a.max_warmup_time < 0 or a.repeats < 1 or a.train_steps < 1 or a.train_warmup < 0:
        p.error("--min-time and --max-warmup-time must be >= 0, --repeats and --train-steps >= 1, --train-warmup >= 0")
    plan = Plan(a.min_time, a.train_steps, a.repeats, a.train_warmup, a.max_warmup_time)
    device = torch.device(a.device)
    sizes = [int(s) for s in a.sizes.split(",")]
    out = {"torch": torch.__version__, "device": str(device),
           "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
           "threads": torch.get_num_threads(),
           "timing": {"min_time": a.min_time, "repeats": a.repeats, "warmup": a.train_warmup,
                      "max_warmup_time": a.max_warmup_time, "min_steps": a.train_steps, "min_matmuls": 2,
                      "min_copies": 10}}
    # ember bench matmul's and bench bandwidth's minimum counts per repeat (2 matmuls, 10 copies).
    out["matmul"] = [matmul(n, False, device, plan.with_min_calls(2)) for n in sizes]
    if device.type == "cuda":
        out["matmul"] += [matmul(n, True, device, plan.with_min_calls(2)) for n in sizes]
        out["bandwidth"] = pinned_bandwidth(device, plan.with_min_calls(10))
    else:
        out["tf32"] = "TF32 applies to CUDA devices only: not measured on the CPU"
        out["bandwidth"] = None
        out["bandwidth_skipped"] = "pinned copy_ bandwidth needs a CUDA device"
    out["train"] = [train_samples_per_s(device, a.train_batch, plan)]
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
