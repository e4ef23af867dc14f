#!/usr/bin/python3
"""Writes ember's golden reference files from PyTorch: models_v1.bin and ops_v1.bin, and (with
--bf16) models_bf16_v1.bin.

Run:  /usr/bin/python3 tests/golden/make_golden.py OUTDIR          (OUTDIR is normally tests/golden)
      /usr/bin/python3 tests/golden/make_golden.py --bf16 OUTDIR   only models_bf16_v1.bin, from the
                                                                   weights in OUTDIR/models_v1.bin
Needs Debian's python3-torch (PyTorch 1.13, CPU). Deterministic: one thread, a fixed seed per
model and per op case, so a rerun with the same torch writes byte-identical files.

File format (EMBGOLD1, version 1), all integers little-endian:
    8 bytes   magic "EMBGOLD1"
    u32       version (= 1)
    u32       record count
    then, per record:
        u32         name length in bytes
        bytes       name (UTF-8, no terminator), unique within the file
        u32         dtype code: 0 = float32, 1 = float64, 2 = int64
        u32         ndim (0 for a scalar)
        ndim x i64  dims
        bytes       raw little-endian row-major data, prod(dims) * itemsize bytes
The file ends right after the last record; a reader rejects trailing bytes.
The C++ reader is tests/golden/golden_file.h.

Record naming:
    models_v1.bin   <model>/param/<state_dict key>      initial weights (float32, default init)
                    <model>/input, <model>/labels       (8,1,28,28) float32, (8,) int64 in 0..9
                    <model>/logits, <model>/loss        eval mode (dropout off), bncnn in train mode
                                                        (batch statistics); loss = mean CE, shape []
                    <model>/grad/<state_dict key>       d loss / d param at the initial weights
                    <model>/sgd_losses                  (10,) loss before each SGD step
                    <model>/sgd_final/<state_dict key>  weights after the 10 SGD steps
                    <model>/adamw_losses                (10,) loss before each AdamW step
    ops_v1.bin      <op>/<case>/<tensor>                float64 tensors, int64 targets/params
                    inputs by their functional-API name (input, weight, bias, target, a, b, ...),
                    output, grad_output (random upstream gradient), grad_<input> for each
                    differentiable input; params (int64) and scalars (float64) documented per op.
    models_bf16_v1.bin  <model>/param_sums              (K,) float64, the sum of each initial weight
                                                        of models_v1.bin, in state_dict order
                    <model>/logits, <model>/loss        under torch.autocast("cpu", bfloat16), eval
                                                        mode, models_v1.bin's weights and batch
                    <model>/step/<state_dict key>       weights after one SGD step from there (the
                                                        first 8 rows of a tensor over 100,000 values)
                    <model>/rounded_operands/...        logits, loss, step/<key> again with ember's
                                                        policy written in float32 PyTorch ops
                                                        (RoundedOperands) instead of torch.autocast
"""

import io
import os
import struct
import sys
import zlib

import torch
import torch.nn as nn
import torch.nn.functional as F

MAGIC = b"EMBGOLD1"
VERSION = 1
DTYPE_CODES = {torch.float32: 0, torch.float64: 1, torch.int64: 2}
CODE_DTYPES = {code: dtype for dtype, code in DTYPE_CODES.items()}
ITEMSIZE = {0: 4, 1: 8, 2: 8}

# Reduction codes stored in loss `params` (matches ATen's Reduction enum).
REDUCTION = {"none": 0, "mean": 1, "sum": 2}


# ---- writer / reader ---------------------------------------------------------------------------

class GoldenWriter:
    """Collects named tensors in insertion order; refuses duplicate names and unsupported dtypes."""

    def __init__(self):
        self.records = {}

    def add(self, name, tensor):
        if name in self.records:
            raise ValueError(f"duplicate record name {name!r}")
        t = torch.as_tensor(tensor).detach()
        if t.dtype not in DTYPE_CODES:
            raise ValueError(f"record {name!r}: unsupported dtype {t.dtype}")
        self.records[name] = t.contiguous().clone()

    def to_bytes(self):
        out = io.BytesIO()
        out.write(MAGIC)
        out.write(struct.pack("<II", VERSION, len(self.records)))
        for name, t in self.records.items():
            encoded = name.encode("utf-8")
            out.write(struct.pack("<I", len(encoded)))
            out.write(encoded)
            out.write(struct.pack("<II", DTYPE_CODES[t.dtype], t.dim()))
            out.write(struct.pack(f"<{t.dim()}q", *t.shape))
            # numpy's tobytes is row-major; '<' byte order is asserted at start-up.
            out.write(t.numpy().tobytes(order="C"))
        return out.getvalue()

    def write(self, path):
        data = self.to_bytes()
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
        return len(data)


