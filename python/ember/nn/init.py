"""``ember.nn.init``: torch.nn.init's fills, in place and without autograd history, drawn from ember's
default generator (ember.manual_seed) by the C++ of ember/nn/init.h. The numbers differ from
PyTorch's for the same seed; the distributions are PyTorch's."""

from __future__ import annotations

import warnings
from typing import Optional, Tuple

from .. import _core
from .._core import Tensor
from ..errors import NotImplementedError as _NotImplemented

_I = _core._nn.init

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_",
           "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_",
           "sparse_"]


def _no_generator(generator) -> None:
    if generator is not None:
        raise _NotImplemented("torch.nn.init's generator= is not implemented in ember yet; ember draws from the "
                              "default generator (seed it with ember.manual_seed)")


def calculate_gain(nonlinearity: str, param: Optional[float] = None) -> float:
    if nonlinearity == "leaky_relu" and param is not None:
        if isinstance(param, bool) or not isinstance(param, (int, float)):
            raise ValueError(f"negative_slope {param} not a valid number")
    return _I.calculate_gain(nonlinearity, 0.01 if param is None else float(param))


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> Tuple[int, int]:
    return _I.calculate_fan_in_and_fan_out(tensor)


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    _no_generator(generator)
    _I.uniform_(tensor, float(a), float(b))
    return tensor


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    _no_generator(generator)
    _I.normal_(tensor, float(mean), float(std))
    return tensor


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0,
                  generator=None) -> Tensor:
    _no_generator(generator)
    _I.trunc_normal_(tensor, float(mean), float(std), float(a), float(b))
    return tensor


def constant_(tensor: Tensor, val: float) -> Tensor:
    _I.constant_(tensor, float(val))
    return tensor


def ones_(tensor: Tensor) -> Tensor:
    _I.ones_(tensor)
    return tensor


def zeros_(tensor: Tensor) -> Tensor:
    _I.zeros_(tensor)
    return tensor


def eye_(tensor: Tensor) -> Tensor:
    _I.eye_(tensor)
    return tensor


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    _no_generator(generator)
    _I.xavier_uniform_(tensor, float(gain))
    return tensor


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    _no_generator(generator)
    _I.xavier_normal_(tensor, float(gain))
    return tensor


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                     generator=None) -> Tensor:
    _no_generator(generator)
    _I.kaiming_uniform_(tensor, float(a), mode, nonlinearity)
    return tensor


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                    generator=None) -> Tensor:
    _no_generator(generator)
    _I.kaiming_normal_(tensor, float(a), mode, nonlinearity)
    return tensor


def orthogonal_(tensor: Tensor, gain: float = 1, generator=None) -> Tensor:
    _no_generator(generator)
    _I.orthogonal_(tensor, float(gain))
    return tensor


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    raise _NotImplemented("torch.nn.init.dirac_ is not implemented in ember yet")


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator=None) -> Tensor:
    raise _NotImplemented("torch.nn.init.sparse_ is not implemented in ember yet")


def _reset_weight_and_bias(weight: Tensor, bias: Optional[Tensor]) -> None:
    """Linear's and the convolutions' reset_parameters: kaiming_uniform_(weight, a=sqrt(5)) and the bias
    U(-1/sqrt(fan_in), 1/sqrt(fan_in)) (ember/nn/init.h's reset_weight_and_bias_)."""
    _I.reset_weight_and_bias_(weight, bias)


def _reset_embedding(weight: Tensor, padding_idx: Optional[int]) -> None:
    _I.reset_embedding_(weight, padding_idx)


def _deprecated(new):
    def old(*args, **kwargs):
        warnings.warn(f"`nn.init.{new.__name__[:-1]}` is now deprecated in favor of `nn.init.{new.__name__}`.",
                      FutureWarning, stacklevel=2)
        return new(*args, **kwargs)

    old.__name__ = new.__name__[:-1]
    return old


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
eye = _deprecated(eye_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
