#!/usr/bin/python3
"""Writes mobile_v1.bin: torchvision's mobilenet_v3_small and efficientnet_b0 on one small batch, for ember's zoo twins (tests/unit/test_golden_mobile.cpp).

Run:  /usr/bin/python3 tests/golden/make_golden_mobile.py [OUTDIR]     (default: this folder)
Needs Debian's python3-torch and python3-torchvision (torch 1.13, torchvision 0.14, CPU).
Deterministic: one thread, no random draws at all.

No weights are stored: every parameter, buffer, input and label comes from the integer hash of
make_golden_torchvision.py (tests/golden/hash_fill.h is its C++ twin, bit for bit; the file holds a
few of its values so the two are checked against each other):

    u(name, i) = top 24 bits of splitmix64(fnv1a64(name) XOR i), as a float in [-1, 1) (k / 2^23 - 1)

A state_dict entry `key` of a model holding tensor t is filled, in float64 then rounded to float32:
    dim >= 2 (conv, linear weights)   u * sqrt(3 / fan_in)   fan_in = t.shape[1] * prod(t.shape[2:])
    *.running_mean                    0.1 * u
    *.running_var                     1 + 0.5 * u            in [0.5, 1.5)
    other 1-d *.weight (BN)           1 + 0.25 * u
    other 1-d *.bias                  0.1 * u
    *.num_batches_tracked             left at 0
The input is u("<model>/input", i) and label i is splitmix64(fnv1a64("<model>/labels") XOR i) mod
the class count.

Dropout and stochastic depth draw random masks that cannot be reproduced, so "train" below means
train mode (batch norm on batch statistics, updating its running statistics) with every Dropout and
StochasticDepth module switched to eval mode (the identity); "eval" is eval mode throughout. Stochastic
depth is still called where torchvision calls it (ember's MBConv too), it just passes the tensor on.

The reference numbers are PyTorch's in float64 (model.double(), from the same float32 values); next to
each, PyTorch's own float32 error on it (one thread), which sizes the C++ test's tolerance.

Records, for <model> in mobilenet_v3_small, efficientnet_b0 (10 classes, 3 channels):
    <model>/state_keys        int64 bytes of the state_dict keys joined by '\\n', in order
    <model>/state_shapes      int64: per key, ndim then the dims
    <model>/state_dtypes      int64: per key, 0 float32 or 2 int64
    <model>/num_parameters    int64 (2,): the parameter count at 10 classes and at 1000 classes
    <model>/bn_settings       float64 (2,): features.0.1's eps and momentum (every BN has the same)
    <model>/stochastic_depth  float64: each StochasticDepth module's p, in module order (efficientnet_b0)
    <model>/input             (2, 3, 64, 64) float32
    <model>/labels            (2,) int64
  float64, from the hashed state each time:
    <model>/logits_eval, loss_eval, grad_eval/<key>      eval mode; loss = mean cross-entropy; <key>: the
                              first conv's weight (features.0.0), the first BN's weight and bias
                              (features.0.1), the last linear's weight and bias
    <model>/logits_train, loss_train, grad_train/<key>   train mode (dropout and stochastic depth off)
    <model>/after_forward/<key>   features.0.1.running_mean, running_var, num_batches_tracked (int64)
                              after that train-mode forward (checks BN momentum: 0.01 in MobileNetV3)
    <model>/sgd_losses        (4,): the loss before each of 3 SGD steps (lr 0.01, momentum 0.9, no weight
                              decay) on the same batch, and the loss after the third; train mode with
                              dropout and stochastic depth off for mobilenet_v3_small, eval mode for
                              efficientnet_b0 (SGD_TRAIN_MODE says why)
    <model>/sgd_settings      float64 [lr, momentum, 1 if train mode else 0] of those steps
    <model>/torch_f32_error/<what>   0-d float64, for each floating record above: PyTorch float32's
                              max |f32 - f64| / max |f64| over the tensor
The hash's own check values:
    hash/names, hash/name_index, hash/index, hash/bits, hash/uniform   as in torchvision_v1.bin
"""

