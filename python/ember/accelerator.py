"""``ember.accelerator``, as ``torch.accelerator`` (PyTorch 2.6+): the device programs pick when one
is there. ember's accelerator is CUDA; without a usable GPU ``current_accelerator()`` is None (as
torch's), and ``ember.cuda.unavailable_reason()`` says why.
"""

from __future__ import annotations

from typing import Optional, Union

from . import cuda as _cuda
from ._core import Device

__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index", "set_device_index",
           "synchronize"]


def is_available() -> bool:
    """Whether an accelerator (a usable CUDA device) is there."""
    return _cuda.is_available()


def current_accelerator(check_available: bool = False) -> Optional[Device]:
    """The accelerator's device (``ember.device("cuda:N")``, N the current device), or None
    without one."""
    if not _cuda.is_available():
        return None
    return Device("cuda", _cuda._current)


def device_count() -> int:
    return _cuda.device_count()


def current_device_index() -> int:
    return _cuda.current_device()


def set_device_index(device: Union[int, str, Device]) -> None:
    _cuda.set_device(device)


def synchronize(device: Union[int, str, Device, None] = None) -> None:
    _cuda.synchronize(device)
