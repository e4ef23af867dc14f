"""``ember.backends.cudnn``, as ``torch.backends.cudnn``.

``version()`` is the cuDNN this process loads (an int such as 91200 for 9.12.0), loaded on first ask
as the first convolution on a GPU would load it; None without a usable GPU, in a build without cuDNN,
or when none loads (``ember doctor`` says why). ``enabled``, ``benchmark``, ``deterministic`` and
``allow_tf32`` are kept as set, for programs that set them; ember's convolutions choose cuDNN's
algorithms by their own rule (the fastest cuDNN reports for the shape, as ``benchmark=True``), and
setting them changes nothing yet.
"""

from typing import Optional

from .. import _core

__all__ = ["version", "is_available", "enabled", "benchmark", "deterministic", "allow_tf32"]

enabled: bool = True
benchmark: bool = False
deterministic: bool = False
allow_tf32: bool = True


def version() -> Optional[int]:
    v = int(_core._cudnn_version())
    return v if v > 0 else None


def is_available() -> bool:
    """Whether cuDNN can be used: a usable GPU and a cuDNN that loads."""
    return version() is not None


def is_acceptable(tensor) -> bool:
    """Whether cuDNN would run on this tensor (a CUDA tensor of a floating dtype, with cuDNN there)."""
    return bool(enabled and tensor.is_cuda and tensor.is_floating_point() and is_available())
