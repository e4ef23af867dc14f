"""``ember.cuda``: PyTorch's torch.cuda queries on ember's CUDA runtime (ember/cuda.h).

Every answer comes from the same library calls as ``ember doctor``: ``is_available()`` is False on a
machine without a usable GPU (or with a CPU-only build of ember), and ``unavailable_reason()`` says
why in one line. Calls that need a device (``get_device_name``, ``synchronize``) raise
ember.DeviceError (a RuntimeError) with that reason when there is none.
"""

from __future__ import annotations

from typing import Optional, Union

from . import _core
from ._core import Device

__all__ = ["is_available", "device_count", "unavailable_reason", "get_device_name", "current_device",
           "synchronize", "memory_allocated", "max_memory_allocated", "empty_cache", "manual_seed",
           "manual_seed_all", "set_device", "is_initialized", "memory_reserved", "reset_peak_memory_stats",
           "is_bf16_supported"]

is_available = _core.cuda.is_available
device_count = _core.cuda.device_count
unavailable_reason = _core.cuda.unavailable_reason

_current = 0


def _index(device: Union[int, str, Device, None]) -> int:
    if device is None:
        return _current
    if isinstance(device, int):
        return device
    d = device if isinstance(device, Device) else Device(device)
    if d.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {d}")
    return d.index


def _require(index: int) -> None:
    from .errors import DeviceError
    n = device_count()
    if n == 0:
        raise DeviceError(f"no usable CUDA device: {unavailable_reason()}",
                          "check ember.cuda.is_available() first, and keep the tensors on \"cpu\" when it is False")
    if not 0 <= index < n:
        raise DeviceError(f"cuda:{index} does not exist: this machine has {n} usable CUDA device(s)",
                          f"pick one of cuda:0 .. cuda:{n - 1}")


def is_initialized() -> bool:
    return is_available()


def current_device() -> int:
    """The index of the device ``"cuda"`` means (0 unless set_device changed it)."""
    _require(_current)
    return _current


def set_device(device: Union[int, str, Device]) -> None:
    global _current
    i = _index(device)
    _require(i)
    _current = i


def get_device_name(device: Union[int, str, Device, None] = None) -> str:
    """The device's name ("NVIDIA H200")."""
    i = _index(device)
    _require(i)
    return _core.cuda.get_device_name(i)


def synchronize(device: Union[int, str, Device, None] = None) -> None:
    """Waits until the work queued on the device has finished."""
    i = _index(device)
    _require(i)
    _core.cuda.synchronize(i)


def memory_allocated(device: Union[int, str, Device, None] = None) -> int:
    """Bytes held by tensors on the device now (0 without one)."""
    return int(_core._memory_allocated(_index(device))) if is_available() else 0


def max_memory_allocated(device: Union[int, str, Device, None] = None) -> int:
    return int(_core._max_memory_allocated(_index(device))) if is_available() else 0


def empty_cache() -> None:
    """Returns the allocators' cached free blocks to the system."""
    _core._empty_cache()


def manual_seed(seed: int) -> None:
    """Seeds ember's generator: one Philox stream serves the CPU and every GPU (ember.manual_seed)."""
    _core.manual_seed(int(seed))


manual_seed_all = manual_seed


def memory_reserved(device: Union[int, str, Device, None] = None) -> int:
    """Bytes ember's allocator holds on the device: the tensors' blocks and its cache of free ones
    (0 without a GPU)."""
    return int(_core._memory_reserved(_index(device))) if is_available() else 0


def reset_peak_memory_stats(device: Union[int, str, Device, None] = None) -> None:
    """Starts max_memory_allocated() again from what is allocated now."""
    if is_available():
        _core._reset_peak_memory(_index(device))


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Whether the current device runs bfloat16 natively (sm_80 and newer): ember never emulates it,
    so including_emulation changes nothing. False without a GPU."""
    return bool(_core._bf16_supported(_current)) if is_available() else False
