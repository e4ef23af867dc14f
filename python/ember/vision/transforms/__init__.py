"""ember.vision.transforms, as torchvision.transforms: the v1 classes (transforms.py), the
deterministic ops they call (functional), transforms.v2, and batch_plan — a Compose of built-in
steps run as one C++ pass per sample for the DataLoader (_plan.py)."""

from . import functional
from .functional import InterpolationMode
from .transforms import *  # noqa: F401,F403
from .transforms import __all__ as _classes
from ._plan import batch_plan

__all__ = list(_classes) + ["InterpolationMode", "functional", "batch_plan", "v2"]


def __getattr__(name):
    if name == "v2":
        import importlib

        return importlib.import_module(f"{__name__}.v2")
    raise AttributeError(f"module 'ember.vision.transforms' has no attribute {name!r}")
