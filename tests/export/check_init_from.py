"""PyTorch weights -> `ember train --init-from` -> training continues (issue 14), end to end: a seeded
PyTorch LeNet5 (tests/golden/make_golden.py's twin) is trained for a few SGD steps on real
Fashion-MNIST, its state_dict saved as safetensors the way `safetensors.torch.save_file` writes it
(float32; float16; float32 under a "module." prefix), and ember continues training from each file at a
negligible learning rate. ember's test accuracy (`ember eval --json`) must equal PyTorch's for the same
weights, and the run's final checkpoint must hold PyTorch's weights (within 1e-6).

usage: check_init_from.py EMBER WORK_DIR     (Debian's python3 with python3-torch; exit 77 without torch)"""

import functools
import json
import os
import shutil
import struct
import sys

try:
    import torch
    import torch.nn.functional as F
    import numpy as np
except ImportError as e:
    print(f"SKIPPED: {sys.executable} cannot import torch/numpy ({e}); apt-get install python3-torch")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "golden"))
from export_common import FASHION_MNIST, find_idx, read_idx, read_safetensors, run  # noqa: E402
import make_golden  # noqa: E402  (the zoo's PyTorch twins)

MEAN, STD = 0.2860, 0.3530  # ember's fashion-mnist normalisation (src/data/dataset.cpp, known_dataset)
TORCH_STEPS, TORCH_BATCH = 100, 64  # PyTorch's own training: 100 SGD steps on the first 6400 images
EMBER_TRAIN, BATCH = 512, 128      # ember continues on the first 512 training images (one epoch, 4 steps)
LR = "1e-12"                       # so small that ember's weights stay PyTorch's (checked to 1e-6)


def data_dir():
    """Where ember finds fashion-mnist by default: $EMBER_DATA_DIR/fashion-mnist, else the Debian
    package's directory (dataset-fashion-mnist)."""
    env = os.environ.get("EMBER_DATA_DIR")
    for d in ([os.path.join(env, "fashion-mnist")] if env else []) + [FASHION_MNIST]:
        if any(os.path.exists(os.path.join(d, "t10k-images-idx3-ubyte" + gz)) for gz in ("", ".gz")):
            return d
    print("SKIPPED: no Fashion-MNIST in $EMBER_DATA_DIR/fashion-mnist or " + FASHION_MNIST +
          " (apt-get install dataset-fashion-mnist, or `ember data fetch fashion-mnist`)")
    sys.exit(77)


@functools.lru_cache(maxsize=None)
def load_split(d, split):
    """Images normalised exactly as ember does (float32 (v / 255 - mean) / std, src/data/transforms.cpp)
    and labels."""
    images = read_idx(find_idx(d, f"{split}-images-idx3-ubyte"))
    x = torch.from_numpy(images.astype(np.float32))[:, None] / 255.0
    x = (x - torch.tensor(MEAN, dtype=torch.float32)) / torch.tensor(STD, dtype=torch.float32)
    return x, torch.from_numpy(read_idx(find_idx(d, f"{split}-labels-idx1-ubyte")).astype(np.int64))


_DTYPES = {torch.float32: ("F32", 4), torch.float16: ("F16", 2)}


def save_file(tensors, path, metadata=None):
    """safetensors.torch.save_file's format, written by hand (the package is not in Debian's python):
    u64 little-endian header length, a JSON header {name: {dtype, shape, data_offsets}} (plus
    __metadata__), space-padded to a multiple of 8, then each tensor's little-endian bytes in the
    library's order (larger dtypes first, then by name)."""
    order = sorted(tensors, key=lambda k: (-_DTYPES[tensors[k].dtype][1], k))
    header, blobs, offset = {}, [], 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for k in order:
        t = tensors[k].detach().contiguous().cpu()
        raw = t.numpy().astype(t.numpy().dtype.newbyteorder("<")).tobytes()
        header[k] = {"dtype": _DTYPES[t.dtype][0], "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def accuracy(model, x, y):
    with torch.no_grad():
        pred = torch.cat([model(x[i:i + 1000]).argmax(1) for i in range(0, len(x), 1000)])
    return int((pred == y).sum()), len(y)


def torch_model(d):
    """make_golden.py's LeNet5, seeded, after TORCH_STEPS steps of SGD (momentum 0.9) on the first
    TORCH_STEPS * TORCH_BATCH training images."""
    torch.manual_seed(14)
    model = make_golden.LeNet5()
    x, y = load_split(d, "train")
    opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    for s in range(TORCH_STEPS):
        xb, yb = x[s * TORCH_BATCH:(s + 1) * TORCH_BATCH], y[s * TORCH_BATCH:(s + 1) * TORCH_BATCH]
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"PyTorch {torch.__version__}: LeNet5 after {TORCH_STEPS} SGD steps of {TORCH_BATCH}, last loss {loss.item():.4f}")
    return model.eval()


