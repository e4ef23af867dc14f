#!/usr/bin/env python3
"""Writes tests/golden/ops_nn2_v1.bin from PyTorch: the nn functional ops of include/ember/ops_nn.h
(activations, norms, embedding, 1-D and transposed convolutions, 1-D pooling, interpolate, pad modes,
distances, the losses with PyTorch's options), the trajectories of the optimizers Adagrad, Adadelta,
RMSprop (and SGD / Adam with maximize), the learning rates of the LR schedulers, and
clip_grad_norm_ / clip_grad_value_.

Run:  python3 tests/golden/make_golden_nn2.py OUTDIR     (OUTDIR is normally tests/golden)
Needs a torch 2.x (the venv /work/wt/torchvenv had torch 2.15.0, CPU, when the file was written).
Deterministic: one thread, a fixed seed per case (crc32 of its name), so a rerun with the same
torch writes a byte-identical file. The format is make_golden.py's (EMBGOLD1; its docstring);
this script reuses its writer and reader.

Records:
    <op>/<case>/<tensor>      float64 inputs by their functional-API name, output, grad_output,
                              grad_<input> for each differentiable input (make_golden.add_op_case);
                              params (int64) and scalars (float64) as documented per op below.
                              Reductions are coded 0 none, 1 mean, 2 sum, 3 batchmean.
    optim/<case>/trajectory   (steps, n) float64: every parameter flattened and concatenated after
                              each step; optim/<case>/losses (steps,) the loss before each step.
                              The problem: quadratic_problem() below (ember's test builds the same).
    sched/<case>/lrs          (steps + 1, groups) float64: each group's lr after construction and
                              after each step (get_last_lr()); sched/<case>/momentum the first
                              group's momentum (SGD) or beta1 (Adam) where the case cycles it;
                              sched/<case>/metrics the values handed to ReduceLROnPlateau.step.
    clip/<case>/...           grads (before), total_norm, clipped (after); params [kind] and
                              scalars [max_norm or clip_value, norm_type].
"""

import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_golden import GoldenWriter, add_op_case, randn, read_golden, seed_for  # noqa: E402

REDUCTION = {"none": 0, "mean": 1, "sum": 2, "batchmean": 3}


def scaled(scale, *shape):
    return lambda: torch.randn(*shape, dtype=torch.float64) * scale


def distinct(*shape):
    """Values far apart (no ties for max pooling): a shuffled 0.1 * (0..n-1)."""
    def make():
        n = math.prod(shape)
        return (torch.randperm(n).double() * 0.1 - 0.05 * n).reshape(shape)
    return make


def fixed(values, shape=None):
    t = torch.tensor(values, dtype=torch.int64)
    return t.reshape(shape) if shape is not None else t


# ---- functional ops -----------------------------------------------------------------------------

def add_activations(w):
    # leaky_relu scalars [negative_slope]; elu / celu [alpha]; softplus [beta, threshold];
    # hardtanh [min_val, max_val]; glu params [dim]; prelu: input, weight.
    for slope in (0.01, 0.2):
        add_op_case(w, f"leaky_relu/slope{slope}", lambda input, s=slope: F.leaky_relu(input, s),
                    {"input": scaled(2, 4, 5)}, scalars=[slope])
    for alpha in (1.0, 0.5):
        add_op_case(w, f"elu/alpha{alpha}", lambda input, a=alpha: F.elu(input, a), {"input": scaled(2, 4, 5)},
                    scalars=[alpha])
    add_op_case(w, "selu/default", lambda input: F.selu(input), {"input": scaled(2, 4, 5)})
    for alpha in (1.0, 2.0):
        add_op_case(w, f"celu/alpha{alpha}", lambda input, a=alpha: F.celu(input, a), {"input": scaled(2, 4, 5)},
                    scalars=[alpha])
    add_op_case(w, "gelu_tanh/default", lambda input: F.gelu(input, approximate="tanh"), {"input": scaled(2, 4, 5)})
    for beta, threshold in ((1.0, 20.0), (2.0, 1.0)):
        add_op_case(w, f"softplus/beta{beta}_threshold{threshold}",
                    lambda input, b=beta, t=threshold: F.softplus(input, b, t), {"input": scaled(3, 4, 5)},
                    scalars=[beta, threshold])
    for lo, hi in ((-1.0, 1.0), (-0.5, 2.0)):
        add_op_case(w, f"hardtanh/{lo}_{hi}", lambda input, a=lo, b=hi: F.hardtanh(input, a, b),
                    {"input": scaled(2, 4, 5)}, scalars=[lo, hi])
    add_op_case(w, "logsigmoid/wide", lambda input: F.logsigmoid(input), {"input": scaled(10, 4, 5)})
    add_op_case(w, "mish/default", lambda input: F.mish(input), {"input": scaled(3, 4, 5)})
    add_op_case(w, "softsign/default", lambda input: F.softsign(input), {"input": scaled(3, 4, 5)})
    for dim in (-1, 1):
        add_op_case(w, f"glu/dim{dim}", lambda input, d=dim: F.glu(input, d), {"input": randn(2, 4, 6)}, params=[dim])
    add_op_case(w, "prelu/one_weight", lambda input, weight: F.prelu(input, weight),
                {"input": randn(2, 3, 4), "weight": lambda: torch.tensor([0.25], dtype=torch.float64)})
    add_op_case(w, "prelu/per_channel", lambda input, weight: F.prelu(input, weight),
                {"input": randn(2, 3, 4), "weight": lambda: torch.tensor([0.1, -0.3, 0.5], dtype=torch.float64)})


