"""The GPU guides' program — AlexNet in PyTorch with a hand-written loop — on Fashion-MNIST, run by
ember: the imports are the only lines that differ from the PyTorch program (swap them back and it
runs on PyTorch). docs/python.md walks through it.

    python examples/alexnet_fashion_mnist.py [--epochs 2] [--steps N] [--data-dir DIR]

The data are read from the IDX files (Debian's dataset-fashion-mnist package puts them in
/usr/share/datasets/fashion-mnist; `ember data fetch fashion-mnist` downloads them) and batched by
hand from NumPy arrays.
"""
import argparse
import gzip
import os
import time

import numpy as np

import ember as torch                  # was: import torch
import ember.nn as nn                  # was: import torch.nn as nn
import ember.nn.functional as F        # was: import torch.nn.functional as F
from ember import optim                # was: from torch import optim


class AlexNet(nn.Module):
    """AlexNet's layout (five convolutions, three max pools, three fully connected layers with
    dropout) sized for 28x28 grey images, as the guides adapt it to MNIST."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 32, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=2, stride=2),                       # 28 -> 14
            nn.Conv2d(32, 64, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=2, stride=2),                       # 14 -> 7
            nn.Conv2d(64, 128, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(128, 256, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(256, 256, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),                       # 7 -> 3
        )
        self.classifier = nn.Sequential(
            nn.Dropout(0.5), nn.Linear(256 * 3 * 3, 1024), nn.ReLU(inplace=True),
            nn.Dropout(0.5), nn.Linear(1024, 512), nn.ReLU(inplace=True),
            nn.Linear(512, num_classes),
        )

    def forward(self, x):
        x = self.features(x)
        x = torch.flatten(x, 1)
        return self.classifier(x)


def read_idx(path):
    """An IDX file (gzipped or not) as a NumPy array."""
    for candidate in (path, path + ".gz"):
        if os.path.exists(candidate):
            with open(candidate, "rb") as f:
                raw = f.read()
            break
    else:
        raise SystemExit(f"no {path}[.gz]: run `ember data fetch fashion-mnist` or pass --data-dir")
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load(data_dir, split):
    x = read_idx(os.path.join(data_dir, f"{split}-images-idx3-ubyte"))[:, None].astype(np.float32) / 255.0
    y = read_idx(os.path.join(data_dir, f"{split}-labels-idx1-ubyte")).astype(np.int64)
    return (x - 0.2860) / 0.3530, y   # Fashion-MNIST's mean and std


def batches(x, y, batch_size, shuffle, rng):
    order = rng.permutation(len(x)) if shuffle else np.arange(len(x))
    for i in range(0, len(x), batch_size):
        idx = order[i:i + batch_size]
        yield torch.from_numpy(x[idx]), torch.from_numpy(y[idx])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--steps", type=int, default=0, help="stop each epoch after this many batches (0: all)")
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--save", default="alexnet_fashion_mnist.pt")
    args = ap.parse_args()

    # The guides' first lines: is the GPU there, and which device the run uses.
    print("CUDA available:", torch.cuda.is_available())
    device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    if device.type == "cuda":
        print("GPU:", torch.cuda.get_device_name(0))
    torch.manual_seed(0)
    rng = np.random.default_rng(0)

    x_train, y_train = load(args.data_dir, "train")
    x_test, y_test = load(args.data_dir, "t10k")

    net = AlexNet().to(device)
    criterion = nn.CrossEntropyLoss().to(device)
    optimizer = optim.SGD(net.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
    scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)

    for epoch in range(args.epochs):
        net.train()
        start, seen, running = time.perf_counter(), 0, 0.0
        for step, (img, label) in enumerate(batches(x_train, y_train, args.batch_size, True, rng)):
            if args.steps and step == args.steps:
                break
            img, label = img.to(device), label.to(device)   # the guides' img.cuda(), label.cuda()
            optimizer.zero_grad()
            loss = criterion(net(img), label)
            loss.backward()
            optimizer.step()
            running += loss.item() * len(label)
            seen += len(label)
        scheduler.step()

        net.eval()
        correct = total = 0
        with torch.no_grad():
            for step, (img, label) in enumerate(batches(x_test, y_test, 1000, False, rng)):
                if args.steps and step == args.steps:
                    break
                pred = net(img.to(device)).argmax(dim=1)
                correct += (pred == label.to(device)).sum().item()
                total += len(label)
        print(f"epoch {epoch + 1}: train loss {running / seen:.4f}, test accuracy {correct / total:.2%}, "
              f"{seen / (time.perf_counter() - start):.0f} samples/s on {device}")

    torch.save(net.state_dict(), args.save)   # torch.load(path, weights_only=True) reads it
    print("saved", args.save)


if __name__ == "__main__":
    main()
