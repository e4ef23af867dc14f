"""Grad mode, PyTorch's way: ``no_grad``, ``enable_grad``, ``inference_mode`` and
``set_grad_enabled``, each a context manager and a decorator, over the C++ tape's thread-local
switch (ember::autograd::set_grad_mode): ops inside record no graph."""

from __future__ import annotations

import functools
import inspect

from .. import _core

__all__ = ["no_grad", "enable_grad", "inference_mode", "set_grad_enabled", "is_grad_enabled",
           "is_inference_mode_enabled"]

is_grad_enabled = _core._autograd.is_grad_enabled


class _GradModeBase:
    """A context manager that sets grad mode on entry and restores it on exit; as a decorator, the
    same around every call of the function (generators included)."""

    _mode = True

    def __enter__(self):
        self._prev = is_grad_enabled()
        _core._autograd.set_grad_enabled(self._mode)
        return self

    def __exit__(self, *exc) -> None:
        _core._autograd.set_grad_enabled(self._prev)

    def clone(self):
        return self.__class__()

    def __call__(self, fn):
        if inspect.isclass(fn):
            raise TypeError(f"{type(self).__name__} decorates functions, not classes")
        if inspect.isgeneratorfunction(fn):
            @functools.wraps(fn)
            def generator(*args, **kwargs):
                gen = fn(*args, **kwargs)
                with self.clone():
                    response = gen.send(None)
                while True:
                    try:
                        with self.clone():
                            request = yield response
                            response = gen.send(request)
                    except StopIteration as e:
                        return e.value
            return generator

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper


class no_grad(_GradModeBase):  # noqa: N801 - PyTorch's name
    """Ops record no graph inside (``with ember.no_grad():`` or ``@ember.no_grad()``): for evaluation
    and for updating parameters by hand."""

    _mode = False

    def __init__(self, orig_func=None) -> None:
        self._orig = orig_func  # @no_grad without parentheses (PyTorch accepts it)

    def __new__(cls, orig_func=None):
        if orig_func is not None and callable(orig_func):
            return cls()(orig_func)
        return super().__new__(cls)


class enable_grad(_GradModeBase):  # noqa: N801
    """Ops record a graph inside, even within ``no_grad``."""

    _mode = True

    def __new__(cls, orig_func=None):
        if orig_func is not None and callable(orig_func):
            return cls()(orig_func)
        return super().__new__(cls)

    def __init__(self, orig_func=None) -> None:
        pass


class inference_mode(_GradModeBase):  # noqa: N801
    """``no_grad`` under PyTorch's name for inference. ember has no separate inference tensors:
    tensors made inside may later take part in autograd (PyTorch refuses that)."""

    def __new__(cls, mode=True):
        if callable(mode) and not isinstance(mode, bool):
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode: bool = True) -> None:
        self._mode = not mode
        self._inference = bool(mode)

    def __enter__(self):
        global _inference_depth
        _inference_depth += self._inference
        return super().__enter__()

    def __exit__(self, *exc) -> None:
        global _inference_depth
        _inference_depth -= self._inference
        super().__exit__(*exc)

    def clone(self):
        return self.__class__(self._inference)


_inference_depth = 0


def is_inference_mode_enabled() -> bool:
    return _inference_depth > 0


class set_grad_enabled(_GradModeBase):  # noqa: N801
    """Sets grad mode to ``mode`` at once (as a function call), and as a context manager or
    decorator restores the previous mode on exit."""

    def __init__(self, mode: bool) -> None:
        self._prev = is_grad_enabled()
        self._mode = bool(mode)
        _core._autograd.set_grad_enabled(self._mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        _core._autograd.set_grad_enabled(self._prev)

    def clone(self):
        return _SetGradScope(self._mode)

    def __call__(self, fn):
        _core._autograd.set_grad_enabled(self._prev)  # as a decorator, only the calls change the mode
        return super().__call__(fn)


class _SetGradScope(_GradModeBase):
    def __init__(self, mode: bool) -> None:
        self._mode = mode