def add_norms(w):
    # layer_norm params [*normalized_shape]; scalars [eps]; weight/bias present when recorded.
    add_op_case(w, "layer_norm/last_dim_affine", lambda input, weight, bias: F.layer_norm(input, [4], weight, bias, 1e-5),
                {"input": randn(2, 3, 4), "weight": randn(4), "bias": randn(4)}, params=[4], scalars=[1e-5])
    add_op_case(w, "layer_norm/two_dims_affine",
                lambda input, weight, bias: F.layer_norm(input, [3, 4], weight, bias, 1e-3),
                {"input": randn(2, 3, 4), "weight": randn(3, 4), "bias": randn(3, 4)}, params=[3, 4], scalars=[1e-3])
    add_op_case(w, "layer_norm/no_affine", lambda input: F.layer_norm(input, [5], eps=1e-5),
                {"input": randn(3, 5)}, params=[5], scalars=[1e-5])
    # group_norm params [num_groups]; scalars [eps]
    add_op_case(w, "group_norm/g2_affine", lambda input, weight, bias: F.group_norm(input, 2, weight, bias, 1e-5),
                {"input": randn(2, 6, 3, 2), "weight": randn(6), "bias": randn(6)}, params=[2], scalars=[1e-5])
    add_op_case(w, "group_norm/g3_no_affine_3d", lambda input: F.group_norm(input, 3, eps=1e-4),
                {"input": randn(2, 6, 5)}, params=[3], scalars=[1e-4])
    add_op_case(w, "group_norm/g1_affine", lambda input, weight, bias: F.group_norm(input, 1, weight, bias, 1e-5),
                {"input": randn(3, 4, 2, 2), "weight": randn(4), "bias": randn(4)}, params=[1], scalars=[1e-5])


def add_distances(w):
    # normalize params [dim]; scalars [p, eps]
    for p, dim in ((2.0, 1), (1.0, -1), (3.0, 0)):
        add_op_case(w, f"normalize/p{p}_dim{dim}", lambda input, p=p, d=dim: F.normalize(input, p, d, 1e-12),
                    {"input": randn(3, 4)}, params=[dim], scalars=[p, 1e-12])
    # cosine_similarity params [dim]; scalars [eps]
    add_op_case(w, "cosine_similarity/dim1", lambda x1, x2: F.cosine_similarity(x1, x2, 1, 1e-8),
                {"x1": randn(3, 4), "x2": randn(3, 4)}, params=[1], scalars=[1e-8])
    add_op_case(w, "cosine_similarity/broadcast_dim-1", lambda x1, x2: F.cosine_similarity(x1, x2, -1, 1e-8),
                {"x1": randn(2, 1, 4), "x2": randn(3, 4)}, params=[-1], scalars=[1e-8])
    # pairwise_distance params [keepdim]; scalars [p, eps]
    for p, keepdim in ((2.0, 0), (1.0, 1), (3.0, 0)):
        add_op_case(w, f"pairwise_distance/p{p}_keepdim{keepdim}",
                    lambda x1, x2, p=p, k=keepdim: F.pairwise_distance(x1, x2, p, 1e-6, bool(k)),
                    {"x1": randn(3, 5), "x2": randn(3, 5)}, params=[keepdim], scalars=[p, 1e-6])


def fixed_inputs(w, prefix, makers):
    """Inputs an op takes without a gradient (class weights: PyTorch refuses requires_grad on them),
    drawn with their own seed and recorded as <prefix>/<name>; returned for the op's closure."""
    out = {}
    for k, make in makers.items():
        torch.manual_seed(seed_for(f"{prefix}/{k}"))
        out[k] = make()
        w.add(f"{prefix}/{k}", out[k])
    return out


def add_op_case_by_definition(w, prefix, fn, inputs, **kwargs):
    """add_op_case for an op whose gradient is not its finite differences by definition (embedding's
    padding_idx row gets none): the gradcheck that add_op_case asserts is skipped."""
    real = torch.autograd.gradcheck
    torch.autograd.gradcheck = lambda *a, **k: True
    try:
        add_op_case(w, prefix, fn, inputs, **kwargs)
    finally:
        torch.autograd.gradcheck = real


def add_embedding(w):
    # params [has_padding_idx, padding_idx]
    idx = fixed([[0, 2, 5], [2, 3, 0]])
    add_op_case(w, "embedding/plain", lambda indices, weight: F.embedding(indices, weight),
                {"indices": idx, "weight": randn(6, 3)}, params=[0, 0])
    add_op_case_by_definition(w, "embedding/padding_idx2", lambda indices, weight: F.embedding(indices, weight, padding_idx=2),
                {"indices": idx, "weight": randn(6, 3)}, params=[1, 2])
    add_op_case_by_definition(w, "embedding/padding_idx_negative", lambda indices, weight: F.embedding(indices, weight, padding_idx=-1),
                {"indices": fixed([1, 5, 5, 4]), "weight": randn(6, 2)}, params=[1, -1])


