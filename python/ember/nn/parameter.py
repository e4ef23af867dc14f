"""``ember.nn.Parameter`` and ``ember.nn.Buffer``: ember.Tensor subclasses a Module registers when they
are assigned as attributes. Each instance holds the same C++ tensor as the data it was made from
(``Parameter(t)`` shares t's storage, as PyTorch's ``t.detach()`` marked requires_grad)."""

from __future__ import annotations

from .. import _core
from .._core import Tensor

__all__ = ["Parameter", "Buffer"]


def _data_or_empty(data) -> Tensor:
    if data is None:
        return _core.empty(0)
    if not isinstance(data, Tensor):
        raise TypeError(f"expected an ember.Tensor as data, got {type(data).__name__}")
    return data.detach()


class Parameter(Tensor):
    """A Tensor that is a module parameter: assigned as a Module attribute it appears in
    ``parameters()`` and ``state_dict()``. ``requires_grad`` defaults to True."""

    def __new__(cls, data=None, requires_grad: bool = True):
        return _core._nn._make_subclass(cls, _data_or_empty(data), bool(requires_grad))

    def __init__(self, data=None, requires_grad: bool = True) -> None:  # the C++ tensor is set by __new__
        pass

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.detach().clone(), self.requires_grad)
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, protocol):
        return (_rebuild_parameter, (self.detach(), self.requires_grad))


def _rebuild_parameter(data, requires_grad):
    return Parameter(data, requires_grad)


class Buffer(Tensor):
    """A Tensor that is a module buffer: assigned as a Module attribute it is registered with
    ``register_buffer(name, value, persistent)`` (persistent buffers are in ``state_dict()``)."""

    def __new__(cls, data=None, *, persistent: bool = True):
        requires_grad = bool(data is not None and getattr(data, "requires_grad", False))
        inst = _core._nn._make_subclass(cls, _data_or_empty(data), requires_grad)
        inst.persistent = bool(persistent)
        return inst

    def __init__(self, data=None, *, persistent: bool = True) -> None:
        pass
