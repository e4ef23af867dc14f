"""ember.Tensor's Python half: what converts arguments PyTorch's way before the C++ ops run.

The class is the C++ one (ember._core.Tensor, python/src/tensor.cpp and tensor_api.cpp); this module
adds indexing (``t[1:, mask] = 0``), ``.to(...)``, ``.backward``, iteration, and the creation
functions whose argument is Python data (``ember.tensor([[1, 2], [3, 4]])``). No numerics here: every
value is computed by the C++ library.
"""

from __future__ import annotations

import collections
import numbers
from typing import Any, Optional

import numpy as _np

from . import _core
from ._core import Tensor
from .errors import AutogradError, DTypeError

__all__ = ["Size", "return_types", "tensor", "as_tensor", "randint", "rand_like", "randn_like", "randint_like"]


class Size(tuple):
    """A tensor's sizes, as torch.Size: a tuple of ints with ``numel()``."""

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n

    def __repr__(self) -> str:
        return f"ember.Size({list(self)})"

    def __getitem__(self, key):  # a slice of a Size is a Size
        r = super().__getitem__(key)
        return Size(r) if isinstance(key, slice) else r


class return_types:  # noqa: N801 - PyTorch's name (torch.return_types)
    """The named tuples of ops that return values and indices (``t.max(dim)``)."""

    max = collections.namedtuple("max", ["values", "indices"])
    min = collections.namedtuple("min", ["values", "indices"])
    sort = collections.namedtuple("sort", ["values", "indices"])
    topk = collections.namedtuple("topk", ["values", "indices"])


# ---- creation from Python data ----------------------------------------------------------------------
def _numpy_of(data: Any, dtype) -> _np.ndarray:
    """Python data as a NumPy array whose dtype follows PyTorch's inference: Python floats become the
    default dtype, ints int64, bools bool; a NumPy array keeps its dtype."""
    if isinstance(data, Tensor):
        raise TypeError("internal: tensors are handled before NumPy")
    if isinstance(data, (list, tuple)) and any(isinstance(x, Tensor) for x in _flatten_first(data)):
        data = _nested_tensors_to_lists(data)
    if isinstance(data, _np.ndarray):
        arr = data
    else:
        arr = _np.asarray(data)
        if arr.dtype == _np.float64 and dtype is not None:
            pass  # converted once, from the exact values, to the dtype asked for
        elif arr.dtype == _np.float64:
            arr = arr.astype(_np.dtype(str(_core.get_default_dtype()).replace("ember.", "")))
        elif arr.dtype.kind in "iu" and arr.dtype != _np.uint8:
            arr = arr.astype(_np.int64)
        elif arr.dtype.kind == "O" or arr.dtype.kind in "USc":
            raise TypeError(f"tensor(): could not infer a dtype from {type(data).__name__} data "
                            f"(numbers, bools and nested lists of them are accepted)")
    return arr


def _flatten_first(data):
    while isinstance(data, (list, tuple)) and data:
        yield from (x for x in data if isinstance(x, Tensor))
        data = data[0]


def _nested_tensors_to_lists(data):
    if isinstance(data, Tensor):
        return data.tolist()
    if isinstance(data, (list, tuple)):
        return [_nested_tensors_to_lists(x) for x in data]
    return data


def tensor(data: Any, *, dtype=None, device=None, requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A new tensor holding a copy of ``data`` (a number, nested lists, a NumPy array or a tensor),
    as torch.tensor: Python floats become the default dtype (float32), ints int64, bools bool."""
    if isinstance(data, Tensor):
        t = data.detach().clone()
    else:
        arr = _numpy_of(data, dtype)
        if arr.dtype == _np.float16 or not arr.flags.c_contiguous or not arr.flags.aligned or not arr.flags.writeable:
            arr = _np.ascontiguousarray(arr)
        t = _core.from_numpy(arr).clone() if arr.ndim else _core.from_numpy(arr.reshape(1)).clone().reshape(())
    if dtype is not None or device is not None:
        t = t._to(device, dtype)
    if requires_grad:
        if not t.is_floating_point():
            raise RuntimeError("Only Tensors of floating point dtype can require gradients")
        t.requires_grad_(True)
    return t


def as_tensor(data: Any, dtype=None, device=None) -> Tensor:
    """A tensor sharing ``data``'s memory when it can (a tensor or a NumPy array of a matching dtype
    and device), else a copy: torch.as_tensor."""
    if isinstance(data, Tensor):
        return data._to(device, dtype)
    if isinstance(data, _np.ndarray) and data.dtype != _np.float16 and data.dtype.kind in "fiub":
        t = _core.from_numpy(data)
        return t._to(device, dtype)
    return tensor(data, dtype=dtype, device=device)


def randint(low, high=None, size=None, *, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Integers drawn uniformly from [low, high): randint(high, size) or randint(low, high, size)."""
    if size is None:  # randint(high, size)
        if high is None:
            raise TypeError("randint() missing the required argument 'size'")
        low, high, size = 0, low, high
    elif high is None:
        raise TypeError("randint(): give (high, size) or (low, high, size)")
    return _core._randint(int(low), int(high), tuple(size), dtype, device, requires_grad)


