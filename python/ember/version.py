"""``ember.version``, as ``torch.version``: this ember's version and the CUDA it was built for.

``ember.version.cuda`` is the CUDA runtime the build carries (``"13.0"``), None for a build without
CUDA — whether a GPU is usable here is ``ember.cuda.is_available()``'s answer, not this one's.
"""

from typing import Optional

from . import _core

__all__ = ["__version__", "cuda", "hip", "debug"]

__version__: str = _core.__version__


def _cuda() -> Optional[str]:
    v = int(_core._cuda_runtime_version())
    return f"{v // 1000}.{v % 1000 // 10}" if v > 0 else None


cuda: Optional[str] = _cuda()
hip: Optional[str] = None  # ember has no ROCm build
debug: bool = False