import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
import torchvision
from torchvision.ops import StochasticDepth

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_golden import GoldenWriter, read_golden  # noqa: E402

CLASSES = 10
BATCH = 2
SIZE = 64
SGD_STEPS = 3


# ---- the hash: make_golden_torchvision.py's (tests/golden/hash_fill.h is its C++ twin) ----
from make_golden_torchvision import fnv1a64, hash_bits, hash_uniform, hashed_state, splitmix64  # noqa: E402,F401


# ---- the models ---------------------------------------------------------------------------------

# name: (constructor, last linear)
MODELS = {
    "mobilenet_v3_small": (torchvision.models.mobilenet_v3_small, "classifier.3"),
    "efficientnet_b0": (torchvision.models.efficientnet_b0, "classifier.1"),
}
FIRST_CONV, FIRST_BN = "features.0.0", "features.0.1"
SGD_LR = 0.01
# The models whose SGD steps run in train mode (dropout and stochastic depth off). efficientnet_b0 steps
# in eval mode: with train-mode batch norm over 2 images (BN eps 1e-5; MobileNetV3's is 1e-3) its float32
# trajectory depends on summation order (its last loss moves by 3.6e-3 relative between PyTorch's own 1
# and 2 threads; float64 losses 2.139, 1.582, 1.178, 0.570). Its train-mode forward and backward are
# still recorded (logits_train, grad_train) and checked.
SGD_TRAIN_MODE = {"mobilenet_v3_small"}


def text_record(strings):
    return torch.tensor(list("\n".join(strings).encode("utf-8")), dtype=torch.int64)


def build(name, classes=CLASSES):
    model = MODELS[name][0](num_classes=classes)
    model.load_state_dict(hashed_state(model))
    return model


def set_mode(model, train):
    """train: batch norm on batch statistics, dropout and stochastic depth off (their masks are random)."""
    model.train(train)
    for m in model.modules():
        if isinstance(m, (torch.nn.Dropout, StochasticDepth)):
            m.eval()


def batch(name):
    x = torch.from_numpy(hash_uniform(f"{name}/input", BATCH * 3 * SIZE * SIZE).astype(np.float32))
    y = torch.from_numpy((hash_bits(f"{name}/labels", BATCH) % np.uint64(CLASSES)).astype(np.int64))
    return x.reshape(BATCH, 3, SIZE, SIZE), y


def relative_error(got, want):
    """max |got - want| / max |want| over the tensor (normwise: tiny elements do not dominate)."""
    return ((got.double() - want).abs().max() / want.abs().max().clamp_min(1e-30)).item()