def add_convs(w):
    # conv1d params [stride, padding, dilation, groups, has_bias]
    for label, (stride, pad, dil, groups) in {"basic": (1, 0, 1, 1), "stride2_pad1_dil2_groups2": (2, 1, 2, 2)}.items():
        add_op_case(w, f"conv1d/{label}",
                    lambda input, weight, bias, s=stride, p=pad, d=dil, g=groups: F.conv1d(input, weight, bias, s, p, d, g),
                    {"input": randn(2, 4, 7), "weight": randn(6, 4 // groups, 3), "bias": randn(6)},
                    params=[stride, pad, dil, groups, 1])
    # conv_transpose2d params [stride_h, stride_w, pad_h, pad_w, out_pad_h, out_pad_w, groups,
    # dilation_h, dilation_w, has_bias]; weight (C_in, C_out / groups, kH, kW)
    cases = {
        "basic": ((1, 1), (0, 0), (0, 0), 1, (1, 1), True, (2, 3, 3, 3), (3, 2, 2, 3)),
        "stride2_pad1_outpad1": ((2, 2), (1, 1), (1, 1), 1, (1, 1), True, (2, 3, 3, 4), (3, 2, 3, 3)),
        "groups2_dilation2_no_bias": ((1, 2), (1, 0), (0, 1), 2, (2, 1), False, (1, 4, 3, 3), (4, 1, 2, 2)),
        "outpad_over_stride_by_dilation": ((1, 1), (0, 0), (1, 1), 1, (2, 2), True, (2, 2, 3, 3), (2, 3, 2, 2)),
    }
    for label, (stride, pad, outpad, groups, dil, bias, ishape, wshape) in cases.items():
        inputs = {"input": randn(*ishape), "weight": randn(*wshape)}
        if bias:
            inputs["bias"] = randn(wshape[1] * groups)

        def fn(input, weight, bias=None, s=stride, p=pad, op=outpad, g=groups, d=dil):
            return F.conv_transpose2d(input, weight, bias, s, p, op, g, d)
        add_op_case(w, f"conv_transpose2d/{label}", fn, inputs,
                    params=[*stride, *pad, *outpad, groups, *dil, int(bias)])
    # conv_transpose1d params [stride, padding, output_padding, groups, dilation, has_bias]
    add_op_case(w, "conv_transpose1d/stride2_groups2",
                lambda input, weight, bias: F.conv_transpose1d(input, weight, bias, 2, 1, 1, 2, 1),
                {"input": randn(2, 4, 5), "weight": randn(4, 3, 3), "bias": randn(6)}, params=[2, 1, 1, 2, 1, 1])
    # conv2d with string padding: params [same (1) / valid (0), dilation_h, dilation_w, groups]
    add_op_case(w, "conv2d_padding/same_3x3", lambda input, weight, bias: F.conv2d(input, weight, bias, padding="same"),
                {"input": randn(2, 3, 5, 6), "weight": randn(4, 3, 3, 3), "bias": randn(4)}, params=[1, 1, 1, 1])
    add_op_case(w, "conv2d_padding/same_4x2_dilation2",
                lambda input, weight, bias: F.conv2d(input, weight, bias, padding="same", dilation=(1, 2)),
                {"input": randn(1, 2, 6, 5), "weight": randn(3, 2, 4, 2), "bias": randn(3)}, params=[1, 1, 2, 1])
    add_op_case(w, "conv2d_padding/valid", lambda input, weight, bias: F.conv2d(input, weight, bias, padding="valid"),
                {"input": randn(2, 3, 5, 6), "weight": randn(4, 3, 2, 3), "bias": randn(4)}, params=[0, 1, 1, 1])
    add_op_case(w, "conv1d_padding/same_k4", lambda input, weight, bias: F.conv1d(input, weight, bias, padding="same"),
                {"input": randn(2, 3, 7), "weight": randn(2, 3, 4), "bias": randn(2)}, params=[1, 1, 1, 1])


def add_pools(w):
    # max_pool1d / avg_pool1d params [kernel, stride, padding, ceil_mode, count_include_pad]
    for label, (k, s, p, ceil) in {"k3s2p1": (3, 2, 1, False), "k2s2_ceil": (2, 2, 0, True)}.items():
        add_op_case(w, f"max_pool1d/{label}", lambda input, k=k, s=s, p=p, c=ceil: F.max_pool1d(input, k, s, p, ceil_mode=c),
                    {"input": distinct(2, 3, 9)}, params=[k, s, p, int(ceil), 1])
        for include in (True, False):
            add_op_case(w, f"avg_pool1d/{label}_include{int(include)}",
                        lambda input, k=k, s=s, p=p, c=ceil, i=include: F.avg_pool1d(input, k, s, p, c, i),
                        {"input": randn(2, 3, 9)}, params=[k, s, p, int(ceil), int(include)])
    # adaptive_avg_pool1d params [output_size]
    add_op_case(w, "adaptive_avg_pool1d/7to3", lambda input: F.adaptive_avg_pool1d(input, 3), {"input": randn(2, 3, 7)},
                params=[3])


INTERP_MODES = {"nearest": 0, "nearest-exact": 1, "linear": 2, "bilinear": 3}


def add_interpolate(w):
    # params [mode (0 nearest, 1 nearest-exact, 2 linear, 3 bilinear), align_corners (-1 unset, 0, 1),
    #         recompute_scale_factor (-1 unset, 0, 1), *size]; scalars [*scale_factor]
    cases = [
        ("nearest_1d_scale2", "nearest", (2, 3, 5), None, [2.0], None, None),
        ("nearest_2d_size", "nearest", (1, 2, 5, 7), [8, 3], None, None, None),
        ("nearest_2d_scale1.7", "nearest", (1, 2, 4, 5), None, [1.7, 1.3], None, None),
        ("nearest_exact_2d_size", "nearest-exact", (1, 2, 5, 7), [8, 3], None, None, None),
        ("linear_scale2.5", "linear", (2, 2, 4), None, [2.5], False, None),
        ("linear_size_align", "linear", (2, 2, 4), [7], None, True, None),
        ("bilinear_scale2", "bilinear", (1, 2, 3, 4), None, [2.0], False, None),
        ("bilinear_size_align", "bilinear", (2, 1, 4, 3), [6, 5], None, True, None),
        ("bilinear_down0.6", "bilinear", (1, 2, 7, 8), None, [0.6, 0.5], False, None),
        ("bilinear_recompute", "bilinear", (1, 1, 4, 5), None, [1.3], False, True),
    ]
    for label, mode, shape, size, scale, align, recompute in cases:
        def fn(input, mode=mode, size=size, scale=scale, align=align, recompute=recompute):
            sf = None if scale is None else (scale[0] if len(scale) == 1 else tuple(scale))
            sz = None if size is None else (size[0] if len(size) == 1 else tuple(size))
            return F.interpolate(input, size=sz, scale_factor=sf, mode=mode, align_corners=align,
                                 recompute_scale_factor=recompute)
        params = [INTERP_MODES[mode], -1 if align is None else int(align), -1 if recompute is None else int(recompute)]
        add_op_case(w, f"interpolate/{label}", fn, {"input": randn(*shape)}, params=params + (size or []),
                    scalars=scale or [])


PAD_MODES = {"constant": 0, "reflect": 1, "replicate": 2, "circular": 3}


def add_pad(w):
    # params [mode (0 constant, 1 reflect, 2 replicate, 3 circular), *pads]; scalars [value]
    cases = [
        ("reflect_1d", "reflect", (2, 5), (2, 3)),
        ("reflect_2d", "reflect", (1, 2, 4, 5), (1, 2, 3, 0)),
        ("replicate_2d", "replicate", (2, 3, 4), (2, 1, 0, 3)),
        ("replicate_3d", "replicate", (1, 1, 2, 3, 4), (1, 1, 2, 0, 1, 2)),
        ("circular_2d", "circular", (1, 2, 3, 4), (2, 1, 3, 1)),
        ("constant_value", "constant", (2, 3, 4), (1, 2, 0, 1)),
    ]
    for label, mode, shape, pads in cases:
        value = 1.5 if mode == "constant" else None
        add_op_case(w, f"pad/{label}", lambda input, p=pads, m=mode, v=value: F.pad(input, p, m, v),
                    {"input": randn(*shape)}, params=[PAD_MODES[mode], *pads], scalars=[value or 0.0])


def add_losses(w):
    # cross_entropy params [reduction, ignore_index, has_weight]; scalars [label_smoothing].
    # Class-index targets are int64 `target`; probability targets a float64 `target` of input's shape.
    def weight():
        return torch.rand(4, dtype=torch.float64) + 0.5
    ce = [
        ("weight_mean", (5, 4), fixed([0, 3, 2, 1, 3]), "mean", -100, True, 0.0),
        ("weight_sum_ignore", (5, 4), fixed([0, -100, 2, 1, 3]), "sum", -100, True, 0.0),
        ("weight_none", (5, 4), fixed([0, 3, 2, 1, 1]), "none", -100, True, 0.0),
        ("kdim_mean", (2, 4, 3, 2), fixed([[[0, 1], [3, 2], [1, 1]], [[2, 0], [3, 3], [0, 1]]]), "mean", -100, False, 0.0),
        ("kdim_weight_smoothing_ignore", (2, 4, 3), fixed([[0, 1, 2], [3, 1, 1]]), "mean", 1, True, 0.1),
        ("weight_smoothing_mean_ignore", (6, 4), fixed([0, -100, 2, 1, 3, 3]), "mean", -100, True, 0.2),
        ("weight_smoothing_none", (4, 4), fixed([0, 2, 2, 1]), "none", -100, True, 0.3),
        ("unbatched", (4,), fixed(2, ()), "mean", -100, False, 0.0),
    ]
    for label, shape, target, reduction, ignore, has_weight, smoothing in ce:
        prefix = f"cross_entropy/{label}"
        fx = fixed_inputs(w, prefix, {"weight": weight} if has_weight else {})
        add_op_case(w, prefix,
                    lambda input, target, wt=fx.get("weight"), r=reduction, i=ignore, s=smoothing:
                        F.cross_entropy(input, target, wt, ignore_index=i, reduction=r, label_smoothing=s),
                    {"input": randn(*shape), "target": target},
                    params=[REDUCTION[reduction], ignore, int(has_weight)], scalars=[smoothing])
    probs = [
        ("probs_mean", (5, 4), "mean", False, 0.0),
        ("probs_weight_smoothing_sum", (5, 4), "sum", True, 0.15),
        ("probs_kdim_none", (2, 4, 3), "none", True, 0.0),
        ("probs_kdim_weight_mean", (2, 4, 3), "mean", True, 0.0),
    ]
    for label, shape, reduction, has_weight, smoothing in probs:
        def target(shape=shape):
            return torch.softmax(torch.randn(*shape, dtype=torch.float64), 1 if len(shape) > 1 else 0)
        prefix = f"cross_entropy/{label}"
        fx = fixed_inputs(w, prefix, {"weight": weight} if has_weight else {})
        add_op_case(w, prefix,
                    lambda input, target, wt=fx.get("weight"), r=reduction, s=smoothing:
                        F.cross_entropy(input, target, wt, reduction=r, label_smoothing=s),
                    {"input": randn(*shape), "target": target},
                    params=[REDUCTION[reduction], -100, int(has_weight)], scalars=[smoothing])
    # nll_loss params [reduction, ignore_index, has_weight]; input holds log-probabilities.
    nll = [
        ("weight_mean_ignore", (5, 4), fixed([0, 3, -100, 1, 3]), "mean", -100, True),
        ("kdim_weight_sum", (2, 4, 3), fixed([[0, 1, 2], [3, 1, 1]]), "sum", -100, True),
        ("kdim_none_ignore1", (2, 4, 3), fixed([[0, 1, 2], [3, 1, 1]]), "none", 1, False),
    ]
    for label, shape, target, reduction, ignore, has_weight in nll:
        prefix = f"nll_loss/{label}"
        fx = fixed_inputs(w, prefix, {"weight": weight} if has_weight else {})
        add_op_case(w, prefix,
                    lambda input, target, wt=fx.get("weight"), r=reduction, i=ignore:
                        F.nll_loss(input, target, wt, ignore_index=i, reduction=r),
                    {"input": lambda shape=shape: torch.log_softmax(torch.randn(*shape, dtype=torch.float64), 1),
                     "target": target},
                    params=[REDUCTION[reduction], ignore, int(has_weight)])
    # l1_loss / mse_loss params [reduction]; smooth_l1_loss scalars [beta]; huber_loss scalars [delta]
    for reduction in ("mean", "sum", "none"):
        add_op_case(w, f"l1_loss/{reduction}", lambda input, target, r=reduction: F.l1_loss(input, target, reduction=r),
                    {"input": randn(3, 4), "target": randn(3, 4)}, params=[REDUCTION[reduction]])
    for label, reduction, beta in (("beta1_mean", "mean", 1.0), ("beta0.5_none", "none", 0.5), ("beta0_sum", "sum", 0.0)):
        add_op_case(w, f"smooth_l1_loss/{label}",
                    lambda input, target, r=reduction, b=beta: F.smooth_l1_loss(input, target, reduction=r, beta=b),
                    {"input": scaled(1.5, 3, 4), "target": randn(3, 4)}, params=[REDUCTION[reduction]], scalars=[beta])
    for label, reduction, delta in (("delta1_mean", "mean", 1.0), ("delta0.5_sum", "sum", 0.5), ("delta2_none", "none", 2.0)):
        add_op_case(w, f"huber_loss/{label}",
                    lambda input, target, r=reduction, d=delta: F.huber_loss(input, target, reduction=r, delta=d),
                    {"input": scaled(1.5, 3, 4), "target": randn(3, 4)}, params=[REDUCTION[reduction]], scalars=[delta])
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch warns that a broadcast target is rarely meant
        add_op_case(w, "mse_loss/broadcast_target", lambda input, target: F.mse_loss(input, target),
                    {"input": randn(3, 4), "target": randn(1, 4)}, params=[REDUCTION["mean"]])
    # binary_cross_entropy params [reduction, has_weight]: input in (0, 1), target in [0, 1].
    def probs(*shape):
        return lambda: torch.sigmoid(torch.randn(*shape, dtype=torch.float64))
    for label, reduction, has_weight in (("mean", "mean", False), ("weight_none", "none", True), ("weight_sum", "sum", True)):
        prefix = f"binary_cross_entropy/{label}"
        fx = fixed_inputs(w, prefix, {"weight": lambda: torch.rand(4, dtype=torch.float64) + 0.5} if has_weight else {})
        add_op_case(w, prefix,
                    lambda input, target, wt=fx.get("weight"), r=reduction: F.binary_cross_entropy(input, target, wt, reduction=r),
                    {"input": probs(3, 4), "target": lambda: torch.rand(3, 4, dtype=torch.float64)},
                    params=[REDUCTION[reduction], int(has_weight)])
    # binary_cross_entropy_with_logits params [reduction, has_weight, has_pos_weight]
    for label, reduction, has_weight, has_pos in (("mean", "mean", False, False), ("weight_pos_weight_none", "none", True, True),
                                                  ("pos_weight_sum", "sum", False, True)):
        prefix = f"binary_cross_entropy_with_logits/{label}"
        makers = {}
        if has_weight:
            makers["weight"] = lambda: torch.rand(4, 1, dtype=torch.float64) + 0.5
        if has_pos:
            makers["pos_weight"] = lambda: torch.rand(3, dtype=torch.float64) * 3
        fx = fixed_inputs(w, prefix, makers)
        add_op_case(w, prefix,
                    lambda input, target, wt=fx.get("weight"), pw=fx.get("pos_weight"), r=reduction:
                        F.binary_cross_entropy_with_logits(input, target, wt, reduction=r, pos_weight=pw),
                    {"input": scaled(3, 4, 3), "target": lambda: torch.rand(4, 3, dtype=torch.float64)},
                    params=[REDUCTION[reduction], int(has_weight), int(has_pos)])
    # kl_div params [reduction, log_target]; input log-probabilities, target probabilities (or
    # log-probabilities); one target 0 in the probability cases.
    def log_probs():
        return torch.log_softmax(torch.randn(4, 5, dtype=torch.float64), 1)

    def probs_with_zero():
        t = torch.softmax(torch.randn(4, 5, dtype=torch.float64), 1)
        t[1, 2] = 0.0
        return t
    for label, reduction, log_target in (("batchmean", "batchmean", False), ("mean_log_target", "mean", True),
                                         ("none", "none", False), ("sum_log_target", "sum", True)):
        prefix = f"kl_div/{label}"
        if log_target:
            add_op_case(w, prefix, lambda input, target, r=reduction: F.kl_div(input, target, reduction=r, log_target=True),
                        {"input": log_probs, "target": log_probs}, params=[REDUCTION[reduction], 1])
        else:
            # A target of 0 has no finite target gradient (d/dt t log t): this target is fixed.
            fx = fixed_inputs(w, prefix, {"target": probs_with_zero})
            add_op_case(w, prefix, lambda input, t=fx["target"], r=reduction: F.kl_div(input, t, reduction=r),
                        {"input": log_probs}, params=[REDUCTION[reduction], 0])


# ---- optimizers ------------------------------------------------------------------------------------

def quadratic_problem():
    """Two parameters and a loss with curvature that changes sign of the gradient along the way:
    loss = sum(a p^2) + sum(b p) + 0.1 sum(p^4) over p1 (3) and p2 (2, 2). ember's test builds it."""
    p1 = torch.tensor([1.0, -2.0, 3.0], dtype=torch.float64, requires_grad=True)
    p2 = torch.tensor([[0.5, -1.5], [2.0, -0.25]], dtype=torch.float64, requires_grad=True)
    a1 = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    b1 = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64)
    a2 = torch.tensor([[0.3, 1.2], [2.5, 0.7]], dtype=torch.float64)
    b2 = torch.tensor([[-0.2, 0.4], [1.0, -1.5]], dtype=torch.float64)

    def loss():
        return ((p1 * p1 * a1).sum() + (p1 * b1).sum() + 0.1 * (p1 ** 4).sum() +
                (p2 * p2 * a2).sum() + (p2 * b2).sum() + 0.1 * (p2 ** 4).sum())
    return p1, p2, loss


OPTIM_STEPS = 25


def add_optimizer(w, name, make):
    """A "maximize" case maximizes the negated loss (bounded above), so it converges as the others."""
    p1, p2, loss = quadratic_problem()
    opt = make(p1, p2)
    traj, losses = [], []
    sign = -1.0 if "maximize" in name else 1.0
    for _ in range(OPTIM_STEPS):
        opt.zero_grad()
        value = sign * loss()
        value.backward()
        opt.step()
        losses.append(value.item())
        traj.append(torch.cat([p1.detach().flatten(), p2.detach().flatten()]))
    w.add(f"optim/{name}/trajectory", torch.stack(traj))
    w.add(f"optim/{name}/losses", torch.tensor(losses, dtype=torch.float64))


def add_optimizers(w):
    O = torch.optim
    groups = lambda p1, p2, **g2: [{"params": [p1]}, {"params": [p2], **g2}]  # noqa: E731
    add_optimizer(w, "adagrad_default", lambda p1, p2: O.Adagrad([p1, p2]))
    add_optimizer(w, "adagrad_lr_decay_wd_init_acc", lambda p1, p2: O.Adagrad(
        groups(p1, p2, lr=0.05, weight_decay=0.0), lr=0.1, lr_decay=0.01, weight_decay=0.02,
        initial_accumulator_value=0.3, eps=1e-8))
    add_optimizer(w, "adagrad_maximize", lambda p1, p2: O.Adagrad([p1, p2], lr=0.02, maximize=True))
    add_optimizer(w, "adadelta_default", lambda p1, p2: O.Adadelta([p1, p2]))
    add_optimizer(w, "adadelta_rho_eps_wd_groups", lambda p1, p2: O.Adadelta(
        groups(p1, p2, lr=0.5), lr=2.0, rho=0.8, eps=1e-4, weight_decay=0.05))
    add_optimizer(w, "adadelta_maximize", lambda p1, p2: O.Adadelta([p1, p2], lr=0.1, maximize=True))
    add_optimizer(w, "rmsprop_default", lambda p1, p2: O.RMSprop([p1, p2]))
    add_optimizer(w, "rmsprop_momentum", lambda p1, p2: O.RMSprop([p1, p2], lr=0.01, alpha=0.9, momentum=0.8))
    add_optimizer(w, "rmsprop_centered", lambda p1, p2: O.RMSprop([p1, p2], lr=0.02, centered=True))
    add_optimizer(w, "rmsprop_centered_momentum_wd_groups", lambda p1, p2: O.RMSprop(
        groups(p1, p2, lr=0.003, weight_decay=0.0), lr=0.01, alpha=0.95, eps=1e-6, weight_decay=0.1, momentum=0.5,
        centered=True))
    add_optimizer(w, "rmsprop_maximize", lambda p1, p2: O.RMSprop([p1, p2], lr=0.001, maximize=True))
    add_optimizer(w, "sgd_momentum_maximize", lambda p1, p2: O.SGD([p1, p2], lr=0.01, momentum=0.9, maximize=True))
    add_optimizer(w, "adam_maximize", lambda p1, p2: O.Adam([p1, p2], lr=0.01, maximize=True))
    add_optimizer(w, "adamw_amsgrad_maximize", lambda p1, p2: O.AdamW([p1, p2], lr=0.01, amsgrad=True, maximize=True))


# ---- LR schedulers ---------------------------------------------------------------------------------

SCHED_STEPS = 30


def two_group_sgd(momentum=0.9):
    p1 = torch.zeros(1, requires_grad=True)
    p2 = torch.zeros(1, requires_grad=True)
    return torch.optim.SGD([{"params": [p1]}, {"params": [p2], "lr": 0.05}], lr=0.1, momentum=momentum)


def add_schedule(w, name, make, steps=SCHED_STEPS, opt=None, momentum_key=None, metrics=None):
    import warnings
    opt = opt or two_group_sgd()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scheds = make(opt)
        step_all = scheds if isinstance(scheds, (list, tuple)) else [scheds]
        lrs = [step_all[-1].get_last_lr()]
        moms = []

        def momentum():
            g = opt.param_groups[0]
            return g["betas"][0] if momentum_key == "betas" else g["momentum"]
        if momentum_key:
            moms.append(momentum())
        for i in range(steps):
            opt.step()
            for s in step_all:
                if metrics is not None:
                    s.step(metrics[i])
                else:
                    s.step()
            lrs.append([g["lr"] for g in opt.param_groups])
            assert lrs[-1] == step_all[-1].get_last_lr(), name
            if momentum_key:
                moms.append(momentum())
    w.add(f"sched/{name}/lrs", torch.tensor(lrs, dtype=torch.float64))
    if momentum_key:
        w.add(f"sched/{name}/momentum", torch.tensor(moms, dtype=torch.float64))
    if metrics is not None:
        w.add(f"sched/{name}/metrics", torch.tensor(metrics[:steps], dtype=torch.float64))


def add_schedulers(w):
    S = torch.optim.lr_scheduler
    add_schedule(w, "step_lr", lambda o: S.StepLR(o, 4, gamma=0.5))
    add_schedule(w, "multi_step_lr", lambda o: S.MultiStepLR(o, [3, 7, 7, 20], gamma=0.3))
    add_schedule(w, "exponential_lr", lambda o: S.ExponentialLR(o, 0.9))
    add_schedule(w, "cosine_annealing_lr", lambda o: S.CosineAnnealingLR(o, 10, eta_min=0.001))
    add_schedule(w, "linear_lr", lambda o: S.LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=8))
    add_schedule(w, "constant_lr", lambda o: S.ConstantLR(o, factor=0.25, total_iters=6))
    # ember's test passes the same function: 0.95 ** epoch / (1 + epoch % 3).
    add_schedule(w, "lambda_lr", lambda o: S.LambdaLR(o, lambda e: 0.95 ** e / (1 + e % 3)))
    add_schedule(w, "multiplicative_lr", lambda o: S.MultiplicativeLR(o, lambda e: 0.9 if e % 2 else 1.05))
    add_schedule(w, "polynomial_lr", lambda o: S.PolynomialLR(o, total_iters=12, power=2.0))
    add_schedule(w, "cosine_warm_restarts", lambda o: S.CosineAnnealingWarmRestarts(o, 3, T_mult=2, eta_min=0.01))
    add_schedule(w, "cosine_warm_restarts_tmult1", lambda o: S.CosineAnnealingWarmRestarts(o, 4))
    add_schedule(w, "one_cycle_cos", lambda o: S.OneCycleLR(o, [1.0, 0.4], total_steps=SCHED_STEPS),
                 momentum_key="momentum")
    add_schedule(w, "one_cycle_linear_three_phase_no_momentum",
                 lambda o: S.OneCycleLR(o, 0.5, total_steps=SCHED_STEPS, pct_start=0.25, anneal_strategy="linear",
                                        three_phase=True, cycle_momentum=False, div_factor=10.0, final_div_factor=100.0))
    adam = torch.optim.Adam([torch.zeros(1, requires_grad=True)], lr=0.001)
    add_schedule(w, "one_cycle_adam_betas", lambda o: S.OneCycleLR(o, 0.01, epochs=3, steps_per_epoch=10,
                                                                    base_momentum=0.8, max_momentum=0.9),
                 opt=adam, momentum_key="betas")
    add_schedule(w, "sequential_linear_exponential",
                 lambda o: S.SequentialLR(o, [S.LinearLR(o, start_factor=0.1, total_iters=5), S.ExponentialLR(o, 0.8)],
                                          milestones=[5]))
    add_schedule(w, "sequential_constant_cosine_step",
                 lambda o: S.SequentialLR(o, [S.ConstantLR(o, factor=0.5, total_iters=3), S.CosineAnnealingLR(o, 6),
                                              S.StepLR(o, 2, 0.5)], milestones=[4, 12]))
    add_schedule(w, "chained_exponential_step",
                 lambda o: S.ChainedScheduler([S.ExponentialLR(o, 0.95), S.StepLR(o, 5, 0.5)]))
    # Two schedulers on one optimizer, both stepped: their factors multiply (the chainable form).
    add_schedule(w, "two_schedulers_step_cosine", lambda o: [S.StepLR(o, 7, 0.5), S.CosineAnnealingLR(o, 12)])
    metrics_min = [1.0, 0.9, 0.95, 0.93, 0.92, 0.9, 0.91, 0.899, 0.95, 0.96, 0.97, 0.5, 0.6, 0.55, 0.56,
                   0.57, 0.58, 0.59, 0.6, 0.61, 0.62, 0.63, 0.4, 0.41, 0.42, 0.43, 0.44, 0.45, 0.46, 0.47]
    add_schedule(w, "plateau_min_rel", lambda o: S.ReduceLROnPlateau(o, patience=2, factor=0.5, threshold=0.01,
                                                                       min_lr=[0.01, 0.002]), metrics=metrics_min)
    metrics_max = [0.1, 0.2, 0.2, 0.2, 0.25, 0.25, 0.25, 0.25, 0.3, 0.3, 0.3, 0.3, 0.3, 0.31, 0.3, 0.3,
                   0.29, 0.28, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]
    add_schedule(w, "plateau_max_abs_cooldown", lambda o: S.ReduceLROnPlateau(
        o, mode="max", factor=0.3, patience=1, threshold=0.02, threshold_mode="abs", cooldown=2, min_lr=0.004,
        eps=1e-3), metrics=metrics_max)


