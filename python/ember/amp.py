"""``ember.autocast`` (``ember.amp.autocast``), as ``torch.autocast``: mixed precision over ember's
C++ guard (ember/autocast.h), whose one policy table says which ops run in half (conv2d, linear,
matmul: multiplied in bfloat16 / float16, accumulated and returned in float32) and which stay float32.

``device_type`` is "cpu" (bfloat16 by default) or "cuda" (float16 by default, bfloat16 too). Where
ember differs: float16 on the CPU raises ember.NotImplementedError when the block is entered (ember
has no float16 CPU kernels); "cuda" without a usable GPU warns and disables itself, as PyTorch does.
A context manager and a decorator; the state is per thread, as PyTorch's.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any, Optional

from . import _core

__all__ = ["autocast", "is_autocast_enabled", "get_autocast_dtype"]

_DEFAULT_DTYPE = {"cpu": "bfloat16", "cuda": "float16"}


class autocast:  # noqa: N801 - PyTorch's name
    def __init__(self, device_type: str, dtype: Optional[Any] = None, enabled: bool = True,
                 cache_enabled: Optional[bool] = None) -> None:
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        device_type = device_type.split(":")[0]
        if device_type not in _DEFAULT_DTYPE:
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}' (ember runs "
                               "autocast on 'cpu' and 'cuda')")
        self.device = device_type
        self.fast_dtype = dtype if dtype is not None else getattr(_core, _DEFAULT_DTYPE[device_type])
        self._enabled = bool(enabled)
        if self._enabled and device_type == "cuda" and not _core.cuda.is_available():
            warnings.warn("User provided device_type of 'cuda', but CUDA is not available. Disabling "
                          f"({_core.cuda.unavailable_reason()})", UserWarning, stacklevel=2)
            self._enabled = False
        self._scopes = []

    def __enter__(self) -> "autocast":
        scope = _core._AutocastScope(self.device, self.fast_dtype, self._enabled)
        scope.enter()
        self._scopes.append(scope)
        return self

    def __exit__(self, *exc) -> None:
        self._scopes.pop().exit()

    def __call__(self, fn):
        @functools.wraps(fn)
        def run(*args, **kwargs):
            with autocast(self.device, self.fast_dtype, self._enabled):
                return fn(*args, **kwargs)
        return run


def is_autocast_enabled(device_type: str = "cuda") -> bool:
    """Whether autocast is on for ``device_type`` in this thread (PyTorch's default device_type
    for the old call without one is "cuda")."""
    return bool(_core._is_autocast_enabled(device_type))


def get_autocast_dtype(device_type: str):
    return _core._autocast_dtype(device_type)
