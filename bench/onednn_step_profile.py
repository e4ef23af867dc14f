#!/usr/bin/env python3
"""Where a CPU training step's time goes inside oneDNN, per primitive, from ONEDNN_VERBOSE.

Runs `ember bench train` once with ONEDNN_VERBOSE=1 (after its warm-up, every primitive call prints
one `onednn_verbose,exec,...,<ms>` line), groups the calls by kind, pass and shape, and prints
milliseconds per step, calls per step and, for convolutions and matrix products, GFLOP/s (2 * N * OC * OH * OW * IC/G *
KH * KW, or 2 * M * K * N, per call). The sum over oneDNN against the step's wall time is what ember itself spends
outside oneDNN (its own kernels, the framework, the OpenMP fork/joins between them).

  bench/onednn_step_profile.py BUILD MODEL [--size 224] [--batch 32] [--precision bf16]
                               [--steps 12] [--warmup 3] [--threads 2] [--top 25]

ONEDNN_VERBOSE's timing adds a little per call (a clock read and a line of text); the step time it
reports is measured in the same run and includes it. Set OMP_WAIT_POLICY as the harness runs
(bench/torchvision_cpu.sh and compare_precision.sh on a quiet machine: active).
"""
import argparse
import collections
import os
import re
import subprocess
import sys


def conv_flops(shape):
    """2 * MACs of one convolution call from oneDNN's problem string, or None."""
    d = {k: int(v) for k, v in re.findall(r"([a-z]+)(\d+)", shape)}
    if not all(k in d for k in ("mb", "ic", "oc", "kh")):
        return None
    g = d.get("g", 1)
    oh, ow = d.get("oh", 1), d.get("ow", d.get("oh", 1))
    kw = d.get("kw", d["kh"])
    return 2.0 * d["mb"] * d["oc"] * oh * ow * (d["ic"] // g) * d["kh"] * kw


def matmul_flops(shape):
    """2 * M * K * N of one matmul call ("MxK:KxN:MxN", batch dims ignored), or None."""
    parts = shape.split(":")
    try:
        a, b = [int(v) for v in parts[0].split("x")[-2:]], [int(v) for v in parts[1].split("x")[-2:]]
    except (ValueError, IndexError):
        return None
    return 2.0 * a[0] * a[1] * b[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build")
    ap.add_argument("model")
    ap.add_argument("--size", type=int, default=0, help="image size (0: the model's own)")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--precision", default="bf16")
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--top", type=int, default=25)
    a = ap.parse_args()

    cmd = [os.path.join(a.build, "ember"), "bench", "train", "--device", "cpu", "--models", a.model,
           "--batch-sizes", str(a.batch), "--threads", str(a.threads), "--precision", a.precision,
           "--repeats", "1", "--steps", str(a.steps), "--warmup", str(a.warmup), "--max-warmup-time", "0"]
    if a.size:
        cmd += ["--image-size", str(a.size)]
    env = dict(os.environ, ONEDNN_VERBOSE="1")
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"onednn_step_profile: {' '.join(cmd)} failed (exit {out.returncode}):\n{out.stderr[-2000:]}")
    lines = out.stdout.splitlines()
    execs = [l.split(",") for l in lines if l.startswith("onednn_verbose,exec,") or l.startswith("dnnl_verbose,exec,")]
    # The throughput row of `ember bench train`: "<model> <batch> <samples/s> ±N%".
    rate = None
    for l in lines:
        f = l.split()
        if len(f) >= 3 and f[0] == a.model and f[1] == str(a.batch):
            rate = float(f[2].replace(",", ""))
    if not execs or rate is None:
        sys.exit("onednn_step_profile: no ONEDNN_VERBOSE exec lines or no throughput row in the output")
    # Steps seen: the calls of the first convolution / product the log shows (the first layer's
    # forward, once per step). `ember bench train` may run more steps than --steps + --warmup where a
    # step is short (it times for a minimum duration), so the count comes from the log.
    first = next((r for r in execs if r[3] in ("convolution", "matmul", "inner_product")), execs[0])
    first_key = (first[3], first[5], first[4], first[-2])
    steps = sum(1 for r in execs if (r[3], r[5], r[4], r[-2]) == first_key)
    agg = collections.defaultdict(lambda: [0, 0.0, None])
    by_kind = collections.defaultdict(float)
    for r in execs:
        kind, impl, prop, shape, ms = r[3], r[4], r[5], r[-2], float(r[-1])
        key = (kind, prop, impl, shape)
        agg[key][0] += 1
        agg[key][1] += ms
        agg[key][2] = conv_flops(shape) if kind == "convolution" else matmul_flops(shape) if kind == "matmul" else None
        by_kind[kind + (" " + prop if kind == "convolution" else "")] += ms
    step_ms = 1000.0 * a.batch / rate
    total = sum(v[1] for v in agg.values()) / steps
    # The model name and the cpuid family / model: a VM's "AMD EPYC" alone does not say which
    # generation (family 25 is Zen 3/4, 26 Zen 5).
    info = {}
    with open("/proc/cpuinfo") as f:
        for l in f:
            k, _, v = l.partition(":")
            info.setdefault(k.strip(), v.strip())
            if not l.strip():
                break
    cpu = f"{info.get('model name', 'unknown CPU')} (family {info.get('cpu family', '?')} model {info.get('model', '?')})"
    print(f"# {a.model} {a.precision} batch {a.batch}{' ' + str(a.size) + ' px' if a.size else ''}, "
          f"{a.threads} threads, {cpu}, OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', 'unset')}")
    print(f"step {step_ms:.2f} ms ({rate:.1f} samples/s, with ONEDNN_VERBOSE); inside oneDNN {total:.2f} ms "
          f"({100 * total / step_ms:.0f}%); outside {step_ms - total:.2f} ms; {steps} steps logged")
    for k, ms in sorted(by_kind.items(), key=lambda kv: -kv[1]):
        print(f"  {ms / steps:9.3f} ms  {k}")
    print(f"top {a.top} primitives (ms per step, calls per step, GFLOP/s for convolutions and matmuls):")
    for (kind, prop, impl, shape), (n, ms, fl) in sorted(agg.items(), key=lambda kv: -kv[1][1])[: a.top]:
        gf = f"{fl * n / (ms * 1e6):6.0f} GF/s" if fl else " " * 11
        print(f"  {ms / steps:8.3f} ms {n / steps:4.1f}x {gf}  {kind} {prop} {impl} {shape}")


if __name__ == "__main__":
    main()