def read_golden(path):
    """Independent strict reader, used to check what was written. Returns {name: tensor}."""
    with open(path, "rb") as f:
        data = f.read()
    pos = 0

    def take(n, what):
        nonlocal pos
        if pos + n > len(data):
            raise ValueError(f"{path}: truncated while reading {what} at offset {pos}")
        chunk = data[pos:pos + n]
        pos += n
        return chunk

    if take(8, "magic") != MAGIC:
        raise ValueError(f"{path}: bad magic")
    version, count = struct.unpack("<II", take(8, "header"))
    if version != VERSION:
        raise ValueError(f"{path}: version {version}, expected {VERSION}")
    records = {}
    for _ in range(count):
        (name_len,) = struct.unpack("<I", take(4, "name length"))
        name = take(name_len, "name").decode("utf-8")
        code, ndim = struct.unpack("<II", take(8, f"{name} dtype/ndim"))
        dims = list(struct.unpack(f"<{ndim}q", take(8 * ndim, f"{name} dims")))
        numel = 1
        for d in dims:
            numel *= d
        raw = take(numel * ITEMSIZE[code], f"{name} data")
        t = torch.frombuffer(bytearray(raw), dtype=CODE_DTYPES[code]) if numel else \
            torch.empty(0, dtype=CODE_DTYPES[code])
        if name in records:
            raise ValueError(f"{path}: duplicate record {name}")
        records[name] = t.reshape(dims).clone()
    if pos != len(data):
        raise ValueError(f"{path}: {len(data) - pos} trailing bytes")
    return records


def seed_for(name):
    """A stable per-case seed, so adding a case never changes the others."""
    return zlib.crc32(name.encode("utf-8"))


# ---- models ------------------------------------------------------------------------------------

