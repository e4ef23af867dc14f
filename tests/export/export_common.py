"""Shared pieces of the export checks (check_onnx.py in a venv, check_torch.py under Debian's
python3): running ember, reading IDX and safetensors files with numpy alone, and one trained run
exported both ways with ember's own logits and accuracy next to it."""

import gzip
import json
import os
import struct
import subprocess
import sys

import numpy as np

FASHION_MNIST = "/usr/share/datasets/fashion-mnist"


def run(cmd, **kw):
    """Runs a command, echoing it; fails the test with its output when it exits non-zero."""
    print("+", " ".join(str(c) for c in cmd), flush=True)
    r = subprocess.run([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"FAIL: exit {r.returncode}: {' '.join(str(c) for c in cmd)}\n{r.stdout}")
    return r.stdout


def read_idx(path):
    """An IDX file (plain or .gz) as a numpy array."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    zero, dtype, ndim = struct.unpack(">HBB", data[:4])
    assert zero == 0 and dtype == 0x08, f"{path}: not an unsigned-byte IDX file"
    dims = struct.unpack(f">{ndim}I", data[4:4 + 4 * ndim])
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def find_idx(data_dir, stem):
    for name in (stem, stem + ".gz"):
        p = os.path.join(data_dir, name)
        if os.path.exists(p):
            return p
    sys.exit(f"FAIL: no {stem}[.gz] in {data_dir}")


_ST_DTYPES = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "I32": np.int32, "U8": np.uint8}


def read_safetensors(path):
    """(tensors, metadata) of a safetensors file, read with numpy alone (the format is an 8-byte
    header length, a JSON header and the data)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", {})
    base = 8 + n
    out = {}
    for name, info in header.items():
        b, e = info["data_offsets"]
        out[name] = np.frombuffer(data[base + b:base + e], _ST_DTYPES[info["dtype"]]).reshape(info["shape"]).copy()
    return out, meta


def write_idx_split(data_dir, split, n):
    """tests/e2e/e2e_util.h's learnable synthetic set: the label decides which band is bright."""
    images = np.zeros((n, 28, 28), np.uint8)
    labels = np.zeros(n, np.uint8)
    for i in range(n):
        label = (i * 7 + 3) % 10
        labels[i] = label
        for r in range(28):
            for c in range(28):
                images[i, r, c] = 200 + (i + c) % 50 if r // 3 == label else (i * 31 + r * 7 + c) % 40
    with open(os.path.join(data_dir, f"{split}-images-idx3-ubyte"), "wb") as f:
        f.write(struct.pack(">IIII", 0x803, n, 28, 28) + images.tobytes())
    with open(os.path.join(data_dir, f"{split}-labels-idx1-ubyte"), "wb") as f:
        f.write(struct.pack(">II", 0x801, n) + labels.tobytes())


def trained_run(ember, fixture, work):
    """Trains lenet5 for one epoch (real Fashion-MNIST when installed: 2000 training images, the
    whole 10000-image test set; else a synthetic set), exports it as ONNX and safetensors, and asks
    ember for its test logits (the fixture) and accuracy (`ember eval --json`)."""
    os.makedirs(work, exist_ok=True)
    if os.path.exists(os.path.join(FASHION_MNIST, "t10k-images-idx3-ubyte.gz")):
        data_dir, extra, what = FASHION_MNIST, ["--limit-train", "2000"], "Fashion-MNIST (2000 train, 10000 test)"
    else:
        data_dir, extra, what = os.path.join(work, "data"), [], "synthetic IDX data (256 train, 64 test)"
        os.makedirs(data_dir, exist_ok=True)
        write_idx_split(data_dir, "train", 256)
        write_idx_split(data_dir, "t10k", 64)
    run_dir = os.path.join(work, "run")
    run([ember, "train", "--model", "lenet5", "--data-dir", data_dir, "--epochs", "1", "--batch-size", "64",
         "--threads", "2", "--run-dir", run_dir, *extra])
    out = {"run": run_dir, "data_dir": data_dir, "what": what,
           "onnx": os.path.join(work, "lenet5.onnx"), "safetensors": os.path.join(work, "lenet5.safetensors"),
           "io": os.path.join(work, "lenet5.io.safetensors")}
    print(run([ember, "export", run_dir, "--format", "onnx", "-o", out["onnx"]]), end="")
    print(run([ember, "export", run_dir, "-o", out["safetensors"]]), end="")
    print(run([fixture, "run", run_dir, out["io"]]), end="")
    out["accuracy"] = json.loads(run([ember, "eval", run_dir, "--json"]))["accuracy"]
    images = read_idx(find_idx(data_dir, "t10k-images-idx3-ubyte"))
    out["input"] = (images.astype(np.float32) / 255.0)[:, None, :, :]
    out["labels"] = read_idx(find_idx(data_dir, "t10k-labels-idx1-ubyte")).astype(np.int64)
    io, _ = read_safetensors(out["io"])
    assert np.array_equal(io["images"][:, 0], images), "the fixture read other test images than the IDX file holds"
    assert np.array_equal(io["labels"], out["labels"]), "the fixture read other labels"
    out["ember_logits"] = io["logits"]
    return out


def compare(name, got, want, tol=1e-4):
    """Fails unless |got - want| <= tol * (1 + |want|) everywhere; returns the largest difference."""
    assert got.shape == want.shape, f"{name}: shape {got.shape}, ember's {want.shape}"
    diff = np.abs(got.astype(np.float64) - want)
    bad = diff > tol * (1 + np.abs(want))
    if bad.any():
        sys.exit(f"FAIL: {name}: {int(bad.sum())} of {bad.size} logits differ from ember's by more than {tol} "
                 f"(relative); largest difference {diff.max():.3g}")
    return float(diff.max())
