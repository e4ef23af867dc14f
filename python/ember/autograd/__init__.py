"""``ember.autograd``, PyTorch's names over ember's C++ engine (ember/autograd/engine.h):
``grad``, ``backward``, ``Function``, ``Variable``, ``gradcheck`` and the grad modes.

The engine ADDS into ``.grad`` of every leaf that requires grad (as PyTorch); it runs with the GIL
released, re-taking it only for a Python ``Function``'s backward. ``grad(..., allow_unused=True)``
gives None for an input the outputs do not depend on (without it, PyTorch's error). Not in ember:
``create_graph=True`` (double backward) raises NotImplementedError (see _no_double_backward).
"""

from __future__ import annotations

from typing import Optional, Sequence, Union

from .. import _core
from .._core import Tensor
from ..errors import AutogradError
from .function import Function, FunctionCtx, InplaceFunction
from .grad_mode import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad,
                        set_grad_enabled)
from .gradcheck import GradcheckError, gradcheck

__all__ = ["grad", "backward", "Function", "FunctionCtx", "Variable", "gradcheck", "GradcheckError", "no_grad",
           "enable_grad", "inference_mode", "set_grad_enabled", "is_grad_enabled", "is_inference_mode_enabled"]

_TensorOrTensors = Union[Tensor, Sequence[Tensor]]


def _as_list(x) -> list:
    if x is None:
        return []
    return [x] if isinstance(x, Tensor) else list(x)


def _no_double_backward(create_graph: bool) -> None:
    # What the engine lacks (src/autograd/engine.cpp): backward runs under NoGradGuard; tensors saved
    # for backward are kept detached (SavedTensor), so a gradient carries no link to the inputs it was
    # computed from; and several backward formulas call kernels directly (activations, pooling, norms,
    # losses, convolutions), which record nothing. Turning grad mode on would give silently wrong
    # second derivatives, so the request is refused.
    if create_graph:
        raise NotImplementedError("create_graph=True: ember records no graph of the backward pass (no double "
                                  "backward, gradgradcheck) yet")


def backward(tensors: _TensorOrTensors, grad_tensors: Optional[_TensorOrTensors] = None,
             retain_graph: Optional[bool] = None, create_graph: bool = False, inputs=None) -> None:
    """torch.autograd.backward: the gradients of ``tensors`` ADDED into the leaves' ``.grad``."""
    _no_double_backward(create_graph)
    if inputs is not None:
        raise NotImplementedError("backward(inputs=...): use ember.autograd.grad(outputs, inputs)")
    roots = _as_list(tensors)
    seeds = _as_list(grad_tensors) or [None] * len(roots)
    if len(seeds) != len(roots):
        raise RuntimeError(f"grad_tensors has {len(seeds)} tensors for {len(roots)} tensors")
    _core._autograd.backward_many(roots, seeds, bool(retain_graph))


def grad(outputs: _TensorOrTensors, inputs: _TensorOrTensors, grad_outputs: Optional[_TensorOrTensors] = None,
         retain_graph: Optional[bool] = None, create_graph: bool = False, only_inputs: bool = True,
         allow_unused: Optional[bool] = None, is_grads_batched: bool = False, materialize_grads: bool = False):
    """torch.autograd.grad: the gradients of ``outputs`` with respect to ``inputs`` as a tuple, without
    touching ``.grad``."""
    _no_double_backward(create_graph)
    if is_grads_batched:
        raise NotImplementedError("grad(is_grads_batched=True) is not supported by ember")
    outs, ins = _as_list(outputs), _as_list(inputs)
    seeds = _as_list(grad_outputs) or [None] * len(outs)
    if len(seeds) != len(outs):
        raise RuntimeError(f"grad_outputs has {len(seeds)} tensors for {len(outs)} outputs")
    for i, t in enumerate(ins):
        if not t.requires_grad:
            raise AutogradError(f"One of the differentiated Tensors (input {i}) does not require grad")
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, but got: "
                         "allow_unused=False.")
    grads = _core._autograd.grad(outs, ins, seeds, bool(retain_graph))
    if materialize_grads:
        return tuple(g if g is not None else _core.zeros_like(t) for g, t in zip(grads, ins))
    if not allow_unused and any(g is None for g in grads):
        raise AutogradError("One of the differentiated Tensors appears to not have been used in the graph. Set "
                            "allow_unused=True if this is the desired behavior.")
    return tuple(grads)


def Variable(data, requires_grad: bool = False, volatile: bool = False) -> Tensor:  # noqa: N802 - PyTorch's name
    """The old tutorials' ``Variable(t)``: the tensor itself (Variable and Tensor merged in PyTorch
    0.4), marked ``requires_grad`` when asked."""
    if not isinstance(data, Tensor):
        raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
    if requires_grad:
        data.requires_grad_(True)
    return data


def __getattr__(name: str):
    """A name of torch.autograd ember does not have: ember.NotInEmberError (a
    NotImplementedError and an AttributeError) naming it; other unknown names AttributeError."""
    from .. import errors
    from .._torch_api import TORCH_AUTOGRAD

    raise errors._missing(__name__, name, TORCH_AUTOGRAD)
