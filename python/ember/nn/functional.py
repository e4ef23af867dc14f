"""``ember.nn.functional``: torch.nn.functional's names, signatures and defaults over ember's C++ ops
(ember/ops.h, ember/ops_nn.h, bound in python/src/functional.cpp). Python converts PyTorch's
arguments (an int or a tuple, ``padding="same"``, ``reduction=``, ``inplace=``) and calls; every number
is computed in C++.

Where ember differs from PyTorch:
- ``inplace=True`` writes the result into ``input`` and returns it, except when ``input`` requires grad
  while grad mode is on: ember records no in-place history, so there the result is returned as a new
  tensor and ``input`` keeps its values (``x = F.relu(x, inplace=True)`` and ``nn.ReLU(inplace=True)``
  give the same values and gradients as PyTorch).
- A torch.nn.functional name ember has no op for raises NotImplementedError naming it.
"""

from __future__ import annotations

import warnings
from typing import List, Optional, Sequence, Tuple, Union

from .. import _core
from .._core import Tensor
from ..autograd import is_grad_enabled
from ..errors import NotImplementedError as _NotImplemented
from ..errors import NotInEmberError as _NotInEmber
from ..errors import ValueError as _ValueError

_C = _core._nn

__all__ = [
    "relu", "relu_", "relu6", "leaky_relu", "leaky_relu_", "elu", "elu_", "selu", "selu_", "celu", "celu_", "gelu",
    "silu", "mish", "hardswish", "hardsigmoid", "hardtanh", "hardtanh_", "sigmoid", "tanh", "softmax", "log_softmax",
    "softmin", "softplus", "logsigmoid", "softsign", "glu", "prelu", "linear", "conv1d", "conv2d", "conv_transpose1d",
    "conv_transpose2d", "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d",
    "adaptive_avg_pool2d", "batch_norm", "layer_norm", "group_norm", "dropout", "dropout1d", "dropout2d",
    "dropout3d", "embedding", "one_hot", "interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "pad",
    "normalize", "cosine_similarity", "pairwise_distance", "cross_entropy", "nll_loss", "mse_loss", "l1_loss",
    "smooth_l1_loss", "huber_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
]


# ---- argument conversion ---------------------------------------------------------------------------------
def _ntuple(value, n: int, name: str) -> Tuple[int, ...]:
    """PyTorch's int-or-tuple argument as n ints (a one-element sequence is repeated, as PyTorch's)."""
    if isinstance(value, (list, tuple)):
        values = tuple(int(v) for v in value)
        if len(values) == 1:
            return values * n
        if len(values) != n:
            raise _ValueError(f"expected {name} to be a single integer value or a list of {n} values, "
                              f"but got {name}={list(values)}")
        return values
    return (int(value),) * n


def _pair(value, name: str = "argument") -> Tuple[int, int]:
    return _ntuple(value, 2, name)  # type: ignore[return-value]


def _single(value, name: str = "argument") -> int:
    return _ntuple(value, 1, name)[0]