class MnistNet(nn.Module):
    """pytorch/examples mnist/main.py Net, returning logits (no log_softmax)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.dropout2(x)
        return self.fc2(x)


class LeNet5(nn.Module):
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
        return self.fc3(x)


class BnCnn(nn.Module):
    """ember's bncnn: two 3x3 conv + batch norm + relu + max-pool stages, then one linear layer."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(32)
        self.fc = nn.Linear(32 * 7 * 7, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        return self.fc(torch.flatten(x, 1))


MODELS = {"mnistnet": MnistNet, "lenet5": LeNet5, "bncnn": BnCnn}
# Models recorded in training mode: batch norm normalises with the batch's statistics and updates
# its running statistics (in eval mode at initialisation it would be nearly the identity). Such a
# model must have no dropout, so its numbers stay deterministic.
TRAIN_MODE = {"bncnn"}


def set_mode(model, name):
    model.train(name in TRAIN_MODE)
BATCH = 8
STEPS = 10


def train_steps(name, init_state, x, y, make_opt):
    """Trains a fresh copy from init_state on the one batch; returns (losses before each step, final state)."""
    model = MODELS[name]()
    model.load_state_dict(init_state)
    set_mode(model, name)  # dropout off: the recorded trajectory is deterministic
    opt = make_opt(model.parameters())
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        losses.append(loss.item())
        loss.backward()
        opt.step()
    return torch.tensor(losses, dtype=torch.float32), model.state_dict()


def add_model(w, name):
    torch.manual_seed(seed_for(name))
    model_cls = MODELS[name]
    model = model_cls()  # PyTorch default init, drawn from the seeded generator
    x = torch.randn(BATCH, 1, 28, 28)
    y = torch.randint(0, 10, (BATCH,), dtype=torch.int64)
    init_state = {k: v.detach().clone() for k, v in model.state_dict().items()}

    for key, value in init_state.items():
        w.add(f"{name}/param/{key}", value)
    w.add(f"{name}/input", x)
    w.add(f"{name}/labels", y)

    set_mode(model, name)
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    loss.backward()
    w.add(f"{name}/logits", logits)
    w.add(f"{name}/loss", loss)  # 0-d
    for key, p in model.named_parameters():
        w.add(f"{name}/grad/{key}", p.grad)

    sgd_losses, sgd_state = train_steps(
        name, init_state, x, y,
        lambda ps: torch.optim.SGD(ps, lr=0.01, momentum=0.9, weight_decay=1e-4))
    w.add(f"{name}/sgd_losses", sgd_losses)
    for key, value in sgd_state.items():
        w.add(f"{name}/sgd_final/{key}", value)

    adamw_losses, _ = train_steps(
        name, init_state, x, y,
        lambda ps: torch.optim.AdamW(ps, lr=1e-3, weight_decay=0.01))
    w.add(f"{name}/adamw_losses", adamw_losses)


def check_models(records):
    """Rebuilds each model from the file's weights and checks every stored number against it."""
    for name, model_cls in MODELS.items():
        model = model_cls()
        state = {k[len(f"{name}/param/"):]: v for k, v in records.items()
                 if k.startswith(f"{name}/param/")}
        model.load_state_dict(state)
        set_mode(model, name)
        x, y = records[f"{name}/input"], records[f"{name}/labels"]
        logits = model(x)
        assert torch.equal(logits, records[f"{name}/logits"]), name
        loss = F.cross_entropy(logits, y)
        assert torch.equal(loss, records[f"{name}/loss"]), name
        loss.backward()
        for key, p in model.named_parameters():
            assert torch.equal(p.grad, records[f"{name}/grad/{key}"]), (name, key)
        for opt in ("sgd", "adamw"):
            losses = records[f"{name}/{opt}_losses"]
            assert losses.shape == (STEPS,), (name, opt)
            assert losses[0].item() == loss.item(), (name, opt)
            assert losses[-1] < losses[0], f"{name}/{opt}: loss did not go down: {losses.tolist()}"
        # The weights after SGD must reproduce the loss after the last step, below the last recorded.
        final = {k[len(f"{name}/sgd_final/"):]: v for k, v in records.items()
                 if k.startswith(f"{name}/sgd_final/")}
        assert final.keys() == state.keys(), name
        model.load_state_dict(final)
        with torch.no_grad():
            after = F.cross_entropy(model(x), y).item()
        assert after < records[f"{name}/sgd_losses"][-1].item(), name
        assert y.min() >= 0 and y.max() <= 9, name


# ---- ops ---------------------------------------------------------------------------------------

def add_op_case(w, prefix, fn, inputs, params=None, scalars=None, extra_outputs=None):
    """Records inputs, output = fn(**inputs), a random grad_output, and grad_<name> for every
    floating-point input. extra_outputs(inputs) -> {name: tensor} adds state read after the call."""
    torch.manual_seed(seed_for(prefix))
    inputs = {k: (v() if callable(v) else v) for k, v in inputs.items()}
    leaves = {}
    for k, v in inputs.items():
        v = v.detach().clone()
        if v.is_floating_point():
            v.requires_grad_(True)
        leaves[k] = v
        w.add(f"{prefix}/{k}", v)
    # Buffers that fn mutates (batch norm running stats) are passed without grad.
    call_args = {k: (v.detach().clone() if k.startswith("running_") else v) for k, v in leaves.items()}
    output = fn(**call_args)
    grad_output = torch.randn(output.shape, dtype=output.dtype)
    differentiable = {k: v for k, v in leaves.items() if v.requires_grad and not k.startswith("running_")}
    grads = torch.autograd.grad(output, list(differentiable.values()), grad_output)
    w.add(f"{prefix}/output", output)
    w.add(f"{prefix}/grad_output", grad_output)
    for k, g in zip(differentiable, grads):
        w.add(f"{prefix}/grad_{k}", g)
    if extra_outputs is not None:
        for k, v in extra_outputs(call_args).items():
            w.add(f"{prefix}/{k}", v)
    if params is not None:
        w.add(f"{prefix}/params", torch.tensor(params, dtype=torch.int64))
    if scalars is not None:
        w.add(f"{prefix}/scalars", torch.tensor(scalars, dtype=torch.float64))
    # The recorded gradients are only worth comparing against if they are right.
    if differentiable:
        def as_fn(*args):
            a = dict(call_args)
            for k, v in zip(differentiable, args):
                a[k] = v
            for k in a:
                if k.startswith("running_"):
                    a[k] = leaves[k].detach().clone()
            return fn(**a)
        assert torch.autograd.gradcheck(as_fn, tuple(differentiable.values())), prefix


def randn(*shape):
    return lambda: torch.randn(*shape, dtype=torch.float64)


def add_ops(w):
    # conv2d params: [stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups, has_bias]
    conv_cases = {
        #            input        weight          stride  pad     dil     groups bias
        "stride2":  ((2, 3, 7, 8), (4, 3, 3, 3), (2, 2), (0, 0), (1, 1), 1, True),
        "padding1": ((2, 3, 5, 6), (4, 3, 3, 3), (1, 1), (1, 1), (1, 1), 1, True),
        "dilation2": ((2, 2, 8, 7), (3, 2, 3, 3), (1, 1), (0, 0), (2, 2), 1, True),
        "groups2":  ((2, 4, 6, 5), (6, 2, 3, 3), (1, 1), (1, 1), (1, 1), 2, True),
        "mixed":    ((1, 4, 8, 7), (4, 2, 3, 2), (2, 1), (1, 0), (1, 2), 2, True),
        "nobias":   ((2, 3, 5, 5), (2, 3, 3, 3), (1, 1), (0, 0), (1, 1), 1, False),
        "kernel1x1": ((2, 3, 4, 4), (5, 3, 1, 1), (1, 1), (0, 0), (1, 1), 1, True),
    }
    for case, (ishape, wshape, stride, pad, dil, groups, bias) in conv_cases.items():
        inputs = {"input": randn(*ishape), "weight": randn(*wshape)}
        if bias:
            inputs["bias"] = randn(wshape[0])
        add_op_case(
            w, f"conv2d/{case}",
            lambda input, weight, bias=None, s=stride, p=pad, d=dil, g=groups:
                F.conv2d(input, weight, bias, stride=s, padding=p, dilation=d, groups=g),
            inputs, params=[*stride, *pad, *dil, groups, int(bias)])

    # max_pool2d params: [kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, dilation_h,
    #                     dilation_w, ceil_mode]
    pool_cases = {
        "k2s2":   ((2, 3, 6, 6), (2, 2), (2, 2), (0, 0)),
        "k3s2p1": ((2, 3, 7, 7), (3, 3), (2, 2), (1, 1)),
    }
    for case, (ishape, k, s, p) in pool_cases.items():
        add_op_case(w, f"max_pool2d/{case}",
                    lambda input, k=k, s=s, p=p: F.max_pool2d(input, k, s, p),
                    {"input": randn(*ishape)}, params=[*k, *s, *p, 1, 1, 0])

    # avg_pool2d params: [kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, ceil_mode,
    #                     count_include_pad]
    avg_cases = {
        "k2":                ((2, 3, 6, 6), (2, 2), (2, 2), (0, 0), True),
        "k3s2p1":            ((2, 3, 7, 7), (3, 3), (2, 2), (1, 1), True),
        "k3s2p1_exclude_pad": ((2, 3, 7, 7), (3, 3), (2, 2), (1, 1), False),
    }
    for case, (ishape, k, s, p, include) in avg_cases.items():
        add_op_case(w, f"avg_pool2d/{case}",
                    lambda input, k=k, s=s, p=p, inc=include:
                        F.avg_pool2d(input, k, s, p, ceil_mode=False, count_include_pad=inc),
                    {"input": randn(*ishape)}, params=[*k, *s, *p, 0, int(include)])

    # adaptive_avg_pool2d params: [out_h, out_w]
    add_op_case(w, "adaptive_avg_pool2d/5x7_to_2x3",
                lambda input: F.adaptive_avg_pool2d(input, (2, 3)),
                {"input": randn(2, 3, 5, 7)}, params=[2, 3])

    # batch_norm params: [training]; scalars: [momentum, eps]. running_mean/running_var are the
    # stats before the call; running_mean_after/running_var_after after it (training updates them
    # with the unbiased batch variance; eval leaves them unchanged and normalizes with them).
    momentum, eps = 0.1, 1e-5
    for case, training, ishape in (("train", True, (4, 3, 3, 5)), ("eval", False, (4, 3, 3, 5)),
                                   ("train_2d", True, (6, 4))):
        c = ishape[1]
        add_op_case(
            w, f"batch_norm/{case}",
            lambda input, weight, bias, running_mean, running_var, t=training:
                F.batch_norm(input, running_mean, running_var, weight, bias,
                             training=t, momentum=momentum, eps=eps),
            {"input": randn(*ishape), "weight": lambda c=c: 1.0 + 0.5 * torch.randn(c, dtype=torch.float64),
             "bias": randn(c), "running_mean": lambda c=c: 0.3 * torch.randn(c, dtype=torch.float64),
             "running_var": lambda c=c: 0.5 + torch.rand(c, dtype=torch.float64)},
            params=[int(training)], scalars=[momentum, eps],
            extra_outputs=lambda a: {"running_mean_after": a["running_mean"],
                                     "running_var_after": a["running_var"]})

    # softmax / log_softmax params: [dim]
    for op, fn in (("softmax", F.softmax), ("log_softmax", F.log_softmax)):
        add_op_case(w, f"{op}/2d_dim1", lambda input, fn=fn: fn(input, dim=1),
                    {"input": randn(4, 6)}, params=[1])
        add_op_case(w, f"{op}/3d_dim1", lambda input, fn=fn: fn(input, dim=1),
                    {"input": randn(2, 5, 3)}, params=[1])

    # cross_entropy (class indices) params: [reduction (0 none, 1 mean, 2 sum), ignore_index];
    # scalars: [label_smoothing]. input is logits (N, C); target (N,) int64.
    n, c = 6, 5
    ce_cases = {
        "mean":            ("mean", -100, 0.0, False),
        "sum":             ("sum", -100, 0.0, False),
        "none":            ("none", -100, 0.0, False),
        "label_smoothing": ("mean", -100, 0.1, False),
        "ignore_index":    ("mean", -100, 0.0, True),
        "ignore_index_sum": ("sum", -100, 0.0, True),
        "ignore_index_label_smoothing": ("mean", -100, 0.1, True),
    }
    for case, (reduction, ignore, smoothing, some_ignored) in ce_cases.items():
        def target(some_ignored=some_ignored):
            t = torch.randint(0, c, (n,), dtype=torch.int64)
            if some_ignored:
                t[1] = -100
                t[4] = -100
            return t
        add_op_case(w, f"cross_entropy/{case}",
                    lambda input, target, r=reduction, i=ignore, ls=smoothing:
                        F.cross_entropy(input, target, reduction=r, ignore_index=i, label_smoothing=ls),
                    {"input": randn(n, c), "target": target},
                    params=[REDUCTION[reduction], ignore], scalars=[smoothing])

    # nll_loss params: [reduction, ignore_index]; input is treated as log-probabilities (N, C).
    for case, reduction, some_ignored in (("mean", "mean", False), ("sum", "sum", False),
                                          ("ignore_index", "mean", True)):
        def target(some_ignored=some_ignored):
            t = torch.randint(0, c, (n,), dtype=torch.int64)
            if some_ignored:
                t[2] = -100
            return t
        add_op_case(w, f"nll_loss/{case}",
                    lambda input, target, r=reduction: F.nll_loss(input, target, reduction=r, ignore_index=-100),
                    {"input": lambda: torch.log_softmax(torch.randn(n, c, dtype=torch.float64), 1),
                     "target": target},
                    params=[REDUCTION[reduction], -100])

    # mse_loss params: [reduction]
    for reduction in ("mean", "sum"):
        add_op_case(w, f"mse_loss/{reduction}",
                    lambda input, target, r=reduction: F.mse_loss(input, target, reduction=r),
                    {"input": randn(3, 4), "target": randn(3, 4)}, params=[REDUCTION[reduction]])

    # gelu: exact erf form, 0.5 * x * (1 + erf(x / sqrt(2))).
    add_op_case(w, "gelu/erf", lambda input: F.gelu(input, approximate="none"),
                {"input": lambda: 2.0 * torch.randn(3, 7, dtype=torch.float64)})

    # linear: output = input @ weight^T + bias. params: [has_bias]
    add_op_case(w, "linear/2d", lambda input, weight, bias: F.linear(input, weight, bias),
                {"input": randn(4, 5), "weight": randn(3, 5), "bias": randn(3)}, params=[1])
    add_op_case(w, "linear/3d", lambda input, weight, bias: F.linear(input, weight, bias),
                {"input": randn(2, 3, 5), "weight": randn(4, 5), "bias": randn(4)}, params=[1])
    add_op_case(w, "linear/nobias", lambda input, weight: F.linear(input, weight),
                {"input": randn(4, 5), "weight": randn(3, 5)}, params=[0])

    # matmul: torch.matmul(a, b), batch dims broadcast.
    add_op_case(w, "matmul/2d", lambda a, b: torch.matmul(a, b), {"a": randn(3, 4), "b": randn(4, 5)})
    add_op_case(w, "matmul/broadcast", lambda a, b: torch.matmul(a, b),
                {"a": randn(2, 1, 3, 4), "b": randn(5, 4, 2)})


def check_ops(records):
    """Spot checks on the re-read ops file that do not reuse the code that wrote it."""
    assert records["matmul/broadcast/output"].shape == (2, 5, 3, 2)
    for case in ("2d_dim1", "3d_dim1"):
        sm = records[f"softmax/{case}/output"]
        assert torch.allclose(sm.sum(1), torch.ones(()).double())
        lsm = records[f"log_softmax/{case}/output"]
        assert torch.allclose(lsm.exp().sum(1), torch.ones(()).double())
    # ignored targets contribute no gradient
    g = records["cross_entropy/ignore_index/grad_input"]
    t = records["cross_entropy/ignore_index/target"]
    assert (t == -100).sum() == 2 and torch.all(g[t == -100] == 0)
    # batch norm in training updates running stats; in eval mode leaves them alone
    assert not torch.equal(records["batch_norm/train/running_mean"], records["batch_norm/train/running_mean_after"])
    assert torch.equal(records["batch_norm/eval/running_var"], records["batch_norm/eval/running_var_after"])
    x = records["batch_norm/train/input"]
    expected_mean = 0.9 * records["batch_norm/train/running_mean"] + 0.1 * x.mean((0, 2, 3))
    assert torch.allclose(records["batch_norm/train/running_mean_after"], expected_mean)
    expected_var = 0.9 * records["batch_norm/train/running_var"] + 0.1 * x.var((0, 2, 3), unbiased=True)
    assert torch.allclose(records["batch_norm/train/running_var_after"], expected_var)
    for name, t in records.items():
        if name.endswith("/output") or "/grad_" in name:
            assert t.dtype == torch.float64, name
            assert torch.isfinite(t).all(), name
            assert t.abs().sum() > 0, f"{name} is all zeros"
        if not name.endswith(("/params", "/scalars")):
            assert all(d <= 8 for d in t.shape), f"{name}: a dim is over 8: {tuple(t.shape)}"


# ---- bf16 mixed precision (models_bf16_v1.bin) --------------------------------------------------
#
# What ember's autocast (include/ember/autocast.h) is compared against: PyTorch's CPU autocast, the
# recipe of its AMP guide. The forward and the loss run under torch.autocast("cpu", bfloat16), so
# conv2d and linear take bf16 inputs (activations, weights and biases cast on the way in) and
# return bf16; relu and max_pool run on those bf16 values; the loss is computed in float32 from
# the bf16 logits (torch.autocast's float32 list, and ember's policy, keep cross-entropy in f32).
# backward runs outside the context (its ops follow the forward's dtypes: the weight gradients are
# computed in bf16 and reach the float32 parameters through the casts' backward); the SGD step
# updates the float32 weights. Models in eval mode (dropout off), as in models_v1.bin. The fixed
# weights and batch are models_v1.bin's, so the two files share them without storing them twice.
#
# PyTorch's autocast rounds more than ember's: the bias, each conv/linear output and each gradient
# go through bf16 too (repeating exactly those roundings in float32 reproduces its numbers to 0.2%,
# lenet5's logits bitwise). The extra roundings change relu masks and max-pool choices, which moves
# the conv layers' updates by several percent. So the same step is recorded a second time with
# ember's policy written in float32 ops (RoundedOperands), which ember must match closely.

BF16_MODELS = ("mnistnet", "lenet5")
# mnistnet's fc1.weight (128 x 9216) is 95% of its weights; stored whole twice it made this file
# 10 MB, and the golden files travel in the GPU bundle (40 MiB limit). Weights after the step with
# more rows than this keep their first BF16_STEP_ROWS rows (the test compares the same rows).
BF16_STEP_ROWS = 8
BF16_STEP_FULL_NUMEL = 100_000


def step_record(t):
    return t[:BF16_STEP_ROWS].clone() if t.numel() > BF16_STEP_FULL_NUMEL else t
BF16_SGD = {"lr": 0.01, "momentum": 0.9, "weight_decay": 1e-4}


def fp32_case(records, name):
    """models_v1.bin's initial state_dict (in file order), input and labels for `name`."""
    prefix = f"{name}/param/"
    state = {k[len(prefix):]: v for k, v in records.items() if k.startswith(prefix)}
    return state, records[f"{name}/input"], records[f"{name}/labels"]


def autocast_step(name, state, x, y):
    """One SGD step under CPU bf16 autocast from `state`; returns (logits, loss, state after)."""
    model = MODELS[name]()
    model.load_state_dict(state)
    set_mode(model, name)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits = model(x)
        # float() is a no-op for float32 logits and the cast autocast's float32 list would insert
        # for bf16 ones: the loss is the float32 cross-entropy of the bf16 logits either way.
        loss = F.cross_entropy(logits.float(), y)
    opt = torch.optim.SGD(model.parameters(), **BF16_SGD)
    opt.zero_grad()
    loss.backward()
    opt.step()
    after = {k: v.detach().clone() for k, v in model.state_dict().items()}
    return logits.detach(), loss.detach(), after


def bf16_round(t):
    return t.bfloat16().float()


class RoundedOperands(torch.autograd.Function):
    """ember's autocast for conv2d / linear, written with float32 PyTorch ops: the input and the
    weight rounded to bf16, the products (exact in float32) summed in float32, the bias float32;
    a linear's output float32, a convolution's rounded to bf16 (ember's CPU keeps a lowered
    convolution's output in bf16 between ops, as torch.autocast returns it: invisible to a ReLU,
    a max pooling and the next lowered layer's rounding in the forward, but ties in a max
    pooling's windows route its gradient); backward multiplies the bf16-rounded output gradient by
    the rounded operands, returns float32 gradients, and sums the bias gradient from the float32
    output gradient."""

    @staticmethod
    def forward(ctx, x, weight, bias, conv_args):
        xr, wr = bf16_round(x), bf16_round(weight)
        ctx.save_for_backward(xr, wr)
        ctx.conv_args, ctx.has_bias = conv_args, bias is not None
        if conv_args is None:
            return ORIGINAL_LINEAR(xr, wr, bias)
        return bf16_round(ORIGINAL_CONV2D(xr, wr, bias, *conv_args))

    @staticmethod
    def backward(ctx, grad_out):
        xr, wr = ctx.saved_tensors
        gr = bf16_round(grad_out)
        if ctx.conv_args is None:
            gx, gw, gb = gr @ wr, gr.t() @ xr, grad_out.sum(0)
        else:
            stride, padding, dilation, groups = ctx.conv_args
            gx = torch.nn.grad.conv2d_input(xr.shape, wr, gr, stride, padding, dilation, groups)
            gw = torch.nn.grad.conv2d_weight(xr, wr.shape, gr, stride, padding, dilation, groups)
            gb = grad_out.sum((0, 2, 3))
        return gx, gw, gb if ctx.has_bias else None, None


ORIGINAL_CONV2D, ORIGINAL_LINEAR = F.conv2d, F.linear
EMBER_CONV2D_MIN_LOWERED_CHANNELS = 4


def rounded_operands_step(name, state, x, y):
    """autocast_step with ember's policy emulated (RoundedOperands) instead of torch.autocast."""
    def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
        # ember's policy on the CPU (src/ops/autocast.cpp, conv2d_min_lowered_channels): a conv on
        # fewer than 4 input channels (2 without AMX) whose weight gradient is computed stays
        # float32; the same for BF16_MODELS, whose one-channel first convs stay float32 either way.
        if input.shape[1] < EMBER_CONV2D_MIN_LOWERED_CHANNELS and weight.requires_grad:
            return ORIGINAL_CONV2D(input, weight, bias, stride, padding, dilation, groups)
        return RoundedOperands.apply(input, weight, bias, (stride, padding, dilation, groups))

    def linear(input, weight, bias=None):
        return RoundedOperands.apply(input, weight, bias, None)

    F.conv2d, F.linear = conv2d, linear  # nn.Conv2d and nn.Linear call these
    try:
        model = MODELS[name]()
        model.load_state_dict(state)
        set_mode(model, name)
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        opt = torch.optim.SGD(model.parameters(), **BF16_SGD)
        opt.zero_grad()
        loss.backward()
        opt.step()
    finally:
        F.conv2d, F.linear = ORIGINAL_CONV2D, ORIGINAL_LINEAR
    assert logits.dtype == torch.float32, name
    return logits.detach(), loss.detach(), {k: v.detach().clone() for k, v in model.state_dict().items()}


def add_bf16_model(w, fp32_records, name):
    state, x, y = fp32_case(fp32_records, name)
    w.add(f"{name}/param_sums", torch.tensor([v.double().sum().item() for v in state.values()],
                                             dtype=torch.float64))
    logits, loss, after = autocast_step(name, state, x, y)
    if logits.dtype != torch.bfloat16:
        raise SystemExit(f"{name}: torch.autocast('cpu', bfloat16) gave {logits.dtype} logits; this "
                         f"torch ({torch.__version__}) does not autocast on the CPU")
    w.add(f"{name}/logits", logits.float())  # exact: every bf16 value is a float32
    w.add(f"{name}/loss", loss)
    for key, value in after.items():
        w.add(f"{name}/step/{key}", step_record(value))
    logits, loss, after = rounded_operands_step(name, state, x, y)
    w.add(f"{name}/rounded_operands/logits", logits)
    w.add(f"{name}/rounded_operands/loss", loss)
    for key, value in after.items():
        w.add(f"{name}/rounded_operands/step/{key}", step_record(value))


def check_bf16(records, fp32_records):
    """Reruns each case from models_v1.bin and checks the stored numbers against it."""
    for name in BF16_MODELS:
        state, x, y = fp32_case(fp32_records, name)
        sums = torch.tensor([v.double().sum().item() for v in state.values()], dtype=torch.float64)
        assert torch.equal(records[f"{name}/param_sums"], sums), name
        logits, loss, after = autocast_step(name, state, x, y)
        stored = records[f"{name}/logits"]
        assert torch.equal(stored, logits.float()), f"{name}: a rerun gave other logits"
        assert torch.equal(stored, stored.bfloat16().float()), f"{name}: logits are not bf16 values"
        assert torch.equal(records[f"{name}/loss"], loss), name
        # The same network in float32 (models_v1.bin): close, but not equal, or nothing was lowered.
        ref = fp32_records[f"{name}/logits"]
        err = (stored - ref).abs().max().item() / ref.abs().max().item()
        assert 0 < err < 0.05, f"{name}: bf16 logits vs float32: max diff / max |logit| = {err}"
        keys = [k[len(f"{name}/step/"):] for k in records if k.startswith(f"{name}/step/")]
        assert keys == list(state), name
        for key in keys:
            assert torch.equal(records[f"{name}/step/{key}"], step_record(after[key])), (name, key)
            assert not torch.equal(records[f"{name}/step/{key}"], step_record(state[key])), f"{name}: {key} did not move"
        # The emulation of ember's policy reproduces, and differs from the float32 network too.
        logits, loss, after = rounded_operands_step(name, state, x, y)
        assert torch.equal(records[f"{name}/rounded_operands/logits"], logits), name
        assert torch.equal(records[f"{name}/rounded_operands/loss"], loss), name
        emu_err = (logits - ref).abs().max().item() / ref.abs().max().item()
        assert 0 < emu_err < 0.05, f"{name}: rounded-operands logits vs float32: {emu_err}"
        for key in keys:
            assert torch.equal(records[f"{name}/rounded_operands/step/{key}"], step_record(after[key])), (name, key)
        print(f"{name}: bf16 autocast logits vs float32 logits: max diff / max |logit| = {err:.3g}")


def write_bf16(outdir):
    fp32_path = os.path.join(outdir, "models_v1.bin")
    fp32_records = read_golden(fp32_path)  # the fixed weights and batch; never rewritten here
    w = GoldenWriter()
    for name in BF16_MODELS:
        add_bf16_model(w, fp32_records, name)
    path = os.path.join(outdir, "models_bf16_v1.bin")
    size = w.write(path)
    records = read_golden(path)
    assert list(records) == list(w.records), path
    for name, t in w.records.items():
        r = records[name]
        assert r.dtype == t.dtype and r.shape == t.shape and torch.equal(r, t), name
    check_bf16(records, fp32_records)
    print(f"{path}: {len(records)} records, {size} bytes (torch {torch.__version__}, "
          f"weights from {fp32_path})")


def main():
    if sys.byteorder != "little":
        raise SystemExit("make_golden.py writes the host's byte order and expects little-endian")
    args = sys.argv[1:]
    bf16 = "--bf16" in args
    args = [a for a in args if a != "--bf16"]
    outdir = args[0] if args else os.path.dirname(os.path.abspath(__file__))
    os.makedirs(outdir, exist_ok=True)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    if bf16:
        write_bf16(outdir)
        return

    models = GoldenWriter()
    for name in MODELS:
        add_model(models, name)
    ops = GoldenWriter()
    add_ops(ops)

    for writer, filename, check in ((models, "models_v1.bin", check_models), (ops, "ops_v1.bin", check_ops)):
        path = os.path.join(outdir, filename)
        size = writer.write(path)
        records = read_golden(path)
        assert list(records) == list(writer.records), filename
        for name, t in writer.records.items():
            r = records[name]
            assert r.dtype == t.dtype and r.shape == t.shape and torch.equal(r, t), name
        check(records)
        print(f"{path}: {len(records)} records, {size} bytes (torch {torch.__version__})")


if __name__ == "__main__":
    main()
