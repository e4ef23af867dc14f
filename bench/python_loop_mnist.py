"""One program, two frameworks: pytorch/examples' MNIST training loop (mnist/main.py: its Net, conv
32 and 64 channels, dropout, fc 128, log_softmax + nll_loss, Adadelta lr 1.0, StepLR gamma 0.7,
batch 64) over Fashion-MNIST, run with `import torch` or with `import ember as torch` — the only
line that differs (issue 46's benchmark). The batches are cut by hand from tensors held in memory
(the same in both: DataLoader comes with part 2), so what is timed is the model, the loss,
backward and the optimizer, driven from Python.

    python bench/python_loop_mnist.py --framework ember|torch [--model mnistnet|lenet5]
        [--threads 2] [--epochs 1] [--steps N] [--data-dir DIR]

Prints one JSON line: the framework and its version, the training seconds (first step excluded:
it is the warm-up), steps, samples/s, the test accuracy after training, the CPU model.
bench/python_loop_mnist.sh alternates both frameworks and `ember train` from a spec file.
"""
import argparse
import gzip
import importlib
import json
import os
import time

import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("--framework", choices=["torch", "ember"], required=True)
ap.add_argument("--model", choices=["mnistnet", "lenet5"], default="mnistnet")
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--epochs", type=int, default=1)
ap.add_argument("--steps", type=int, default=0, help="stop each epoch after this many steps (0: the whole epoch)")
ap.add_argument("--batch-size", type=int, default=64)
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
args = ap.parse_args()

# The one line a user changes.
torch = importlib.import_module(args.framework)
nn = importlib.import_module(args.framework + ".nn")
F = importlib.import_module(args.framework + ".nn.functional")
optim = importlib.import_module(args.framework + ".optim")
StepLR = importlib.import_module(args.framework + ".optim.lr_scheduler").StepLR


# ---- from here on, the program is PyTorch's, unchanged ------------------------------------------
class Net(nn.Module):  # pytorch/examples mnist/main.py
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.dropout2(x)
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


class LeNet5(nn.Module):  # ember's zoo lenet5 (tests/golden/make_golden.py's twin)
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(400, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return F.log_softmax(self.fc3(x), dim=1)


def read_idx(path, offset):
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return np.frombuffer(raw, dtype=np.uint8, offset=offset)


def load(split):
    x = read_idx(os.path.join(args.data_dir, f"{split}-images-idx3-ubyte.gz"), 16).reshape(-1, 1, 28, 28)
    y = read_idx(os.path.join(args.data_dir, f"{split}-labels-idx1-ubyte.gz"), 8)
    x = (x.astype(np.float32) / 255.0 - 0.2860) / 0.3530  # transforms.ToTensor + Normalize, once
    return torch.from_numpy(x), torch.from_numpy(y.astype(np.int64))


def train(model, xtr, ytr, optimizer, epoch, timing):
    model.train()
    n = xtr.shape[0]
    perm = torch.randperm(n)
    steps = (n + args.batch_size - 1) // args.batch_size
    if args.steps:
        steps = min(steps, args.steps)
    for batch_idx in range(steps):
        if batch_idx == 1:
            timing["start"] = time.perf_counter() if epoch == 1 else timing["start"]
        idx = perm[batch_idx * args.batch_size:(batch_idx + 1) * args.batch_size]
        data, target = xtr[idx], ytr[idx]
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        if batch_idx % 100 == 0:
            print(f"Train Epoch: {epoch} [{batch_idx * len(data)}/{n}]\tLoss: {loss.item():.6f}", flush=True)
        timing["steps"] += 1 if (epoch > 1 or batch_idx >= 1) else 0
        timing["samples"] += len(data) if (epoch > 1 or batch_idx >= 1) else 0


def test(model, xte, yte):
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, xte.shape[0], 1000):
            output = model(xte[i:i + 1000])
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(yte[i:i + 1000].view_as(pred)).sum().item()
    return correct / xte.shape[0]


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown"


def main():
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    xtr, ytr = load("train")
    xte, yte = load("t10k")
    model = Net() if args.model == "mnistnet" else LeNet5()
    optimizer = optim.Adadelta(model.parameters(), lr=1.0)
    scheduler = StepLR(optimizer, step_size=1, gamma=0.7)
    timing = {"start": 0.0, "steps": 0, "samples": 0}
    for epoch in range(1, args.epochs + 1):
        train(model, xtr, ytr, optimizer, epoch, timing)
        if epoch == args.epochs:
            seconds = time.perf_counter() - timing["start"]
        scheduler.step()
    acc = test(model, xte, yte)
    print(json.dumps({"framework": args.framework, "version": torch.__version__, "model": args.model,
                      "threads": args.threads, "train_seconds": round(seconds, 3), "steps": timing["steps"],
                      "samples_per_s": round(timing["samples"] / seconds, 1),
                      "ms_per_step": round(1000 * seconds / timing["steps"], 3), "test_accuracy": acc,
                      "cpu": cpu_model(), "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "")}))


if __name__ == "__main__":
    main()
