"""PyTorch's twin of bench/bench_mobilenet_ops.cpp, float32 NCHW on the CPU, median of --reps calls
after 3 warm-up calls, in ms: depthwise 3x3 conv (groups == C, stride 1, padding 1, no bias) forward
and forward + backward (input and weight gradients); squeeze-and-excitation's x * s (N, C, 1, 1),
hardswish and silu, forward + backward.
    OMP_WAIT_POLICY=passive /usr/bin/python3 bench/mobilenet_ops_torch.py [--threads 2] [--batch 32] [--reps 10]
"""
import argparse
import time

import torch
import torch.nn.functional as F


def median_ms(f, reps):
    for _ in range(3):
        f()
    t = []
    for _ in range(reps):
        a = time.perf_counter()
        f()
        t.append((time.perf_counter() - a) * 1e3)
    return sorted(t)[len(t) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--reps", type=int, default=10)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    print(f"torch {torch.__version__}, mkldnn {torch.backends.mkldnn.is_available()}, {a.threads} threads, batch {a.batch}")
    print(f"{'shape':18s} {'fwd':>10s} {'f+b':>10s}")
    for c, hw in [(96, 56), (144, 56), (192, 28), (384, 28)]:
        x = torch.randn(a.batch, c, hw, hw, requires_grad=True)
        w = torch.randn(c, 1, 3, 3, requires_grad=True)
        g = torch.randn(a.batch, c, hw, hw)

        def fwd():
            with torch.no_grad():
                F.conv2d(x, w, None, 1, 1, 1, c)

        def fwd_bwd():
            y = F.conv2d(x, w, None, 1, 1, 1, c)
            torch.autograd.grad(y, (x, w), g)

        print(f"{a.batch}x{c}x{hw}x{hw}".ljust(18), f"{median_ms(fwd, a.reps):10.2f} {median_ms(fwd_bwd, a.reps):10.2f}")

    print(f"{'shape':18s} {'se f+b':>10s} {'hswish f+b':>10s} {'silu f+b':>10s}")
    for c, hw in [(96, 56), (192, 28)]:
        x = torch.randn(a.batch, c, hw, hw, requires_grad=True)
        s = torch.rand(a.batch, c, 1, 1, requires_grad=True)
        g = torch.randn(a.batch, c, hw, hw)
        se = median_ms(lambda: torch.autograd.grad(x * s, (x, s), g), a.reps)
        hs = median_ms(lambda: torch.autograd.grad(F.hardswish(x), (x,), g), a.reps)
        si = median_ms(lambda: torch.autograd.grad(F.silu(x), (x,), g), a.reps)
        print(f"{a.batch}x{c}x{hw}x{hw}".ljust(18), f"{se:10.2f} {hs:10.2f} {si:10.2f}")


if __name__ == "__main__":
    main()
