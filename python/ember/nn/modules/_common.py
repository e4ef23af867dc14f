"""Helpers the layers share: PyTorch's factory keywords (device=, dtype=) for a new parameter."""

from __future__ import annotations

from typing import Sequence

from ... import _core
from ..._core import Tensor


def new_tensor(shape: Sequence[int], device=None, dtype=None) -> Tensor:
    """An uninitialised tensor for a layer's parameter or buffer (reset_parameters fills it)."""
    return _core.empty(*[int(s) for s in shape], dtype=dtype, device=device)
