"""PyTorch twin of `ember train` with no arguments (the default recipe, apps/ember/train.cpp):
LeNet-5 (tests/golden/make_golden.py's, the same layers as ember's zoo lenet5) on Fashion-MNIST,
AdamW (lr 3e-3, weight decay 0.01), OneCycleLR per batch (max_lr 3e-3, PyTorch's defaults
pct_start 0.3 / div_factor 25 / final_div_factor 1e4, cycle_momentum off as in ember), 15 epochs
of batch 128 with a reshuffle each epoch (last partial batch kept), cross-entropy with label
smoothing 0.1 for training (plain for the test loss), inputs scaled to [0, 1] and
normalised with mean 0.2860 / std 0.3530, no augmentation; the test set is evaluated after every
epoch, as `ember train` does.

It is the generous PyTorch program: the uint8 data are decoded once (gzip + numpy, Debian's
dataset-fashion-mnist files) and held as one tensor; batches are index_select + float conversion,
no DataLoader worker processes and no torchvision. Prints the final test accuracy, the wall time
from the start of the process (including `import torch`) and the peak RSS.

    /usr/bin/python3 bench/torch_default_recipe.py [--threads 2] [--epochs 15] [--data-dir DIR]
"""
import time

T0 = time.perf_counter()

import argparse  # noqa: E402
import gzip  # noqa: E402
import os  # noqa: E402
import resource  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "golden"))
from make_golden import LeNet5  # noqa: E402


def read_idx(path, offset):
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return np.frombuffer(raw, dtype=np.uint8, offset=offset)


def load(data_dir, split):
    x = read_idx(os.path.join(data_dir, f"{split}-images-idx3-ubyte.gz"), 16).reshape(-1, 1, 28, 28)
    y = read_idx(os.path.join(data_dir, f"{split}-labels-idx1-ubyte.gz"), 8)
    return torch.from_numpy(x.copy()), torch.from_numpy(y.astype(np.int64))


def normalise(xb):
    return (xb.float() / 255.0 - 0.2860) / 0.3530


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--label-smoothing", type=float, default=0.1)
    ap.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)

    xtr, ytr = load(args.data_dir, "train")
    xte, yte = load(args.data_dir, "t10k")
    n, bs = xtr.shape[0], args.batch_size
    steps_per_epoch = (n + bs - 1) // bs

    model = LeNet5()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=steps_per_epoch * args.epochs,
                                                cycle_momentum=False)
    acc = 0.0
    for epoch in range(args.epochs):
        te = time.perf_counter()
        model.train()
        perm = torch.randperm(n)
        loss_sum = 0.0
        for b in range(steps_per_epoch):
            idx = perm[b * bs:(b + 1) * bs]
            xb, yb = normalise(xtr.index_select(0, idx)), ytr.index_select(0, idx)
            loss = F.cross_entropy(model(xb), yb, label_smoothing=args.label_smoothing)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            loss_sum += loss.item() * idx.numel()
        model.eval()
        correct = 0
        with torch.no_grad():
            for b in range(0, xte.shape[0], 1000):
                correct += (model(normalise(xte[b:b + 1000])).argmax(1) == yte[b:b + 1000]).sum().item()
        acc = correct / xte.shape[0]
        print(f"epoch {epoch + 1:2d}  train loss {loss_sum / n:.4f}  test acc {100 * acc:.2f}%  "
              f"{time.perf_counter() - te:.1f} s", flush=True)
    rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"torch {torch.__version__} threads {args.threads}: test accuracy {100 * acc:.2f}% after {args.epochs} "
          f"epochs, wall {time.perf_counter() - T0:.1f} s from process start, peak RSS {rss_kib / 1024:.1f} MB")


if __name__ == "__main__":
    main()