# ---- gradient clipping -----------------------------------------------------------------------------

def add_clipping(w):
    # params [kind (0 clip_grad_norm_, 1 clip_grad_value_)]; scalars [max_norm or clip_value, norm_type]
    torch.manual_seed(seed_for("clip"))
    g1 = torch.randn(3, 4, dtype=torch.float64)
    g2 = torch.randn(5, dtype=torch.float64) * 3
    for label, kind, limit, norm_type in (("norm2", 0, 1.0, 2.0), ("norm1_no_clip", 0, 100.0, 1.0),
                                          ("norm_inf", 0, 0.5, math.inf), ("norm3", 0, 2.0, 3.0),
                                          ("value", 1, 0.7, 0.0)):
        p1 = torch.zeros(3, 4, dtype=torch.float64, requires_grad=True)
        p2 = torch.zeros(5, dtype=torch.float64, requires_grad=True)
        p1.grad = g1.clone()
        p2.grad = g2.clone()
        if kind == 0:
            total = torch.nn.utils.clip_grad_norm_([p1, p2], limit, norm_type)
            w.add(f"clip/{label}/total_norm", total.double())
        else:
            torch.nn.utils.clip_grad_value_([p1, p2], limit)
        w.add(f"clip/{label}/grad1", g1)
        w.add(f"clip/{label}/grad2", g2)
        w.add(f"clip/{label}/clipped1", p1.grad)
        w.add(f"clip/{label}/clipped2", p2.grad)
        w.add(f"clip/{label}/params", torch.tensor([kind], dtype=torch.int64))
        w.add(f"clip/{label}/scalars", torch.tensor([limit, norm_type], dtype=torch.float64))