def final_weights(run_dir):
    """The model's tensors in the run's final checkpoint (checkpoints/latest.json names the file; the
    keys are model/<name>)."""
    ckpt = os.path.join(run_dir, "checkpoints")
    latest = json.load(open(os.path.join(ckpt, "latest.json")))
    tensors, _ = read_safetensors(os.path.join(ckpt, latest["weights"]))
    return {k[len("model/"):]: v for k, v in tensors.items() if k.startswith("model/")}


def first_images_dir(d, work, n):
    """A data directory holding the first n training images and labels of `d` (raw IDX) and its test
    set (links): ember's --limit-train takes a seeded, stratified subset, not the first n, so the run
    is given exactly PyTorch's images instead."""
    out = os.path.join(work, f"fashion-mnist-first{n}")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    images = read_idx(find_idx(d, "train-images-idx3-ubyte"))[:n]
    labels = read_idx(find_idx(d, "train-labels-idx1-ubyte"))[:n]
    with open(os.path.join(out, "train-images-idx3-ubyte"), "wb") as f:
        f.write(struct.pack(">IIII", 0x803, n, images.shape[1], images.shape[2]) + images.astype(np.uint8).tobytes())
    with open(os.path.join(out, "train-labels-idx1-ubyte"), "wb") as f:
        f.write(struct.pack(">II", 0x801, n) + labels.astype(np.uint8).tobytes())
    for name in ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"):
        src = find_idx(d, name)
        os.symlink(src, os.path.join(out, os.path.basename(src)))
    return out


