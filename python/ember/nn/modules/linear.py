"""Identity, Linear, Flatten and Unflatten, as torch.nn's."""

from __future__ import annotations

from ... import _core
from ..._core import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter
from ._common import new_tensor
from .module import Module

__all__ = ["Identity", "Linear", "Flatten", "Unflatten"]


class Identity(Module):
    """Returns its input; the constructor takes any arguments, as PyTorch's."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:
        return input


class Linear(Module):
    """y = x W^T + b: weight (out_features, in_features), bias (out_features), initialised as PyTorch's
    (kaiming_uniform_(a=sqrt(5)), bias U(-1/sqrt(in_features), 1/sqrt(in_features)))."""

    __constants__ = ["in_features", "out_features"]

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(new_tensor((out_features, in_features), device, dtype))
        if bias:
            self.bias = Parameter(new_tensor((out_features,), device, dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init._reset_weight_and_bias(self.weight, self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Flatten(Module):
    """input.flatten(start_dim, end_dim); start_dim defaults to 1 (keeps the batch dim)."""

    __constants__ = ["start_dim", "end_dim"]

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input: Tensor) -> Tensor:
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """input.unflatten(dim, unflattened_size)."""

    def __init__(self, dim, unflattened_size) -> None:
        super().__init__()
        if isinstance(dim, str):
            raise NotImplementedError("torch.nn.Unflatten with a named dim is not implemented in ember yet "
                                      "(ember has no named tensors); pass the dim's index")
        if not isinstance(unflattened_size, (list, tuple)):
            raise TypeError("unflattened_size must be tuple of ints, but found type {}".format(
                type(unflattened_size).__name__))
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input: Tensor) -> Tensor:
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
