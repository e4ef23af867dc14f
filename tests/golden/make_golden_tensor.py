#!/usr/bin/env python3
"""Writes ops_tensor_v1.bin: PyTorch's values for the tensor ops added for PyTorch's API (issue 46):
element-wise math (sin ... isfinite), reductions and scans (cumsum ... max along a dim), rearranging
shape ops (repeat ... roll) and indexing (gather ... index_put). Read by tests/harness/ops_tensor.cpp.

Run:  /work/wt/torchvenv/bin/python tests/golden/make_golden_tensor.py OUTDIR   (normally tests/golden)
Needs any PyTorch >= 2.0 (written with 2.15 from PyPI, CPU, one thread) and make_golden.py beside
it (the EMBGOLD1 writer and reader). Deterministic: a fixed seed per case.

Records, per case <op>/<case>/:
    <input>          each input by its torch argument name (input, other, index, src, mask, ...):
                     float64, or int64 (integer tensors, and bool ones stored as 0 / 1: `bools`
                     in the C++ runner lists which to turn back into Bool)
    output           the result, float64 (a float32 one converted exactly) or int64 (a Bool
                     result as 0 / 1)
    output_dtype     int64 0-d: PyTorch's result dtype as ember's code (0 float32, 1 float64,
                     2 int64, 3 int32, 4 uint8, 5 bool)
    indices          max / min along a dim: the int64 indices (output holds the values)
    grad_output      a random upstream gradient, when the output is differentiable
    grad_<input>     d output / d input against grad_output, for each float input
    params, scalars  the case's int64 / float64 settings, as each op's block below says
Every recorded gradient passes torch.autograd.gradcheck first.
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_golden import GoldenWriter, read_golden, seed_for  # noqa: E402

EMBER_DTYPE = {torch.float32: 0, torch.float64: 1, torch.int64: 2, torch.int32: 3, torch.uint8: 4, torch.bool: 5}


def stored(t):
    """A tensor as the file holds it: floats as float64, integers and bool as int64."""
    t = torch.as_tensor(t).detach()
    return t.to(torch.float64) if t.is_floating_point() else t.to(torch.int64)


def case(w, prefix, fn, inputs, params=None, scalars=None, extra=None, gradcheck=True, differentiable=True):
    """Records inputs, output = fn(**inputs), its dtype, and the gradients of the float inputs
    (none without `differentiable`: ops PyTorch gives no derivative). extra(inputs, output) ->
    {name: tensor} records more results (the indices of max)."""
    torch.manual_seed(seed_for(prefix))
    leaves = {}
    for k, v in inputs.items():
        v = (v() if callable(v) else v).detach().clone()
        if v.is_floating_point() and differentiable:
            v.requires_grad_(True)
        leaves[k] = v
        w.add(f"{prefix}/{k}", stored(v))
    out = fn(**leaves)
    w.add(f"{prefix}/output", stored(out))
    w.add(f"{prefix}/output_dtype", torch.tensor(EMBER_DTYPE[out.dtype]))
    if extra is not None:
        for k, v in extra(leaves, out).items():
            w.add(f"{prefix}/{k}", stored(v))
    diff = {k: v for k, v in leaves.items() if v.requires_grad}
    if diff and out.requires_grad:
        grad_output = torch.randn(out.shape, dtype=out.dtype)
        grads = torch.autograd.grad(out, list(diff.values()), grad_output, allow_unused=True)
        w.add(f"{prefix}/grad_output", grad_output)
        for (k, v), g in zip(diff.items(), grads):
            w.add(f"{prefix}/grad_{k}", torch.zeros_like(v) if g is None else g)
        if gradcheck:
            def as_fn(*args):
                a = dict(leaves)
                a.update(zip(diff, args))
                return fn(**a)
            assert torch.autograd.gradcheck(as_fn, tuple(diff.values())), prefix
    if params is not None:
        w.add(f"{prefix}/params", torch.tensor(params, dtype=torch.int64))
    if scalars is not None:
        w.add(f"{prefix}/scalars", torch.tensor(scalars, dtype=torch.float64))


def randn(*shape):
    return lambda: torch.randn(*shape, dtype=torch.float64)


def uniform(lo, hi, *shape):
    return lambda: torch.rand(*shape, dtype=torch.float64) * (hi - lo) + lo


def ints(lo, hi, *shape):
    return lambda: torch.randint(lo, hi, shape, dtype=torch.int64)


def bools(*shape):
    return lambda: torch.randint(0, 2, shape, dtype=torch.int64).bool()


def add_math(w):
    # sin, cos, log1p, expm1, reciprocal: input (3, 4) float64, or int64 (output float32)
    for op, inp in (("sin", randn(3, 4)), ("cos", randn(3, 4)), ("log1p", uniform(-0.5, 3, 3, 4)),
                    ("expm1", randn(3, 4)), ("reciprocal", uniform(0.5, 3, 3, 4))):
        case(w, f"{op}/float", lambda input, op=op: getattr(torch, op)(input), {"input": inp})
        case(w, f"{op}/int", lambda input, op=op: getattr(torch, op)(input), {"input": ints(-3, 4, 3, 4)})
    # floor, ceil, trunc, round: halves (ties) and random values; round's params = [decimals]
    halves = lambda: torch.arange(-8, 9, dtype=torch.float64) * 0.5  # noqa: E731
    for op in ("floor", "ceil", "trunc", "round"):
        case(w, f"{op}/halves", lambda input, op=op: getattr(torch, op)(input), {"input": halves}, params=[0],
             gradcheck=False)
        case(w, f"{op}/int", lambda input, op=op: getattr(torch, op)(input), {"input": ints(-9, 9, 5)}, params=[0])
    for d in (2, -1):
        case(w, f"round/decimals_{d}".replace("-", "neg"), lambda input, d=d: torch.round(input, decimals=d),
             {"input": uniform(-300, 300, 12)}, params=[d], gradcheck=False)
    # floor_divide, remainder: input // other, input % other, every sign; int64 and float64
    signs = lambda: torch.tensor([7., -7., 7., -7., 5.5, -5.5, 0., 1e-300], dtype=torch.float64)  # noqa: E731
    divisors = lambda: torch.tensor([2., 2., -2., -2., 0.5, 2.5, 3., 3.], dtype=torch.float64)  # noqa: E731
    for op in ("floor_divide", "remainder"):
        f, d = getattr(torch, op), op == "remainder"
        case(w, f"{op}/float_signs", lambda input, other, f=f: f(input, other), {"input": signs, "other": divisors},
             gradcheck=False, differentiable=d)
        case(w, f"{op}/int_signs", lambda input, other, f=f: f(input, other),
             {"input": lambda: torch.tensor([7, -7, 7, -7, 0, 9]), "other": lambda: torch.tensor([2, 2, -2, -2, 3, -4])})
        case(w, f"{op}/broadcast", lambda input, other, f=f: f(input, other),
             {"input": randn(3, 4), "other": uniform(0.5, 2, 4)}, differentiable=d)
    case(w, "floor_divide/zero_divisor", lambda input, other: torch.floor_divide(input, other),
         {"input": lambda: torch.tensor([1., -1., 0.], dtype=torch.float64), "other": lambda: torch.zeros(3, dtype=torch.float64)},
         differentiable=False)
    # lerp: a tensor weight (scalars empty) or a scalar one (scalars = [weight])
    case(w, "lerp/tensor_weight", lambda input, end, weight: torch.lerp(input, end, weight),
         {"input": randn(3, 4), "end": randn(3, 4), "weight": uniform(-1, 2, 4)})
    for wt in (0.3, 0.75):
        case(w, f"lerp/scalar_{wt}", lambda input, end, wt=wt: torch.lerp(input, end, wt),
             {"input": randn(3, 4), "end": randn(1, 4)}, scalars=[wt])
    # bitwise and / or / xor / not, logical_not: int64 and bool (bools: input, other)
    for op in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        f = getattr(torch, op)
        case(w, f"{op}/int", lambda input, other, f=f: f(input, other), {"input": ints(-20, 20, 3, 4), "other": ints(-20, 20, 4)})
        case(w, f"{op}/bool", lambda input, other, f=f: f(input, other), {"input": bools(3, 4), "other": bools(3, 4)})
    case(w, "bitwise_not/int", lambda input: torch.bitwise_not(input), {"input": ints(-20, 20, 6)})
    case(w, "bitwise_not/bool", lambda input: torch.bitwise_not(input), {"input": bools(6)})
    case(w, "logical_not/float", lambda input: torch.logical_not(input), {"input": lambda: torch.tensor([0., 1.5, -0., float("nan")], dtype=torch.float64)})
    special = lambda: torch.tensor([1., float("nan"), float("inf"), -float("inf"), 0., -2.], dtype=torch.float64)  # noqa: E731
    for op in ("isnan", "isinf", "isfinite"):
        case(w, f"{op}/special", lambda input, op=op: getattr(torch, op)(input), {"input": special})
        case(w, f"{op}/int", lambda input, op=op: getattr(torch, op)(input), {"input": ints(-3, 3, 4)})


def add_reductions(w):
    # cumsum, cumprod: params = [dim]
    for dim in (0, 1, -1):
        case(w, f"cumsum/dim{dim}".replace("-", "neg"), lambda input, dim=dim: torch.cumsum(input, dim), {"input": randn(3, 4, 5)}, params=[dim])
    case(w, "cumsum/int", lambda input: torch.cumsum(input, 1), {"input": ints(-5, 5, 3, 4)}, params=[1])
    case(w, "cumsum/bool", lambda input: torch.cumsum(input, 0), {"input": bools(7)}, params=[0])
    case(w, "cumprod/dim1", lambda input: torch.cumprod(input, 1), {"input": uniform(0.5, 1.5, 3, 6)}, params=[1])
    zeros = lambda: torch.tensor([[2., 0., 3., 0., 1.5], [0., 1., 2., -1., 0.5], [1., 2., -3., 0.5, 0.]], dtype=torch.float64)  # noqa: E731
    case(w, "cumprod/zeros", lambda input: torch.cumprod(input, 1), {"input": zeros}, params=[1])
    case(w, "cumprod/int", lambda input: torch.cumprod(input, 0), {"input": ints(-3, 4, 6)}, params=[0])
    # prod: params = [dim, keepdim] (dim = 99: every element)
    case(w, "prod/dim1", lambda input: torch.prod(input, 1), {"input": uniform(0.5, 1.5, 3, 4)}, params=[1, 0])
    case(w, "prod/zeros_keepdim", lambda input: torch.prod(input, 1, keepdim=True), {"input": zeros}, params=[1, 1])
    case(w, "prod/all", lambda input: torch.prod(input), {"input": uniform(0.5, 1.5, 2, 3)}, params=[99, 0])
    case(w, "prod/int", lambda input: torch.prod(input, 0), {"input": ints(-3, 4, 4, 3)}, params=[0, 0])
    # all, any, count_nonzero: params = [keepdim, dims...] (no dims: every dim)
    for op in ("all", "any"):
        f = getattr(torch, op)
        case(w, f"{op}/dim1", lambda input, f=f: f(input, 1), {"input": ints(0, 2, 4, 3)}, params=[0, 1])
        case(w, f"{op}/every", lambda input, f=f: f(input), {"input": ints(0, 3, 4, 3)}, params=[0])
        case(w, f"{op}/float_keepdim", lambda input, f=f: f(input, 0, keepdim=True),
             {"input": lambda: torch.tensor([[0., 1.], [float("nan"), 0.], [2., 0.]], dtype=torch.float64)}, params=[1, 0])
    case(w, "count_nonzero/dims01", lambda input: torch.count_nonzero(input, dim=(0, 1)), {"input": ints(0, 2, 3, 4, 2)}, params=[0, 0, 1])
    case(w, "count_nonzero/every", lambda input: torch.count_nonzero(input), {"input": ints(-1, 2, 5, 2)}, params=[0])
    # logsumexp: params = [keepdim, dims...]
    case(w, "logsumexp/dim1", lambda input: torch.logsumexp(input, 1), {"input": randn(3, 4, 5)}, params=[0, 1])
    case(w, "logsumexp/large_keepdim", lambda input: torch.logsumexp(input, (0, 2), keepdim=True),
         {"input": uniform(500, 800, 3, 4, 5)}, params=[1, 0, 2])
    case(w, "logsumexp/int", lambda input: torch.logsumexp(input, 0), {"input": ints(-3, 4, 6)}, params=[0, 0])
    # norm: scalars = [p] (p = nan for "fro"), params = [keepdim, dims...]
    for p in (2, 1, float("inf"), -float("inf"), 3, 0.5, 0):
        name = {float("inf"): "inf", -float("inf"): "neg_inf", 0.5: "p0.5"}.get(p, f"p{p}")
        case(w, f"norm/{name}_dim1", lambda input, p=p: torch.norm(input, p=p, dim=1), {"input": randn(3, 5)},
             scalars=[p], params=[0, 1])
        case(w, f"norm/{name}_every", lambda input, p=p: torch.norm(input, p=p), {"input": randn(2, 3)}, scalars=[p], params=[0])
    case(w, "norm/fro_keepdim", lambda input: torch.norm(input, p="fro", dim=(0, 2), keepdim=True),
         {"input": randn(2, 3, 4)}, scalars=[float("nan")], params=[1, 0, 2])
    # max / min along a dim: params = [dim, keepdim]; indices recorded beside the values
    for op in ("max", "min"):
        f = getattr(torch, op)
        case(w, f"{op}_dim/dim1", lambda input, f=f: f(input, 1).values, {"input": randn(3, 5)}, params=[1, 0],
             extra=lambda leaves, out, f=f: {"indices": f(leaves["input"], 1).indices})
        case(w, f"{op}_dim/ties_keepdim", lambda input, f=f: f(input, 0, keepdim=True).values,
             {"input": lambda: torch.tensor([[1., 3., 2.], [1., 3., 5.], [0., 3., 5.]], dtype=torch.float64)},
             params=[0, 1], extra=lambda leaves, out, f=f: {"indices": f(leaves["input"], 0, keepdim=True).indices},
             gradcheck=False)
        case(w, f"{op}_dim/int", lambda input, f=f: f(input, 1).values, {"input": ints(-5, 5, 4, 6)}, params=[1, 0],
             extra=lambda leaves, out, f=f: {"indices": f(leaves["input"], 1).indices})


def add_shape(w):
    case(w, "repeat/2x3_by_2x1x2", lambda input: input.repeat(2, 1, 2), {"input": randn(2, 3)}, params=[2, 1, 2])
    case(w, "repeat/zero", lambda input: input.repeat(0, 2), {"input": randn(3)}, params=[0, 2])
    # split / chunk: the pieces scaled by 1, 2, 3, ... and concatenated, so each one's values and
    # gradient are checked; params = [dim, size or chunks] (split_with_sizes: [dim, sizes...])
    scaled = lambda pieces, dim: torch.cat([p * (i + 1) for i, p in enumerate(pieces)], dim)  # noqa: E731
    case(w, "split/size2_dim1", lambda input: scaled(torch.split(input, 2, 1), 1), {"input": randn(3, 5)}, params=[1, 2])
    case(w, "split_with_sizes/dim0", lambda input: scaled(torch.split(input, [1, 3, 2], 0), 0), {"input": randn(6, 2)},
         params=[0, 1, 3, 2])
    case(w, "chunk/3_of_7", lambda input: scaled(torch.chunk(input, 3, 0), 0), {"input": randn(7, 2)}, params=[0, 3])
    case(w, "chunk/4_of_6", lambda input: scaled(torch.chunk(input, 4, -1), -1), {"input": randn(2, 6)}, params=[-1, 4])
    # unflatten: params = [dim, sizes...]; movedim: params = [n, source..., destination...]
    case(w, "unflatten/infer", lambda input: input.unflatten(1, (-1, 2)) * 2, {"input": randn(2, 6, 3)}, params=[1, -1, 2])
    case(w, "movedim/two", lambda input: torch.movedim(input, (0, 1), (2, 0)) * 2, {"input": randn(2, 3, 4, 5)},
         params=[2, 0, 1, 2, 0])
    # tril / triu: params = [diagonal]
    for op in ("tril", "triu"):
        for d in (0, 1, -2):
            case(w, f"{op}/diag{d}".replace("-", "neg"), lambda input, op=op, d=d: getattr(torch, op)(input, d),
                 {"input": randn(2, 4, 5)}, params=[d])
    # flip: params = dims; roll: params = [n, shifts..., dims...]
    case(w, "flip/dims02", lambda input: torch.flip(input, (0, 2)), {"input": randn(2, 3, 4)}, params=[0, 2])
    case(w, "flip/int", lambda input: torch.flip(input, (-1,)), {"input": ints(0, 9, 2, 5)}, params=[-1])
    case(w, "roll/two_dims", lambda input: torch.roll(input, (1, -7), (0, 2)), {"input": randn(3, 2, 5)},
         params=[2, 1, -7, 0, 2])
    case(w, "roll/flat", lambda input: torch.roll(input, 4), {"input": randn(2, 3)}, params=[1, 4])


def index_put_slices(input, key, values):
    """t[key] = values on a copy (torch.index_put takes no full slices; __setitem__ does)."""
    out = input.clone()
    out[key] = values
    return out


def add_indexing(w):
    # gather / scatter / scatter_add: params = [dim]; the indices are fixed per case
    case(w, "gather/dim1", lambda input, index: torch.gather(input, 1, index),
         {"input": randn(3, 4, 2), "index": lambda: torch.tensor([[[0, 3], [3, 1], [2, 2]], [[1, 0], [0, 0], [3, 2]], [[2, 1], [1, 3], [0, 0]]])},
         params=[1])
    case(w, "gather/dim0_smaller", lambda input, index: torch.gather(input, 0, index),
         {"input": randn(4, 3), "index": lambda: torch.tensor([[3, 0], [1, 1]])}, params=[0])
    perm = lambda: torch.tensor([[2, 0, 3, 1], [1, 3, 0, 2]])  # noqa: E731  (unique per row: no write races)
    case(w, "scatter/dim1", lambda input, index, src: torch.scatter(input, 1, index, src),
         {"input": randn(2, 5), "index": perm, "src": randn(2, 4)}, params=[1])
    case(w, "scatter/src_larger", lambda input, index, src: torch.scatter(input, 0, index, src),
         {"input": randn(4, 3), "index": lambda: torch.tensor([[3, 1], [0, 2]]), "src": randn(3, 3)}, params=[0],
         differentiable=False)  # torch 2.15's ScatterBackward returns src's gradient in the index's shape here
    case(w, "scatter_value/dim1", lambda input, index: torch.scatter(input, 1, index, 2.5),
         {"input": randn(2, 5), "index": perm}, params=[1], scalars=[2.5])
    dup = lambda: torch.tensor([[0, 0, 2, 0], [1, 3, 1, 1]])  # noqa: E731
    case(w, "scatter_add/duplicates", lambda input, index, src: torch.scatter_add(input, 1, index, src),
         {"input": randn(2, 4), "index": dup, "src": randn(2, 4)}, params=[1])
    case(w, "scatter_add/int", lambda input, index, src: torch.scatter_add(input, 1, index, src),
         {"input": ints(-5, 5, 2, 4), "index": dup, "src": ints(-5, 5, 2, 4)}, params=[1])
    # index_select / index_add: params = [dim]; index_add's scalars = [alpha]
    case(w, "index_select/dim1_repeats", lambda input, index: torch.index_select(input, 1, index),
         {"input": randn(3, 4, 2), "index": lambda: torch.tensor([3, 0, 3, 1, 1])}, params=[1])
    case(w, "index_select/int", lambda input, index: torch.index_select(input, 0, index),
         {"input": ints(0, 9, 4, 2), "index": lambda: torch.tensor([2, 2, 0])}, params=[0])
    case(w, "index_add/dim0_alpha", lambda input, index, source: torch.index_add(input, 0, index, source, alpha=-1.5),
         {"input": randn(4, 3), "index": lambda: torch.tensor([1, 3, 1, 0, 1]), "source": randn(5, 3)}, params=[0], scalars=[-1.5])
    # masked_fill (scalars = [value]; a tensor value as `value`), masked_select, nonzero; masks stored as 0/1
    case(w, "masked_fill/scalar_broadcast", lambda input, mask: input.masked_fill(mask, -4.5),
         {"input": randn(3, 4), "mask": bools(4)}, scalars=[-4.5])
    case(w, "masked_fill/tensor_value", lambda input, mask, value: input.masked_fill(mask, value),
         {"input": randn(3, 4), "mask": bools(3, 4), "value": lambda: torch.tensor(0.75, dtype=torch.float64)})
    case(w, "masked_select/broadcast", lambda input, mask: torch.masked_select(input, mask),
         {"input": randn(3, 1), "mask": bools(3, 4)})
    case(w, "nonzero/3d", lambda input: torch.nonzero(input), {"input": ints(0, 2, 2, 3, 4)})
    case(w, "nonzero/float", lambda input: torch.nonzero(input),
         {"input": lambda: torch.tensor([0., -1., float("nan"), 0., 2.], dtype=torch.float64)})
    # index (t[...]): params describe the index list, one entry per position: 0 = full slice, 1 = the
    # next recorded index tensor (i0, i1, ...; masks stored as 0/1 with `m` names: m0, ...)
    x = randn(3, 4, 5)
    case(w, "index/one_dim", lambda input, i0: input[i0], {"input": x, "i0": lambda: torch.tensor([2, -1, 0, 2])}, params=[1])
    case(w, "index/middle_dim", lambda input, i0: input[:, i0], {"input": x, "i0": lambda: torch.tensor([[3, 0], [-4, 1]])},
         params=[0, 1])
    case(w, "index/adjacent_pair", lambda input, i0, i1: input[:, i0, i1],
         {"input": x, "i0": lambda: torch.tensor([0, 3, 3]), "i1": lambda: torch.tensor([[4], [0]])}, params=[0, 1, 1])
    case(w, "index/separated_pair", lambda input, i0, i1: input[i0, :, i1],
         {"input": x, "i0": lambda: torch.tensor([2, 0, 1]), "i1": lambda: torch.tensor([4, 4, -5])}, params=[1, 0, 1])
    case(w, "index/mask", lambda input, m0: input[m0], {"input": x, "m0": bools(3, 4)}, params=[2])
    case(w, "index/mask_after_slice", lambda input, m0: input[:, m0], {"input": x, "m0": bools(4)}, params=[0, 2])
    # index_put (t[...] = values): params = [accumulate, the index list as above]
    case(w, "index_put/pair", lambda input, i0, i1, values: torch.index_put(input, (i0, i1), values),
         {"input": randn(3, 4, 2), "i0": lambda: torch.tensor([2, 0, 1]), "i1": lambda: torch.tensor([1, 3, -1]),
          "values": randn(3, 2)}, params=[0, 1, 1])
    case(w, "index_put/accumulate_repeats", lambda input, i0, values: torch.index_put(input, (i0,), values, accumulate=True),
         {"input": randn(4, 3), "i0": lambda: torch.tensor([1, 3, 1, 1]), "values": randn(4, 3)}, params=[1, 1])
    case(w, "index_put/mask_broadcast_value", lambda input, m0, values: torch.index_put(input, (m0,), values),
         {"input": randn(3, 4), "m0": bools(3, 4), "values": lambda: torch.tensor([-2.0], dtype=torch.float64)}, params=[0, 2])
    case(w, "index_put/separated", lambda input, i0, i1, values: index_put_slices(input, (i0, slice(None), i1), values),
         {"input": randn(3, 2, 4), "i0": lambda: torch.tensor([0, 2]), "i1": lambda: torch.tensor([3, 1]),
          "values": randn(2, 2)}, params=[0, 1, 0, 1])


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    w = GoldenWriter()
    add_math(w)
    add_reductions(w)
    add_shape(w)
    add_indexing(w)
    path = os.path.join(outdir, "ops_tensor_v1.bin")
    size = w.write(path)
    records = read_golden(path)
    assert list(records) == list(w.records), path
    for name, t in w.records.items():
        r = records[name]
        assert r.dtype == t.dtype and (torch.equal(r, t) or torch.allclose(r, t, rtol=0, atol=0, equal_nan=True)), name
    print(f"{path}: {len(records)} records, {size} bytes (torch {torch.__version__})")


if __name__ == "__main__":
    main()
