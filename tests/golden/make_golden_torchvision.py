#!/usr/bin/python3
"""Writes torchvision_v1.bin: torchvision's resnet18, resnet34, resnet50, resnet18_cifar, alexnet and
mobilenet_v2 on one small batch, for ember's zoo twins (tests/unit/test_golden_torchvision.cpp).

Run:  /usr/bin/python3 tests/golden/make_golden_torchvision.py [OUTDIR]     (default: this folder)
Needs Debian's python3-torch and python3-torchvision (torch 1.13, torchvision 0.14, CPU).
Deterministic: one thread, no random draws at all.

No weights are stored (resnet50 alone is 100 MB of float32, and the golden files travel in a 40 MiB
bundle). Every parameter, buffer, input and label comes from an integer hash of its name and element
index that the C++ test reproduces bit for bit (tests/golden/hash_fill.h; the file holds a few of
its values so the two are checked against each other):

    u(name, i) = top 24 bits of splitmix64(fnv1a64(name) XOR i), as a float in [-1, 1) (k / 2^23 - 1)

A state_dict entry `key` of a model holding tensor t is filled, in float64 then rounded to float32:
    dim >= 2 (conv, linear weights)   u * sqrt(3 / fan_in)   fan_in = t.shape[1] * prod(t.shape[2:])
    *.running_mean                    0.1 * u
    *.running_var                     1 + 0.5 * u            in [0.5, 1.5)
    other 1-d *.weight (BN)           1 + 0.25 * u
    other 1-d *.bias                  0.1 * u
    *.num_batches_tracked             left at 0
with i the row-major element index and name = key. sqrt(3 / fan_in) (variance 1 / fan_in) keeps the
eval-mode ResNets' logits O(1) (with He's sqrt(6 / fan_in) every residual block doubles the variance:
resnet50's eval logits reached 3e3) and AlexNet's above its biases, and 3 SGD steps lower every loss
(with sqrt(6 / fan_in) AlexNet's diverged).
The input is u("<model>/input", i) and label i is splitmix64(fnv1a64("<model>/labels") XOR i) mod
the class count.

The reference numbers are PyTorch's in float64 (model.double(), from the same float32 values), so they
are exact to float32's eyes however ill-conditioned the computation; next to each, PyTorch's own float32
error on it (one thread), which sizes the C++ test's tolerance: a float32 implementation as good as
PyTorch's lands within a small multiple of it. Train-mode batch norm over 2 images makes resnet50's
float32 numbers sensitive to summation order (PyTorch's float32 logits move by ~1e-4 relative between
one and two threads, its conv1 gradient by ~1e-2, its 3-step SGD losses by 10%+); eval mode is well
conditioned and carries the tight checks.

Records, for <model> in resnet18, resnet34, resnet50, resnet18_cifar, alexnet, mobilenet_v2 (10 classes,
3 channels):
    <model>/state_keys        int64 bytes of the state_dict keys joined by '\\n', in order
    <model>/state_shapes      int64: per key, ndim then the dims
    <model>/state_dtypes      int64: per key, 0 float32 or 2 int64
    <model>/input             (2, 3, S, S) float32, S = 64 (32 for resnet18_cifar)
    <model>/labels            (2,) int64
  float64, from the hashed state each time:
    <model>/logits_eval, loss_eval, grad_eval/<key>      eval mode (running statistics, dropout off);
                              loss = mean cross-entropy; <key>: the first conv's weight, the first
                              batch norm's weight and bias (FIRST_BN), the last linear's weight and bias
    <model>/logits_train, loss_train, grad_train/<key>   train mode (batch statistics) with every
                              dropout off (train_mode; its masks cannot be reproduced); not for
                              AlexNet (no batch norm: train mode would only be dropout)
    <model>/after_forward/<what>  the first batch norm's running_mean, running_var,
                              num_batches_tracked (int64) after that train-mode forward
    <model>/sgd_losses        (4,): the loss before each of 3 SGD steps (momentum 0.9, no weight
                              decay) on the same batch, and the loss after the third; lr 0.01 and
                              train mode for resnet18, resnet34, resnet18_cifar; eval mode for
                              alexnet and mobilenet_v2; eval mode and lr 0.001 for resnet50
                              (SGD_TRAIN_MODE says why)
    <model>/sgd_settings      float64 [lr, momentum, 1 if train mode else 0] of those steps
    <model>/torch_f32_error/<what>   0-d float64, for each floating record above: PyTorch float32's
                              max |f32 - f64| / max |f64| over the tensor
Adaptive average pooling to 6x6 (AlexNet's avgpool) on sizes that do not divide, float64:
    adaptive_avg_pool2d/<case>/input, output, grad_output, grad_input     cases 13x13, 5x5, 1x1, 7x9
The hash's own check values:
    hash/names                int64 bytes of names joined by '\\n'
    hash/name_index, hash/index   int64: which name, which element index
    hash/bits                 int64: splitmix64(fnv1a64(name) XOR index) as a signed 64-bit integer
    hash/uniform              float64: u(name, index)
"""