def rand_like(input: Tensor, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    return _core.rand(*input.shape, dtype=dtype or input.dtype, device=device or input.device, requires_grad=requires_grad)


def randn_like(input: Tensor, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    return _core.randn(*input.shape, dtype=dtype or input.dtype, device=device or input.device, requires_grad=requires_grad)


def randint_like(input: Tensor, low=0, high=None, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    if high is None:
        low, high = 0, low
    return randint(low, high, tuple(input.shape), dtype=dtype or input.dtype, device=device or input.device,
                   requires_grad=requires_grad)


# ---- .to(...) ---------------------------------------------------------------------------------------
_DEVICE_WORDS = ("cpu", "cuda")


def _to(self: Tensor, *args, **kwargs) -> Tensor:
    """t.to(device), t.to(dtype), t.to(device, dtype), t.to(other): a tensor on that device and/or of
    that dtype (the tensor itself when nothing changes, unless copy=True). ``.to("cuda")`` without a
    usable GPU raises ember.DeviceError (a RuntimeError) saying why."""
    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    kwargs.pop("non_blocking", None)
    kwargs.pop("memory_format", None)
    copy = kwargs.pop("copy", False)
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
    for a in args:
        if isinstance(a, Tensor):
            device, dtype = a.device, a.dtype
        elif isinstance(a, _core.dtype):
            dtype = a
        elif isinstance(a, _core.Device):
            device = a
        elif isinstance(a, str):
            if a.split(":")[0] in _DEVICE_WORDS:
                device = a
            else:
                dtype = a  # ember's earlier API: t.to("float32")
        elif isinstance(a, bool):
            continue  # non_blocking given positionally
        elif isinstance(a, int):
            device = a
        else:
            raise TypeError(f"to() received an invalid combination of arguments: {type(a).__name__}")
    r = self._to(device, dtype)
    if copy and r is self:
        r = self.clone()
    return r


# ---- indexing ---------------------------------------------------------------------------------------
def _is_mask(t: Tensor) -> bool:
    return t.dtype == _core.bool or t.dtype == _core.uint8


def _index_tensor(k, like: Tensor) -> Tensor:
    t = k if isinstance(k, Tensor) else tensor(k)
    if t.is_floating_point():
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    return t._to(like.device, None)


def _walk(self: Tensor, key):
    """Applies the basic part of an index (ints, slices, None, ...) as views; returns the view and
    the advanced indices (tensors, lists, masks) as (dim in the view, index tensor) pairs."""
    if not isinstance(key, tuple):
        key = (key,)
    keys = []
    for k in key:
        if isinstance(k, (list, _np.ndarray)) or (isinstance(k, Tensor)):
            keys.append(_index_tensor(k, self))
        else:
            keys.append(k)
    consumed = 0
    for k in keys:
        if k is None or k is Ellipsis or isinstance(k, bool):
            continue
        consumed += k.dim() if isinstance(k, Tensor) and _is_mask(k) else 1
    if consumed > self.dim():
        raise IndexError(f"too many indices for tensor of dimension {self.dim()}")
    t, d, advanced, ellipsis = self, 0, [], False
    for k in keys:
        if k is Ellipsis:
            if ellipsis:
                raise IndexError("an index can only have a single ellipsis ('...')")
            ellipsis = True
            d += self.dim() - consumed
        elif k is None or k is True:
            t = t.unsqueeze(d)
            d += 1
        elif k is False:
            t = t.unsqueeze(d)._slice(d, 0, 0, 1)
            d += 1
        elif isinstance(k, Tensor):
            advanced.append((d, k))
            d += k.dim() if _is_mask(k) else 1
        elif isinstance(k, slice):
            size = t.shape[d]
            step = 1 if k.step is None else _as_int(k.step)
            if step <= 0:
                raise ValueError("step must be greater than zero")
            start, stop, _ = slice(k.start if k.start is None else _as_int(k.start),
                                   k.stop if k.stop is None else _as_int(k.stop), step).indices(size)
            t = t._slice(d, start, max(start, stop), step)
            d += 1
        elif isinstance(k, numbers.Integral) or hasattr(k, "__index__"):
            i = _as_int(k)
            size = t.shape[d]
            if not -size <= i < size:
                raise IndexError(f"index {i} is out of bounds for dimension {d} with size {size}")
            t = t.select(d, i)
        else:
            raise TypeError(f"only integers, slices (`:`), ellipsis (`...`), None and long or byte tensors are "
                            f"valid indices, got {type(k).__name__}")
    return t, advanced


def _as_int(k) -> int:
    try:
        return k.__index__()
    except AttributeError:
        raise TypeError(f"slice indices must be integers or None, got {type(k).__name__}") from None


def _index_list(advanced):
    out, cur = [], 0
    for d, k in advanced:
        while cur < d:
            out.append(None)
            cur += 1
        out.append(k)
        cur += k.dim() if _is_mask(k) else 1
    return out


def _getitem(self: Tensor, key) -> Tensor:
    t, advanced = _walk(self, key)
    if advanced:
        t = t._index(_index_list(advanced))
    return t


def _setitem(self: Tensor, key, value) -> None:
    from .autograd import is_grad_enabled
    if self.requires_grad and is_grad_enabled():
        raise AutogradError(
            "a leaf Variable that requires grad is being used in an in-place operation." if self.is_leaf else
            "ember does not support assigning into a tensor that requires grad (PyTorch records it as CopySlices): "
            "build the result out of place, e.g. with ember.where or ember.cat",
            "wrap the assignment in `with ember.no_grad():` to change the data without recording it")
    if isinstance(value, (list, tuple)):
        raise TypeError(f"can't assign a {type(value).__name__} to a tensor: wrap it in ember.tensor(...)")
    t, advanced = _walk(self, key)
    if isinstance(value, _np.ndarray):
        value = tensor(value)
    if advanced:
        t.index_put_(_index_list(advanced), value if isinstance(value, Tensor) else value)
    elif isinstance(value, Tensor):
        t.copy_(value)
    else:
        t.fill_(value)


def _iter(self: Tensor):
    if self.dim() == 0:
        raise TypeError("iteration over a 0-d tensor")
    return iter(self.unbind(0))


# ---- autograd on the tensor -------------------------------------------------------------------------
def _backward(self: Tensor, gradient: Optional[Tensor] = None, retain_graph: Optional[bool] = None,
              create_graph: bool = False, inputs=None) -> None:
    """Computes the gradient of this tensor with respect to the graph's leaves and ADDS it into their
    ``.grad`` (as PyTorch). ``gradient`` is needed unless the tensor has one element; the graph's
    saved tensors are freed afterwards unless ``retain_graph=True``."""
    if create_graph:
        raise NotImplementedError("backward(create_graph=True): ember records no graph of the backward pass "
                                  "(no double backward) yet")
    if inputs is not None:
        raise NotImplementedError("backward(inputs=...): use ember.autograd.grad(outputs, inputs) instead")
    if gradient is not None and not isinstance(gradient, Tensor):
        gradient = tensor(gradient, dtype=self.dtype, device=self.device)
    _core._autograd.backward(self, gradient, bool(retain_graph))


class _GradFn:
    """What ``t.grad_fn`` shows: the name of the node that made the tensor (``<MulBackward>``)."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"<{self._name}>"


def _grad_fn(self: Tensor):
    name = _core._autograd.grad_fn_name(self)
    return None if name is None else _GradFn(name)


def _type(self: Tensor, dtype=None, non_blocking=False):
    if dtype is None:
        return {"float32": "ember.FloatTensor", "float64": "ember.DoubleTensor", "float16": "ember.HalfTensor",
                "bfloat16": "ember.BFloat16Tensor", "int64": "ember.LongTensor", "int32": "ember.IntTensor",
                "uint8": "ember.ByteTensor", "bool": "ember.BoolTensor"}[str(self.dtype).replace("ember.", "")]
    return self._to(None, dtype)


def _new_tensor(self: Tensor, data, dtype=None, device=None, requires_grad=False):
    return tensor(data, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)


def _new_zeros(self: Tensor, *size, dtype=None, device=None, requires_grad=False):
    return _core.zeros(*size, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)


def _new_ones(self: Tensor, *size, dtype=None, device=None, requires_grad=False):
    return _core.ones(*size, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)


def _new_full(self: Tensor, size, fill_value, dtype=None, device=None, requires_grad=False):
    return _core.full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
                      requires_grad=requires_grad)


def _new_empty(self: Tensor, *size, dtype=None, device=None, requires_grad=False):
    return _core.empty(*size, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)


def _where(self, condition, other):
    """t.where(condition, other) is ember.where(condition, t, other)."""
    return _core.where(condition, self, other)


def _clip(self, min=None, max=None):
    return self.clamp(min, max)


def _clip_(self, min=None, max=None):
    return self.clamp_(min, max)


def _deepcopy(self: Tensor, memo):
    """copy.deepcopy(t): a leaf's values, requires_grad and .grad copied (PyTorch refuses a tensor
    made by an op that autograd recorded, and so does ember)."""
    if id(self) in memo:
        return memo[id(self)]
    if self.requires_grad and not self.is_leaf:
        raise AutogradError("Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                            "protocol at the moment. If you were attempting to deepcopy a module, this may be "
                            "because of a torch.nn.utils.weight_norm usage, see "
                            "https://github.com/pytorch/pytorch/pull/103001")
    from .autograd import no_grad  # ember.autograd imports this module: looked up when called
    with no_grad():
        result = self.clone()
    if self.requires_grad:
        result.requires_grad_(True)
    memo[id(self)] = result
    if self.grad is not None:
        result.grad = _deepcopy(self.grad, memo)
    return result


def _reduce_ex(self: Tensor, protocol):
    """pickle.dumps(t) (and so DataLoader worker processes, multiprocessing queues): the values by
    way of NumPy (bfloat16 through float32, exactly), the dtype, the device and requires_grad."""
    if self.requires_grad and not self.is_leaf:
        raise AutogradError("Can't pickle a tensor that requires grad and is not a leaf: pickle t.detach() instead")
    values = self.detach().cpu()
    if values.dtype == _core.bfloat16:
        values = values.float()
    return (_rebuild_tensor, (values.numpy().copy(), str(self.dtype).split(".")[-1], str(self.device),
                              self.requires_grad))


def _rebuild_tensor(array, dtype_name: str, device: str, requires_grad: bool) -> Tensor:
    t = _core.from_numpy(_np.ascontiguousarray(array)).to(getattr(_core, dtype_name))
    if device != "cpu":
        t = t.to(device)
    return t.requires_grad_(requires_grad) if requires_grad else t


def _softmax(self: Tensor, dim, dtype=None) -> Tensor:
    from .nn import functional as F  # ember.nn imports this module: looked up when called
    return F.softmax(self, dim, dtype=dtype)


def _log_softmax(self: Tensor, dim, dtype=None) -> Tensor:
    from .nn import functional as F
    return F.log_softmax(self, dim, dtype=dtype)


Tensor.__deepcopy__ = _deepcopy
Tensor.__reduce_ex__ = _reduce_ex
Tensor.softmax = _softmax
Tensor.log_softmax = _log_softmax
Tensor.to = _to
Tensor.__getitem__ = _getitem
Tensor.__setitem__ = _setitem
Tensor.__iter__ = _iter
Tensor.backward = _backward
Tensor.grad_fn = property(_grad_fn)
Tensor.type = _type
Tensor.new_tensor = _new_tensor
Tensor.new_zeros = _new_zeros
Tensor.new_ones = _new_ones
Tensor.new_full = _new_full
Tensor.new_empty = _new_empty
Tensor.clip = _clip
Tensor.where = _where
Tensor.clip_ = _clip_
Tensor.absolute = Tensor.abs
Tensor.negative = Tensor.neg
Tensor.multiply = Tensor.mul
Tensor.divide = Tensor.div
Tensor.subtract = Tensor.sub
Tensor.greater = Tensor.gt
Tensor.less = Tensor.lt
