"""PyTorch's top-level names on ember (``import ember as torch``): dtypes and their aliases, the
creation functions, the grad modes, and every tensor method that PyTorch also offers as a function
(``ember.exp(t)`` is ``t.exp()``). Each is the C++ binding or a thin call of it."""

from __future__ import annotations

from . import _core
from ._core import Tensor
from ._tensor import Size, as_tensor, rand_like, randint, randint_like, randn_like, return_types, tensor
from .autograd import enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad, set_grad_enabled

dtype = _core.dtype
device = _core.Device
float32 = _core.float32
float64 = _core.float64
float16 = _core.float16
bfloat16 = _core.bfloat16
int64 = _core.int64
int32 = _core.int32
uint8 = _core.uint8
bool = _core.bool  # noqa: A001 - PyTorch's names shadow the built-ins inside the ember namespace only
float = float32  # noqa: A001
double = float64
half = float16
long = int64
int = int32  # noqa: A001

from ._core import (arange, can_cast, cat, concat, empty, empty_like, eye, full, full_like,  # noqa: E402
                    get_default_dtype, get_num_threads, initial_seed, linspace, manual_seed, ones, ones_like,
                    promote_types, rand, randn, randperm, result_type, set_default_dtype, set_num_threads, stack,
                    where, zeros, zeros_like)


def is_tensor(obj) -> bool:
    return isinstance(obj, Tensor)


def is_floating_point(input: Tensor) -> bool:
    return input.is_floating_point()


def numel(input: Tensor) -> int:
    return input.numel()


def _function(name: str):
    method = getattr(Tensor, name)

    def fn(input, *args, **kwargs):
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' must be a Tensor, not {type(input).__name__}")
        return method(input, *args, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"ember.{name}(input, ...) is input.{name}(...)."
    return fn


_METHODS_AS_FUNCTIONS = [
    "abs", "absolute", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "relu", "neg", "negative",
    "floor", "ceil", "trunc", "round", "log1p", "expm1", "reciprocal", "sign", "isnan", "isinf", "isfinite",
    "square", "clamp", "clip", "lerp", "sum", "mean", "prod", "amax", "amin", "max", "min", "argmax", "argmin",
    "var", "std", "all", "any", "count_nonzero", "norm", "logsumexp", "cumsum", "cumprod", "reshape", "flatten",
    "unflatten", "squeeze", "unsqueeze", "permute", "transpose", "swapaxes", "t", "narrow", "select", "movedim",
    "split", "chunk", "unbind", "tril", "triu", "flip", "roll", "gather", "scatter", "scatter_add", "index_select",
    "index_add", "masked_fill", "masked_select", "nonzero", "add", "sub", "subtract", "mul", "multiply", "div",
    "divide", "true_divide", "floor_divide", "remainder", "fmod", "pow", "maximum", "minimum", "matmul", "mm", "bmm",
    "eq", "ne", "lt", "le", "gt", "ge", "greater", "less", "equal", "allclose", "logical_and", "logical_or",
    "logical_xor", "logical_not", "bitwise_not", "bitwise_and", "bitwise_or", "bitwise_xor", "detach", "clone",
    "ravel", "softmax", "log_softmax",
]
for _name in _METHODS_AS_FUNCTIONS:
    globals()[_name] = _function(_name)
del _name

__all__ = [
    "dtype", "device", "float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "bool", "float",
    "double", "half", "long", "int", "Size", "return_types", "tensor", "as_tensor", "rand_like", "randn_like",
    "randint", "randint_like", "arange", "can_cast", "cat", "concat", "empty", "empty_like", "eye", "full",
    "full_like", "get_default_dtype", "get_num_threads", "initial_seed", "linspace", "manual_seed", "ones",
    "ones_like", "promote_types", "rand", "randn", "randperm", "result_type", "set_default_dtype",
    "set_num_threads", "stack", "where", "zeros", "zeros_like", "is_tensor", "is_floating_point", "numel",
    "no_grad", "enable_grad", "inference_mode", "set_grad_enabled", "is_grad_enabled", "is_inference_mode_enabled",
] + _METHODS_AS_FUNCTIONS
