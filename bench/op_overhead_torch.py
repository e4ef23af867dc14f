"""PyTorch peer for bench_op_overhead: the same tiny ops, timed from Python (so it includes the
interpreter's per-call cost, which a C++ caller of ember does not pay). Median of 5 runs.
    /usr/bin/python3 bench/op_overhead_torch.py"""
import statistics
import timeit

import torch

torch.set_num_threads(1)
a, b = torch.ones(16), torch.ones(16)
x = torch.randn(16, 16)
w = torch.randn(16, 16, requires_grad=True)
bias = torch.randn(16, requires_grad=True)


def lin():
    torch.nn.functional.linear(x, w, bias).sum().backward()


def run(stmt, n):
    return statistics.median(timeit.repeat(stmt, number=n, repeat=5)) / n * 1e9


print(f"torch {torch.__version__}")
print(f"add16            {run(lambda: torch.add(a, b), 20000):8.0f} ns")
with torch.no_grad():
    print(f"add16 no_grad    {run(lambda: torch.add(a, b), 20000):8.0f} ns")
print(f"linear16 fwd+bwd {run(lin, 2000):8.0f} ns")
