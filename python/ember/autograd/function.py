"""``ember.autograd.Function``: forward and backward written in Python, as PyTorch's.

``apply`` runs ``forward`` without recording, then puts one C++ node on the tape
(python/src/autograd.cpp) whose backward calls this class's ``backward`` under the GIL with the
output gradients, and hands its results to the inputs that are tensors. Saved tensors carry their
version: one modified in place before backward raises ember.AutogradError (a RuntimeError).
"""

from __future__ import annotations

from typing import Any, Tuple

from .. import _core
from .._core import Tensor
from ..errors import AutogradError
from .grad_mode import is_grad_enabled, no_grad

__all__ = ["Function", "FunctionCtx"]

_FREED = ("Trying to backward through the graph a second time (or directly access saved tensors after they have "
          "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
          "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or "
          "if you need to access saved tensors after calling backward.")


class FunctionCtx:
    """The ``ctx`` of forward and backward: ``save_for_backward``, ``saved_tensors``,
    ``needs_input_grad``, ``mark_non_differentiable``, ``set_materialize_grads``; any other attribute
    may be set in forward and read in backward."""

    def save_for_backward(self, *tensors) -> None:
        self._saved = tuple(None if t is None else (_core._autograd.SavedTensor(t), t.requires_grad) for t in tensors)

    @property
    def saved_tensors(self) -> Tuple[Any, ...]:
        if getattr(self, "_freed", False):
            raise AutogradError(_FREED)
        out = []
        for s in getattr(self, "_saved", ()):
            if s is None:
                out.append(None)
                continue
            t = s[0].unpack(self._name)
            if s[1]:
                t.requires_grad_(True)
            out.append(t)
        return tuple(out)

    def mark_non_differentiable(self, *tensors) -> None:
        self._non_differentiable = tensors

    def mark_dirty(self, *tensors) -> None:
        self._dirty = tensors

    def set_materialize_grads(self, value: bool) -> None:
        self._materialize = value

    # the C++ node's calls
    def _run_backward(self, grads):
        if getattr(self, "_freed", False):
            raise AutogradError(_FREED)
        # One gradient per forward output: None for an output that is not a tensor or was marked
        # non-differentiable (the C++ node only has the differentiable ones).
        arriving = iter(grads)
        grads = [next(arriving) if diff else None for diff in self._output_is_diff]
        result = self._cls.backward(self, *grads)
        if not isinstance(result, tuple):
            result = (result,)
        if len(result) < len(self._arg_is_tensor):
            raise RuntimeError(f"function {self._cls.__name__}Backward returned an incorrect number of gradients "
                               f"(expected {len(self._arg_is_tensor)}, got {len(result)})")
        grads_for_tensors = []
        for g, is_tensor, needs in zip(result, self._arg_is_tensor, self.needs_input_grad):
            if not is_tensor:
                continue
            if g is not None and not isinstance(g, Tensor):
                raise TypeError(f"{self._cls.__name__}.backward returned a {type(g).__name__} for a tensor input; "
                                "return a Tensor or None")
            grads_for_tensors.append(g if needs else None)
        return grads_for_tensors

    def _release(self) -> None:
        self._freed = True
        self._saved = ()


class _FunctionMeta(type):
    pass


class Function(metaclass=_FunctionMeta):
    """Subclass with ``@staticmethod forward(ctx, *args)`` and ``@staticmethod backward(ctx,
    *grad_outputs)`` (one gradient per forward input, None for inputs without one), then call
    ``MyFunction.apply(*args)``."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = FunctionCtx()
        ctx._cls = cls
        ctx._name = cls.__name__ + "Backward"
        ctx._arg_is_tensor = tuple(isinstance(a, Tensor) for a in args)
        grad_on = is_grad_enabled()
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad and grad_on for a in args)
        with no_grad():
            outputs = cls.forward(ctx, *args, **kwargs)
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        if any(ctx.needs_input_grad):
            inputs = [a for a in args if isinstance(a, Tensor)]
            non_diff = {id(t) for t in getattr(ctx, "_non_differentiable", ())}
            fixed = []
            for o in outs:
                # An input returned as is gets a fresh handle, so its own history stays as it was.
                if isinstance(o, Tensor) and any(o is a for a in inputs):
                    o = o.detach()
                fixed.append(o)
            outs = tuple(fixed)
            ctx._output_is_diff = [isinstance(o, Tensor) and id(o) not in non_diff for o in outs]
            diff_outputs = [o for o, diff in zip(outs, ctx._output_is_diff) if diff]
            if diff_outputs:
                _core._autograd.record_function(ctx, ctx._name, inputs, diff_outputs)
        return outs[0] if single else outs


class InplaceFunction(Function):
    pass
