"""PyTorch twin of bench/bench_models.cpp: the same models (tests/golden/make_golden.py's mnistnet
and lenet5; mlp = Flatten, Linear 784->256, ReLU, Linear 256->10), the same measurements.
  train: forward + cross_entropy + backward + SGD(lr 0.01, momentum 0.9), batch 64, one fixed
         random batch, 3 warm-up steps excluded, median over repetitions of `steps` steps.
  infer: eval() under torch.no_grad(), batch 256, 2 warm-up passes, median over repetitions.
  --rss MODEL: only 20 training steps, then print this process's peak RSS (KiB).
  --autocast-bf16: forward (training and inference) under torch.autocast("cpu", dtype=torch.bfloat16),
         the twin of bench_models --precision bf16.

    /usr/bin/python3 bench/torch_models.py --threads 2 [--json] [--reps 5] [--autocast-bf16]
    /usr/bin/python3 bench/torch_models.py --threads 2 --rss mnistnet
"""
import argparse
import contextlib
import json
import resource
import statistics
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


# The same architectures the golden tests pin down (mnistnet = pytorch/examples' MNIST net).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "golden"))
from make_golden import LeNet5, MnistNet  # noqa: E402


def mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))


class BnCnn48Fc128(nn.Module):
    """ember's bncnn48_fc128 (src/nn/models.cpp): two conv (no bias) + batch norm + ReLU + 2x2 max
    pool stages, 1 -> 16 -> 48 channels, then 48*7*7 -> 128 -> 10."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 48, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(48)
        self.fc1 = nn.Linear(48 * 7 * 7, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        return self.fc2(F.relu(self.fc1(torch.flatten(x, 1))))


MODELS = {"mlp": mlp, "lenet5": LeNet5, "mnistnet": MnistNet, "bncnn48_fc128": BnCnn48Fc128}
# Same steps per repetition as bench_models.cpp.
TRAIN_STEPS = {"mlp": 200, "lenet5": 100, "mnistnet": 8, "bncnn48_fc128": 200}
INFER_STEPS = {"mlp": 100, "lenet5": 50, "mnistnet": 4, "bncnn48_fc128": 100}


def precision(bf16):
    return torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()


class Trainer:
    bf16 = False

    def __init__(self, name, batch):
        torch.manual_seed(1234)
        self.model = MODELS[name]()
        self.model.train()
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9)
        self.x = torch.randn(batch, 1, 28, 28)
        self.y = torch.randint(0, 10, (batch,))

    def step(self):
        with precision(self.bf16):
            loss = F.cross_entropy(self.model(self.x), self.y)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()


def throughput(fn, batch, warmup, steps, reps):
    for _ in range(warmup):
        fn()
    sps = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(steps):
            fn()
        sps.append(batch * steps / (time.perf_counter() - t0))
    return statistics.median(sps)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--models", default="mlp,lenet5,mnistnet")
    ap.add_argument("--rss")
    ap.add_argument("--autocast-bf16", action="store_true")
    args = ap.parse_args()
    Trainer.bf16 = args.autocast_bf16
    torch.set_num_threads(args.threads)

    if args.rss:
        t = Trainer(args.rss, 64)
        for _ in range(20):
            t.step()
        print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
        return

    results = {}
    for m in args.models.split(","):
        t = Trainer(m, 64)
        train = throughput(t.step, 64, 3, TRAIN_STEPS[m], args.reps)
        inf = Trainer(m, 256)
        inf.model.eval()
        with torch.no_grad(), precision(args.autocast_bf16):
            infer = throughput(lambda: inf.model(inf.x), 256, 2, INFER_STEPS[m], args.reps)
        results[m] = {"train_samples_per_s": train, "infer_samples_per_s": infer}
        if not args.json:
            print(f"{m:10s} train {train:9.1f} samples/s   infer {infer:9.1f} samples/s")
    if args.json:
        print(json.dumps({"framework": "pytorch", "version": torch.__version__,
                          "precision": "bf16" if args.autocast_bf16 else "fp32",
                          "threads": args.threads, "reps": args.reps, "models": results}))


if __name__ == "__main__":
    main()