def run_model(name, dtype):
    """Every recorded number of one model, computed in `dtype` from the hashed state: {what: tensor}."""
    last = MODELS[name][1]
    x, y = batch(name)
    x = x.to(dtype)
    out = {}
    grad_keys = [f"{FIRST_CONV}.weight", f"{FIRST_BN}.weight", f"{FIRST_BN}.bias", f"{last}.weight", f"{last}.bias"]
    for mode in ("eval", "train"):
        model = build(name).to(dtype)
        set_mode(model, mode == "train")
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        loss.backward()
        out[f"logits_{mode}"], out[f"loss_{mode}"] = logits.detach(), loss.detach()
        params = dict(model.named_parameters())
        for key in grad_keys:
            out[f"grad_{mode}/{key}"] = params[key].grad.clone()
        if mode == "train":
            state = model.state_dict()
            for key in ("running_mean", "running_var", "num_batches_tracked"):
                out[f"after_forward/{FIRST_BN}.{key}"] = state[f"{FIRST_BN}.{key}"].clone()
    model = build(name).to(dtype)
    set_mode(model, name in SGD_TRAIN_MODE)
    opt = torch.optim.SGD(model.parameters(), lr=SGD_LR, momentum=0.9)
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
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    w.add(f"{name}/num_parameters", torch.tensor([count(model), count(MODELS[name][0]())], dtype=torch.int64))
    bn = model.features[0][1]
    assert all(m.eps == bn.eps and m.momentum == bn.momentum for m in model.modules()
               if isinstance(m, torch.nn.BatchNorm2d)), name
    w.add(f"{name}/bn_settings", torch.tensor([bn.eps, bn.momentum], dtype=torch.float64))
    sd = [m.p for m in model.modules() if isinstance(m, StochasticDepth)]
    if sd:
        w.add(f"{name}/stochastic_depth", torch.tensor(sd, dtype=torch.float64))
    x, y = batch(name)
    w.add(f"{name}/input", x)
    w.add(f"{name}/labels", y)
    w.add(f"{name}/sgd_settings", torch.tensor([SGD_LR, 0.9, float(name in SGD_TRAIN_MODE)], dtype=torch.float64))
    ref = run_model(name, torch.float64)
    f32 = run_model(name, torch.float32)
    for what, t in ref.items():
        w.add(f"{name}/{what}", t)
    for what, t in ref.items():
        if t.is_floating_point():
            w.add(f"{name}/torch_f32_error/{what}", torch.tensor(relative_error(f32[what], t), dtype=torch.float64))
    worst = max(relative_error(f32[k], t) for k, t in ref.items() if t.is_floating_point())
    losses = ref["sgd_losses"].tolist()
    print(f"{name}: {count(model)} parameters ({count(MODELS[name][0]())} at 1000 classes), SGD loss "
          f"{losses[0]:.4f} -> {losses[-1]:.4f}, eval logits max |.| {ref['logits_eval'].abs().max().item():.3f}, "
          f"train {ref['logits_train'].abs().max().item():.3f}, torch float32 vs float64: largest relative error "
          f"{worst:.2e}")


HASH_CHECKS = [("features.0.0.weight", 0), ("features.0.0.weight", 431), ("mobilenet_v3_small/input", 24575),
               ("features.1.0.block.1.fc2.bias", 15), ("", 0), ("x", (1 << 40) + 7)]


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
    assert int(splitmix64(np.array([0], dtype=np.uint64))[0]) == 0xE220A8397B1DCDAF
    assert fnv1a64("a") == 0xAF63DC4C8601EC8C  # FNV-1a 64 test vector
    expected_counts = {"mobilenet_v3_small": 2542856, "efficientnet_b0": 5288548}
    for name in MODELS:
        model = build(name)
        keys = bytes(records[f"{name}/state_keys"].tolist()).decode("utf-8").split("\n")
        assert keys == list(model.state_dict().keys()), name
        assert records[f"{name}/num_parameters"][1].item() == expected_counts[name], name
        x, y = batch(name)
        assert torch.equal(records[f"{name}/input"], x) and torch.equal(records[f"{name}/labels"], y), name
        model = model.double().eval()
        with torch.no_grad():
            assert torch.equal(model(x.double()), records[f"{name}/logits_eval"]), f"{name}: not deterministic"
        for mode in ("eval", "train"):
            assert records[f"{name}/logits_{mode}"].abs().max() > 0.1, f"{name}: {mode} logits are nearly zero"
        losses = records[f"{name}/sgd_losses"]
        assert losses[-1] < losses[0], f"{name}: SGD did not lower the loss: {losses.tolist()}"
        assert records[f"{name}/after_forward/{FIRST_BN}.num_batches_tracked"].item() == 1, name
        for key in [k for k in records if k.startswith(f"{name}/grad")]:
            assert records[key].abs().max() > 0, f"{key} is all zero"
    sd = records["efficientnet_b0/stochastic_depth"]
    assert sd.numel() == 16 and sd[0] == 0 and abs(sd[-1].item() - 0.2 * 15 / 16) < 1e-15, sd


def main():
    if sys.byteorder != "little":
        raise SystemExit("make_golden_mobile.py writes the host's byte order and expects little-endian")
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    w = GoldenWriter()
    add_hash_checks(w)
    for name in MODELS:
        add_model(w, name)
    path = os.path.join(outdir, "mobile_v1.bin")
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