def _legacy_reduction(size_average: Optional[bool], reduce: Optional[bool], reduction: str) -> str:
    """size_average / reduce (deprecated in PyTorch) as the reduction string, with PyTorch's warning."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    ret = "none" if not reduce else "mean" if size_average else "sum"
    warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{ret}' instead.",
                  UserWarning, stacklevel=3)
    return ret


def _not_in_ember(what: str, hint: str = "") -> _NotImplemented:
    return _NotImplemented(f"{what} is not implemented in ember yet" + (f"; {hint}" if hint else ""))


def _result_into(input: Tensor, result: Tensor) -> Tensor:
    """inplace=True: input takes result's values and is returned. ember records no in-place history, so
    an input that requires grad under grad mode keeps its values and the result is returned instead."""
    if input.requires_grad and is_grad_enabled():
        return result
    return input.copy_(result)


# ---- activations -----------------------------------------------------------------------------------------
def relu(input: Tensor, inplace: bool = False) -> Tensor:
    if inplace and not (input.requires_grad and is_grad_enabled()):
        return input.relu_()
    return _C.relu(input)


def relu_(input: Tensor) -> Tensor:
    return relu(input, inplace=True)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    r = _C.relu6(input)
    return _result_into(input, r) if inplace else r


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    r = _C.leaky_relu(input, float(negative_slope))
    return _result_into(input, r) if inplace else r


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    return leaky_relu(input, negative_slope, inplace=True)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    r = _C.elu(input, float(alpha))
    return _result_into(input, r) if inplace else r


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return elu(input, alpha, inplace=True)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    r = _C.selu(input)
    return _result_into(input, r) if inplace else r


def selu_(input: Tensor) -> Tensor:
    return selu(input, inplace=True)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    r = _C.celu(input, float(alpha))
    return _result_into(input, r) if inplace else r


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return celu(input, alpha, inplace=True)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    return _C.gelu(input, approximate)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    r = _C.silu(input)
    return _result_into(input, r) if inplace else r


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    r = _C.mish(input)
    return _result_into(input, r) if inplace else r


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    r = _C.hardswish(input)
    return _result_into(input, r) if inplace else r


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    r = _C.hardsigmoid(input)
    return _result_into(input, r) if inplace else r


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    r = _C.hardtanh(input, float(min_val), float(max_val))
    return _result_into(input, r) if inplace else r


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    return hardtanh(input, min_val, max_val, inplace=True)


def sigmoid(input: Tensor) -> Tensor:
    return _C.sigmoid(input)


def tanh(input: Tensor) -> Tensor:
    return _C.tanh(input)


def _softmax_dim(name: str, ndim: int) -> int:
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
                  "as an argument.", UserWarning, stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def _softmax_input(input: Tensor, dtype) -> Tensor:
    return input if dtype is None else input.to(dtype)


def softmax(input: Tensor, dim: Optional[int] = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    if dim is None:
        dim = _softmax_dim("softmax", input.dim())
    return _C.softmax(_softmax_input(input, dtype), dim)


def softmin(input: Tensor, dim: Optional[int] = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    if dim is None:
        dim = _softmax_dim("softmin", input.dim())
    return _C.softmax(-_softmax_input(input, dtype), dim)


def log_softmax(input: Tensor, dim: Optional[int] = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    if dim is None:
        dim = _softmax_dim("log_softmax", input.dim())
    return _C.log_softmax(_softmax_input(input, dtype), dim)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    return _C.softplus(input, float(beta), float(threshold))


def logsigmoid(input: Tensor) -> Tensor:
    return _C.logsigmoid(input)


def softsign(input: Tensor) -> Tensor:
    return _C.softsign(input)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    return _C.glu(input, dim)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    return _C.prelu(input, weight)


# ---- linear and convolutions -----------------------------------------------------------------------------
def linear(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    return _C.linear(input, weight, bias)


def conv2d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None, stride=1, padding=0, dilation=1,
           groups: int = 1) -> Tensor:
    if isinstance(padding, str):
        return _C.conv2d_padding(input, weight, bias, padding, _pair(stride, "stride"), _pair(dilation, "dilation"),
                                 int(groups))
    return _C.conv2d(input, weight, bias, _pair(stride, "stride"), _pair(padding, "padding"),
                     _pair(dilation, "dilation"), int(groups))


def conv1d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None, stride=1, padding=0, dilation=1,
           groups: int = 1) -> Tensor:
    if isinstance(padding, str):
        return _C.conv1d_padding(input, weight, bias, padding, _single(stride, "stride"),
                                 _single(dilation, "dilation"), int(groups))
    return _C.conv1d(input, weight, bias, _single(stride, "stride"), _single(padding, "padding"),
                     _single(dilation, "dilation"), int(groups))


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None, stride=1, padding=0,
                     output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    return _C.conv_transpose2d(input, weight, bias, _pair(stride, "stride"), _pair(padding, "padding"),
                               _pair(output_padding, "output_padding"), int(groups), _pair(dilation, "dilation"))


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None, stride=1, padding=0,
                     output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    return _C.conv_transpose1d(input, weight, bias, _single(stride, "stride"), _single(padding, "padding"),
                               _single(output_padding, "output_padding"), int(groups), _single(dilation, "dilation"))


# ---- pooling ---------------------------------------------------------------------------------------------
def _pool_stride(stride, kernel, n: int, name: str):
    if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0):
        return _ntuple(kernel, n, "kernel_size")
    return _ntuple(stride, n, name)


def _no_max_pool_extras(fn: str, dilation, n: int, return_indices: bool) -> None:
    if return_indices:
        raise _not_in_ember(f"torch.nn.functional.{fn}(return_indices=True)",
                            "ember's max pooling returns the values only (no indices for max_unpool)")
    if any(d != 1 for d in _ntuple(dilation, n, "dilation")):
        raise _not_in_ember(f"torch.nn.functional.{fn} with dilation != 1", "use dilation=1")


def max_pool2d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False) -> Tensor:
    _no_max_pool_extras("max_pool2d", dilation, 2, return_indices)
    return _C.max_pool2d(input, _pair(kernel_size, "kernel_size"), _pool_stride(stride, kernel_size, 2, "stride"),
                         _pair(padding, "padding"), bool(ceil_mode))


def max_pool1d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False) -> Tensor:
    _no_max_pool_extras("max_pool1d", dilation, 1, return_indices)
    return _C.max_pool1d(input, _single(kernel_size, "kernel_size"), _pool_stride(stride, kernel_size, 1, "stride")[0],
                         _single(padding, "padding"), bool(ceil_mode))


def avg_pool2d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: Optional[int] = None) -> Tensor:
    if divisor_override is not None:
        raise _not_in_ember("torch.nn.functional.avg_pool2d(divisor_override=...)", "leave divisor_override None")
    return _C.avg_pool2d(input, _pair(kernel_size, "kernel_size"), _pool_stride(stride, kernel_size, 2, "stride"),
                         _pair(padding, "padding"), bool(ceil_mode), bool(count_include_pad))


def avg_pool1d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    return _C.avg_pool1d(input, _single(kernel_size, "kernel_size"), _pool_stride(stride, kernel_size, 1, "stride")[0],
                         _single(padding, "padding"), bool(ceil_mode), bool(count_include_pad))


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:
    sizes = list(output_size) if isinstance(output_size, (list, tuple)) else [output_size, output_size]
    if len(sizes) == 1:
        sizes = sizes * 2
    if len(sizes) != 2:
        raise _ValueError(f"adaptive_avg_pool2d: output_size must be an int or 2 values, got {output_size!r}")
    # None keeps the input's size in that dim (PyTorch's rule).
    sizes = [int(input.shape[input.dim() - 2 + i]) if s is None else int(s) for i, s in enumerate(sizes)]
    return _C.adaptive_avg_pool2d(input, sizes)


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    return _C.adaptive_avg_pool1d(input, _single(output_size, "output_size"))


# ---- normalisation -------------------------------------------------------------------------------------------
def batch_norm(input: Tensor, running_mean: Optional[Tensor], running_var: Optional[Tensor],
               weight: Optional[Tensor] = None, bias: Optional[Tensor] = None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    return _C.batch_norm(input, running_mean, running_var, weight, bias, bool(training), float(momentum), float(eps))


def layer_norm(input: Tensor, normalized_shape, weight: Optional[Tensor] = None, bias: Optional[Tensor] = None,
               eps: float = 1e-5) -> Tensor:
    shape = [int(normalized_shape)] if not isinstance(normalized_shape, (list, tuple)) else [int(s) for s in normalized_shape]
    return _C.layer_norm(input, shape, weight, bias, float(eps))


def group_norm(input: Tensor, num_groups: int, weight: Optional[Tensor] = None, bias: Optional[Tensor] = None,
               eps: float = 1e-5) -> Tensor:
    return _C.group_norm(input, int(num_groups), weight, bias, float(eps))


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out: Optional[Tensor] = None) -> Tensor:
    r = _C.normalize(input, float(p), int(dim), float(eps))
    return r if out is None else out.copy_(r)


# ---- dropout -------------------------------------------------------------------------------------------------
def _check_p(p: float) -> float:
    if p < 0.0 or p > 1.0:
        raise _ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    return float(p)


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    r = _C.dropout(input, _check_p(p), bool(training))
    return _result_into(input, r) if inplace and training else r


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    r = _C.dropout1d(input, _check_p(p), bool(training))
    return _result_into(input, r) if inplace else r


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    r = _C.dropout2d(input, _check_p(p), bool(training))
    return _result_into(input, r) if inplace else r


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    r = _C.dropout3d(input, _check_p(p), bool(training))
    return _result_into(input, r) if inplace else r


# ---- embedding, one_hot --------------------------------------------------------------------------------------
def embedding(input: Tensor, weight: Tensor, padding_idx: Optional[int] = None, max_norm: Optional[float] = None,
              norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    if max_norm is not None:
        raise _not_in_ember("torch.nn.functional.embedding(max_norm=...)", "renormalise the weight yourself")
    if scale_grad_by_freq or sparse:
        raise _not_in_ember("torch.nn.functional.embedding(scale_grad_by_freq=True / sparse=True)",
                            "ember's embedding gradient is dense and unscaled")
    return _C.embedding(input, weight, padding_idx)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    if num_classes == -1:  # PyTorch's: one more than the largest label (a host read)
        num_classes = int(tensor.max()) + 1 if tensor.numel() > 0 else 0
    return _C.one_hot(tensor, int(num_classes))


# ---- resampling, padding -------------------------------------------------------------------------------------
def interpolate(input: Tensor, size=None, scale_factor=None, mode: str = "nearest", align_corners: Optional[bool] = None,
                recompute_scale_factor: Optional[bool] = None, antialias: bool = False) -> Tensor:
    if antialias:
        raise _not_in_ember("torch.nn.functional.interpolate(antialias=True)", "use antialias=False")
    sizes = [] if size is None else [int(s) for s in size] if isinstance(size, (list, tuple)) else [int(size)]
    scales = ([] if scale_factor is None else [float(s) for s in scale_factor]
              if isinstance(scale_factor, (list, tuple)) else [float(scale_factor)])
    return _C.interpolate(input, sizes, scales, mode, align_corners, recompute_scale_factor)


def upsample(input: Tensor, size=None, scale_factor=None, mode: str = "nearest", align_corners: Optional[bool] = None):
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size=None, scale_factor=None) -> Tensor:
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size=None, scale_factor=None) -> Tensor:
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant", value: Optional[float] = None) -> Tensor:
    return _C.pad(input, [int(p) for p in pad], mode, 0.0 if value is None else float(value))


# ---- distances -----------------------------------------------------------------------------------------------
def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    return _C.cosine_similarity(x1, x2, int(dim), float(eps))


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    return _C.pairwise_distance(x1, x2, float(p), float(eps), bool(keepdim))


# ---- losses --------------------------------------------------------------------------------------------------
def _no_weight(fn: str, weight) -> None:
    if weight is not None:
        raise _not_in_ember(f"torch.nn.functional.{fn}(weight=...)", "multiply reduction='none''s result by it")


def cross_entropy(input: Tensor, target: Tensor, weight: Optional[Tensor] = None, size_average: Optional[bool] = None,
                  ignore_index: int = -100, reduce: Optional[bool] = None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _C.cross_entropy(input, target, weight, int(ignore_index), reduction, float(label_smoothing))


def nll_loss(input: Tensor, target: Tensor, weight: Optional[Tensor] = None, size_average: Optional[bool] = None,
             ignore_index: int = -100, reduce: Optional[bool] = None, reduction: str = "mean") -> Tensor:
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _C.nll_loss(input, target, weight, int(ignore_index), reduction)


def mse_loss(input: Tensor, target: Tensor, size_average: Optional[bool] = None, reduce: Optional[bool] = None,
             reduction: str = "mean", weight: Optional[Tensor] = None) -> Tensor:
    _no_weight("mse_loss", weight)
    return _C.mse_loss(input, target, _legacy_reduction(size_average, reduce, reduction))


def l1_loss(input: Tensor, target: Tensor, size_average: Optional[bool] = None, reduce: Optional[bool] = None,
            reduction: str = "mean", weight: Optional[Tensor] = None) -> Tensor:
    _no_weight("l1_loss", weight)
    return _C.l1_loss(input, target, _legacy_reduction(size_average, reduce, reduction))


def smooth_l1_loss(input: Tensor, target: Tensor, size_average: Optional[bool] = None, reduce: Optional[bool] = None,
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    return _C.smooth_l1_loss(input, target, _legacy_reduction(size_average, reduce, reduction), float(beta))


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Optional[Tensor] = None) -> Tensor:
    _no_weight("huber_loss", weight)
    return _C.huber_loss(input, target, reduction, float(delta))


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Optional[Tensor] = None,
                         size_average: Optional[bool] = None, reduce: Optional[bool] = None,
                         reduction: str = "mean") -> Tensor:
    return _C.binary_cross_entropy(input, target, weight, _legacy_reduction(size_average, reduce, reduction))


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Optional[Tensor] = None,
                                     size_average: Optional[bool] = None, reduce: Optional[bool] = None,
                                     reduction: str = "mean", pos_weight: Optional[Tensor] = None) -> Tensor:
    return _C.binary_cross_entropy_with_logits(input, target, weight,
                                               _legacy_reduction(size_average, reduce, reduction), pos_weight)


def kl_div(input: Tensor, target: Tensor, size_average: Optional[bool] = None, reduce: Optional[bool] = None,
           reduction: str = "mean", log_target: bool = False) -> Tensor:
    return _C.kl_div(input, target, _legacy_reduction(size_average, reduce, reduction), bool(log_target))


# ---- what PyTorch has and ember does not ----------------------------------------------------------------------
# torch.nn.functional's public functions in PyTorch 2.15 that ember lacks: each raises NotImplementedError
# naming it (module __getattr__), so a program fails at the call it cannot run, with a message, not at import.
_TORCH_ONLY = frozenset([
    "adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d",
    "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d", "adaptive_max_pool3d_with_indices", "affine_grid",
    "alpha_dropout", "avg_pool3d", "bilinear", "channel_shuffle", "conv3d", "conv_tbc", "conv_transpose3d",
    "cosine_embedding_loss", "ctc_loss", "embedding_bag", "feature_alpha_dropout", "fold", "fractional_max_pool2d",
    "fractional_max_pool2d_with_indices", "fractional_max_pool3d", "fractional_max_pool3d_with_indices",
    "gaussian_nll_loss", "grid_sample", "grouped_mm", "gumbel_softmax", "hardshrink", "hinge_embedding_loss",
    "instance_norm", "linear_cross_entropy", "local_response_norm", "lp_pool1d", "lp_pool2d", "lp_pool3d",
    "margin_ranking_loss", "max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d",
    "max_pool3d_with_indices", "max_unpool1d", "max_unpool2d", "max_unpool3d", "multi_head_attention_forward",
    "multi_margin_loss", "multilabel_margin_loss", "multilabel_soft_margin_loss", "native_channel_shuffle", "pdist",
    "pixel_shuffle", "pixel_unshuffle", "poisson_nll_loss", "rms_norm", "rrelu", "rrelu_", "scaled_addmm",
    "scaled_addmm_", "scaled_dot_product_attention", "scaled_grouped_mm", "scaled_mm", "soft_margin_loss",
    "softshrink", "tanhshrink", "threshold", "threshold_", "triplet_margin_loss",
    "triplet_margin_with_distance_loss", "unfold",
])


def __getattr__(name: str):
    if name in _TORCH_ONLY:
        raise _NotInEmber(f"torch.nn.functional.{name} is not implemented in ember yet; "
                              f"ember.nn.functional.__all__ lists the functions ember has (docs/python.md)")
    raise AttributeError(f"module 'ember.nn.functional' has no attribute '{name}'")