def main():
    torch.set_num_threads(2)
    ember, work = sys.argv[1:3]
    os.makedirs(work, exist_ok=True)
    d = data_dir()
    model = torch_model(d)
    xt, yt = load_split(d, "t10k")
    xs, ys = load_split(d, "train")
    xs, ys = xs[:EMBER_TRAIN], ys[:EMBER_TRAIN]
    first = first_images_dir(d, work, EMBER_TRAIN)
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    full_correct, n = accuracy(model, xt, yt)
    print(f"PyTorch test accuracy of its float32 weights: {full_correct}/{n}")

    variants = [  # (name, tensors in the file, prefix, the weights ember must end up with, note expected)
        ("f32", {k: v for k, v in state.items()}, "", state, None),
        ("f16", {k: v.half() for k, v in state.items()}, "", {k: v.half().float() for k, v in state.items()},
         f"note: cast {len(state)} tensors from float16 to float32"),
        ("module", {"module." + k: v for k, v in state.items()}, "module.", state, "key prefix 'module.' stripped"),
    ]
    for name, tensors, prefix, want, note in variants:
        path = os.path.join(work, f"lenet5_{name}.safetensors")
        save_file(tensors, path, {"format": "pt"})
        run_dir = os.path.join(work, f"run_{name}")
        shutil.rmtree(run_dir, ignore_errors=True)
        out = run([ember, "train", "--init-from", path, "--model", "lenet5", "--data-dir", first, "--epochs", "1",
                   "--batch-size", BATCH, "--lr", LR, "--val-split", "0", "--hflip", "0", "--run-dir", run_dir,
                   "--precision", "fp32",  # PyTorch's side is float32; auto would pick bf16 on AMX
                   "--threads", "2", "--seed", "1"])
        print(out, end="")
        loaded = f"init from {path}: loaded {len(state)} tensors"
        for must in [loaded] + ([note] if note else []):
            if must not in out:
                sys.exit(f"FAIL [{name}]: `ember train` did not print '{must}'")

        # The run trained from the file's weights: its epoch's training loss (label smoothing 0.1, the
        # mean over EMBER_TRAIN images in equal batches) and accuracy are PyTorch's for those weights.
        model.load_state_dict(want)
        epoch = [m for m in map(json.loads, open(os.path.join(run_dir, "metrics.jsonl"))) if m["kind"] == "epoch"]
        if len(epoch) != 1 or epoch[0]["step"] != EMBER_TRAIN // BATCH:
            sys.exit(f"FAIL [{name}]: expected one epoch of {EMBER_TRAIN // BATCH} steps in metrics.jsonl, got {epoch}")
        with torch.no_grad():
            logits = model(xs)
            loss = F.cross_entropy(logits, ys, label_smoothing=0.1).item()
            train_correct = int((logits.argmax(1) == ys).sum())
        if abs(epoch[0]["train_loss"] - loss) > 1e-4 * (1 + loss) or round(epoch[0]["train_acc"] * EMBER_TRAIN) != train_correct:
            sys.exit(f"FAIL [{name}]: ember's first epoch: train loss {epoch[0]['train_loss']:.6f}, accuracy "
                     f"{epoch[0]['train_acc']:.4f}; PyTorch's for the same weights and images: {loss:.6f}, "
                     f"{train_correct / EMBER_TRAIN:.4f}")

        # ... and ended on them (the final checkpoint).
        got = final_weights(run_dir)
        if set(got) != set(want):
            sys.exit(f"FAIL [{name}]: the checkpoint's model keys {sorted(got)} are not PyTorch's {sorted(want)}")
        worst = 0.0
        for k, w in want.items():
            if tuple(got[k].shape) != tuple(w.shape):
                sys.exit(f"FAIL [{name}]: {k} has shape {got[k].shape} in the checkpoint, {tuple(w.shape)} in PyTorch")
            worst = max(worst, float(np.abs(got[k].astype(np.float64) - w.numpy().astype(np.float64)).max()))
        if worst > 1e-6:
            sys.exit(f"FAIL [{name}]: the final checkpoint's weights differ from PyTorch's by {worst:.3g} (> 1e-6)")

        # ember's test accuracy equals PyTorch's for the same (for f16: the same float16-rounded) weights.
        ev = json.loads(run([ember, "eval", run_dir, "--json"]))
        ember_correct = round(ev["accuracy"] * n)
        same_correct, _ = accuracy(model, xt, yt)
        if ember_correct != same_correct:
            sys.exit(f"FAIL [{name}]: ember eval {ember_correct}/{n} correct, PyTorch {same_correct}/{n} with the same weights")
        line = (f"PASS {name}: --init-from then {EMBER_TRAIN} images at lr {LR}; final weights within {worst:.2e} of "
                f"PyTorch's; train loss {epoch[0]['train_loss']:.5f} (PyTorch {loss:.5f}); ember eval accuracy {ev['accuracy']:.4f} ({ember_correct}/{n}) == PyTorch's")
        if name == "f16":
            # float16 keeps 11 significant bits: rounding the weights moves the logits by ~1e-3 relative,
            # which flips at most the few test images whose top two logits are that close.
            if abs(ember_correct - full_correct) > 2:
                sys.exit(f"FAIL [{name}]: {ember_correct}/{n} with float16 weights, {full_correct}/{n} with float32 (> 2 apart)")
            rounding = max(float((v.half().float() - v).abs().max()) for v in state.values())
            line += (f"; the float16 rounding moved weights by up to {rounding:.2e} and the accuracy by "
                     f"{ember_correct - full_correct:+d} images against the float32 weights")
        print(line, flush=True)
        model.load_state_dict(state)


if __name__ == "__main__":
    main()