def check(records):
    """Spot checks on the re-read file that do not reuse the code that wrote it."""
    for name, t in records.items():
        if name.endswith("/output") or "/grad_" in name:
            assert t.dtype == torch.float64, name
            assert torch.isfinite(t).all(), name
    # padding_idx's row gets no gradient
    assert torch.all(records["embedding/padding_idx2/grad_weight"][2] == 0)
    assert records["embedding/plain/grad_weight"][2].abs().sum() > 0
    # probability targets: a mean over samples, not over elements
    x, t = records["cross_entropy/probs_mean/input"], records["cross_entropy/probs_mean/target"]
    assert torch.allclose(records["cross_entropy/probs_mean/output"], -(torch.log_softmax(x, 1) * t).sum() / x.shape[0])
    # every optimizer moved the loss down (or up, maximizing)
    for name in records:
        if name.endswith("/losses"):
            losses = records[name]
            moved = losses[-1] > losses[0] if "maximize" in name else losses[-1] < losses[0]
            assert moved, name
    lrs = records["sched/step_lr/lrs"]
    assert torch.allclose(lrs[4], lrs[0] * 0.5) and torch.allclose(lrs[3], lrs[0])


def main():
    if sys.byteorder != "little":
        raise SystemExit("make_golden_nn2.py writes the host's byte order and expects little-endian")
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    os.makedirs(outdir, exist_ok=True)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    w = GoldenWriter()
    for add in (add_activations, add_norms, add_distances, add_embedding, add_convs, add_pools, add_interpolate,
                add_pad, add_losses, add_optimizers, add_schedulers, add_clipping):
        add(w)
    path = os.path.join(outdir, "ops_nn2_v1.bin")
    size = w.write(path)
    records = read_golden(path)
    assert list(records) == list(w.records)
    for name, t in w.records.items():
        assert not t.is_floating_point() or torch.isfinite(t).all() or name.endswith("/scalars"), name
    for name, t in w.records.items():
        r = records[name]
        assert r.dtype == t.dtype and r.shape == t.shape and torch.equal(r, t), name
    check(records)
    print(f"{path}: {len(records)} records, {size} bytes (torch {torch.__version__})")


if __name__ == "__main__":
    main()