import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_golden import GoldenWriter, read_golden  # noqa: E402

MASK64 = (1 << 64) - 1
CLASSES = 10
BATCH = 2
SGD_STEPS = 3


# ---- the hash (tests/golden/hash_fill.h is its C++ twin) --------------------------------------

def fnv1a64(name):
    h = 0xCBF29CE484222325
    for b in name.encode("utf-8"):
        h = ((h ^ b) * 0x100000001B3) & MASK64
    return h


def splitmix64(x):
    """splitmix64's finaliser on a numpy uint64 array (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        z = x + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def hash_bits(name, n):
    return splitmix64(np.uint64(fnv1a64(name)) ^ np.arange(n, dtype=np.uint64))


def hash_uniform(name, n):
    """(n,) float64 in [-1, 1): the top 24 bits of each hash, k / 2^23 - 1 (exact in float32)."""
    return (hash_bits(name, n) >> np.uint64(40)).astype(np.float64) / float(1 << 23) - 1.0


def hashed_value(key, shape):
    """The float32 value the rule above gives state_dict entry `key` of `shape`."""
    n = int(np.prod(shape)) if len(shape) else 1
    u = hash_uniform(key, n)
    if len(shape) >= 2:
        fan_in = int(np.prod(shape[1:]))
        v = u * np.sqrt(3.0 / fan_in)
    elif key.endswith("running_mean"):
        v = 0.1 * u
    elif key.endswith("running_var"):
        v = 1.0 + 0.5 * u
    elif key.endswith("weight"):
        v = 1.0 + 0.25 * u
    elif key.endswith("bias"):
        v = 0.1 * u
    else:
        raise ValueError(f"no hash rule for {key}")
    return torch.from_numpy(v.astype(np.float32).reshape(shape))


def hashed_state(model):
    state = {}
    for key, t in model.state_dict().items():
        if key.endswith("num_batches_tracked"):
            state[key] = torch.zeros_like(t)
        else:
            state[key] = hashed_value(key, tuple(t.shape))
    return state


# ---- the models ---------------------------------------------------------------------------------

def resnet18_cifar(num_classes):
    """resnet18 with a 3x3 stride-1 stem and no max-pool (ember's resnet18_cifar)."""
    m = torchvision.models.resnet18(num_classes=num_classes)
    m.conv1 = torch.nn.Conv2d(3, 64, 3, 1, 1, bias=False)
    m.maxpool = torch.nn.Identity()
    return m


# name: (constructor, image size, first conv, last linear, has batch norm)
MODELS = {
    "resnet18": (torchvision.models.resnet18, 64, "conv1", "fc", True),
    "resnet34": (torchvision.models.resnet34, 64, "conv1", "fc", True),
    "resnet50": (torchvision.models.resnet50, 64, "conv1", "fc", True),
    "resnet18_cifar": (resnet18_cifar, 32, "conv1", "fc", True),
    "alexnet": (torchvision.models.alexnet, 64, "features.0", "classifier.6", False),
    "mobilenet_v2": (torchvision.models.mobilenet_v2, 64, "features.0.0", "classifier.1", True),
}
# The models whose SGD steps run in train mode, and the learning rates other than 0.01. resnet50 trains
# in eval mode at lr 0.001: with batch statistics over 2 images its loss in float64 goes 2.60, 0.51,
# 1.59, 4.87 at lr 0.01 and its float32 trajectory is chaotic at any lr (PyTorch's float32 losses are
# 20% from its float64 ones at lr 0.001); in eval mode (frozen batch norm, as when fine-tuning with
# frozen statistics) lr 0.01 still diverges (3.33 -> 5.23) and 0.001 trains smoothly (3.33 -> 0.45,
# float32 within 2e-7). mobilenet_v2 trains in eval mode too: in train mode PyTorch's float32 losses
# are 3e-2 from its float64 ones after 3 steps, in eval mode 7e-8. AlexNet runs in eval mode throughout.
SGD_TRAIN_MODE = {"resnet18", "resnet34", "resnet18_cifar"}
# The first batch norm, whose gradients and running statistics are recorded ("bn1" unless named here).
FIRST_BN = {"mobilenet_v2": "features.0.1"}
SGD_LR = {"resnet50": 0.001}


def text_record(strings):
    return torch.tensor(list("\n".join(strings).encode("utf-8")), dtype=torch.int64)


def build(name):
    ctor, _, _, _, _ = MODELS[name]
    model = ctor(num_classes=CLASSES)
    model.load_state_dict(hashed_state(model))
    return model


def batch(name):
    size = MODELS[name][1]
    x = torch.from_numpy(hash_uniform(f"{name}/input", BATCH * 3 * size * size).astype(np.float32))
    y = torch.from_numpy((hash_bits(f"{name}/labels", BATCH) % np.uint64(CLASSES)).astype(np.int64))
    return x.reshape(BATCH, 3, size, size), y


def train_mode(model, on):
    """model.train(on) with every dropout off: mobilenet_v2's classifier dropout masks cannot be reproduced."""
    model.train(on)
    for m in model.modules():
        if isinstance(m, torch.nn.Dropout):
            m.eval()


def relative_error(got, want):
    """max |got - want| / max |want| over the tensor (normwise: tiny elements do not dominate)."""
    return ((got.double() - want).abs().max() / want.abs().max().clamp_min(1e-30)).item()


def run_model(name, dtype):
    """Every recorded number of one model, computed in `dtype` from the hashed state: {what: tensor}."""
    _, _, first, last, has_bn = MODELS[name]
    bn1 = FIRST_BN.get(name, "bn1")
    x, y = batch(name)
    x = x.to(dtype)
    out = {}
    model = build(name).to(dtype)
    grad_keys = [f"{first}.weight", *([f"{bn1}.weight", f"{bn1}.bias"] if has_bn else []), f"{last}.weight",
                 f"{last}.bias"]
    # Eval mode: running statistics, dropout off. Well conditioned, so the tight check of every layer.
    model.eval()
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    loss.backward()
    out["logits_eval"], out["loss_eval"] = logits.detach(), loss.detach()
    params = dict(model.named_parameters())
    for key in grad_keys:
        out[f"grad_eval/{key}"] = params[key].grad.clone()
    if has_bn:
        # Train mode: batch statistics over 2 images (8 values per channel in layer4 at 64x64 for the
        # ImageNet ResNets), which makes resnet50's float32 numbers sensitive to summation order.
        model = build(name).to(dtype)
        train_mode(model, True)
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        loss.backward()
        out["logits_train"], out["loss_train"] = logits.detach(), loss.detach()
        params = dict(model.named_parameters())
        for key in grad_keys:
            out[f"grad_train/{key}"] = params[key].grad.clone()
        state = model.state_dict()
        for key in ("running_mean", "running_var", "num_batches_tracked"):
            out[f"after_forward/{key}"] = state[f"{bn1}.{key}"].clone()
    model = build(name).to(dtype)
    train_mode(model, name in SGD_TRAIN_MODE)
    opt = torch.optim.SGD(model.parameters(), lr=SGD_LR.get(name, 0.01), momentum=0.9)
    losses = []
    for _ in range(SGD_STEPS):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        losses.append(loss.item())
        loss.backward()
        opt.step()
    with torch.no_grad():
        losses.append(F.cross_entropy(model(x), y).item())
    out["sgd_losses"] = torch.tensor(losses, dtype=dtype)
    return out


def add_model(w, name):
    model = build(name)
    state = model.state_dict()
    w.add(f"{name}/state_keys", text_record(state.keys()))
    shapes = []
    for t in state.values():
        shapes += [t.dim(), *t.shape]
    w.add(f"{name}/state_shapes", torch.tensor(shapes, dtype=torch.int64))
    w.add(f"{name}/state_dtypes", torch.tensor([0 if t.dtype == torch.float32 else 2 for t in state.values()],
                                               dtype=torch.int64))
    x, y = batch(name)
    w.add(f"{name}/input", x)
    w.add(f"{name}/labels", y)
    w.add(f"{name}/sgd_settings", torch.tensor([SGD_LR.get(name, 0.01), 0.9, float(name in SGD_TRAIN_MODE)],
                                               dtype=torch.float64))
    ref = run_model(name, torch.float64)
    f32 = run_model(name, torch.float32)
    for what, t in ref.items():
        w.add(f"{name}/{what}", t)
    for what, t in ref.items():
        if t.is_floating_point():
            w.add(f"{name}/torch_f32_error/{what}", torch.tensor(relative_error(f32[what], t), dtype=torch.float64))
    worst = max(relative_error(f32[k], t) for k, t in ref.items() if t.is_floating_point())
    losses = ref["sgd_losses"].tolist()
    print(f"{name}: {sum(t.numel() for t in model.parameters())} parameters, SGD loss {losses[0]:.4f} -> "
          f"{losses[-1]:.4f}, eval logits max |.| {ref['logits_eval'].abs().max().item():.3f}, torch float32 vs "
          f"float64: largest relative error {worst:.2e}")


ADAPTIVE_CASES = {"13x13": (13, 13), "5x5": (5, 5), "1x1": (1, 1), "7x9": (7, 9)}


def add_adaptive_pool(w):
    for case, (h, wd) in ADAPTIVE_CASES.items():
        prefix = f"adaptive_avg_pool2d/{case}"
        x = torch.from_numpy(hash_uniform(f"{prefix}/input", 2 * 3 * h * wd).reshape(2, 3, h, wd)).requires_grad_()
        out = F.adaptive_avg_pool2d(x, (6, 6))
        g = torch.from_numpy(hash_uniform(f"{prefix}/grad_output", out.numel()).reshape(out.shape))
        (gx,) = torch.autograd.grad(out, x, g)
        for k, v in (("input", x), ("output", out), ("grad_output", g), ("grad_input", gx)):
            w.add(f"{prefix}/{k}", v)
        assert torch.autograd.gradcheck(lambda t: F.adaptive_avg_pool2d(t, (6, 6)), (x,)), prefix


HASH_CHECKS = [("conv1.weight", 0), ("conv1.weight", 1), ("conv1.weight", 9407), ("resnet50/input", 123456),
               ("", 0), ("layer4.2.downsample.1.running_var", 2047), ("x", (1 << 40) + 7)]


def add_hash_checks(w):
    names = sorted({n for n, _ in HASH_CHECKS})
    w.add("hash/names", text_record(names))
    w.add("hash/name_index", torch.tensor([names.index(n) for n, _ in HASH_CHECKS], dtype=torch.int64))
    w.add("hash/index", torch.tensor([i for _, i in HASH_CHECKS], dtype=torch.int64))
    bits, uniform = [], []
    for n, i in HASH_CHECKS:
        z = int(splitmix64(np.array([fnv1a64(n) ^ i], dtype=np.uint64))[0])
        bits.append(z - (1 << 64) if z >= 1 << 63 else z)
        uniform.append((z >> 40) / float(1 << 23) - 1.0)
        assert uniform[-1] == hash_uniform(n, i + 1)[i] if i < 1 << 20 else True
    w.add("hash/bits", torch.tensor(bits, dtype=torch.int64))
    w.add("hash/uniform", torch.tensor(uniform, dtype=torch.float64))


def check(records):
    """The hash is splitmix64 and FNV-1a, the records follow from it, and they make sense."""
    # splitmix64's first output for seed 0 (x = 0 + golden gamma, then the finaliser).
    assert int(splitmix64(np.array([0], dtype=np.uint64))[0]) == 0xE220A8397B1DCDAF
    assert fnv1a64("a") == 0xAF63DC4C8601EC8C  # FNV-1a 64 test vector
    for name, (_, size, _, _, has_bn) in MODELS.items():
        model = build(name)
        keys = bytes(records[f"{name}/state_keys"].tolist()).decode("utf-8").split("\n")
        assert keys == list(model.state_dict().keys()), name
        x, y = batch(name)
        assert torch.equal(records[f"{name}/input"], x) and torch.equal(records[f"{name}/labels"], y), name
        assert x.shape == (BATCH, 3, size, size) and 0 <= y.min() and y.max() < CLASSES, name
        model = model.double().eval()
        with torch.no_grad():
            assert torch.equal(model(x.double()), records[f"{name}/logits_eval"]), f"{name}: not deterministic"
        assert records[f"{name}/logits_eval"].abs().max() > 0.1, f"{name}: eval logits are nearly zero"
        losses = records[f"{name}/sgd_losses"]
        assert losses[-1] < losses[0], f"{name}: SGD did not lower the loss: {losses.tolist()}"
        if has_bn:
            assert records[f"{name}/after_forward/num_batches_tracked"].item() == 1, name
        for key in [k for k in records if k.startswith(f"{name}/grad")]:
            assert records[key].abs().max() > 0, f"{key} is all zero"


def main():
    if sys.byteorder != "little":
        raise SystemExit("make_golden_torchvision.py writes the host's byte order and expects little-endian")
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    w = GoldenWriter()
    add_hash_checks(w)
    for name in MODELS:
        add_model(w, name)
    add_adaptive_pool(w)
    path = os.path.join(outdir, "torchvision_v1.bin")
    size = w.write(path)
    records = read_golden(path)
    assert list(records) == list(w.records), path
    for name, t in w.records.items():
        r = records[name]
        assert r.dtype == t.dtype and r.shape == t.shape and torch.equal(r, t), name
    check(records)
    print(f"{path}: {len(records)} records, {size} bytes (torch {torch.__version__}, "
          f"torchvision {torchvision.__version__})")


if __name__ == "__main__":
    main()
