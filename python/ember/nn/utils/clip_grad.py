"""torch.nn.utils.clip_grad_norm_ / clip_grad_value_ over ember/nn/clip_grad.h: in place on each
parameter's .grad (parameters without one are skipped)."""

from __future__ import annotations

import warnings
from typing import Iterable, Optional, Union

from ... import _core
from ..._core import Tensor

_TensorOrTensors = Union[Tensor, Iterable[Tensor]]


def _as_list(parameters: _TensorOrTensors) -> list:
    return [parameters] if isinstance(parameters, Tensor) else list(parameters)


def clip_grad_norm_(parameters: _TensorOrTensors, max_norm: float, norm_type: Union[float, str] = 2.0,
                    error_if_nonfinite: bool = False, foreach: Optional[bool] = None) -> Tensor:
    """Scales the gradients so that their total norm (of order norm_type, "inf" allowed) is at most
    max_norm; returns the total norm before clipping (a 0-d tensor)."""
    return _core._nn.clip_grad_norm_(_as_list(parameters), float(max_norm), float(norm_type),
                                     bool(error_if_nonfinite))


def clip_grad_norm(parameters: _TensorOrTensors, max_norm: float, norm_type: Union[float, str] = 2.0,
                   error_if_nonfinite: bool = False, foreach: Optional[bool] = None) -> Tensor:
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.",
                  FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters: _TensorOrTensors, clip_value: float, foreach: Optional[bool] = None) -> None:
    """Clamps every gradient to [-clip_value, clip_value]."""
    _core._nn.clip_grad_value_(_as_list(parameters), float(clip_value))
