"""ember.vision, as torchvision: datasets (torchvision's folder layouts on ember's C++ readers),
transforms (v1 names and transforms.v2; a Compose of built-in steps runs as one C++ pass), models
(torchvision's architectures with its attribute names and state-dict keys) and utils (save_image,
make_grid). A torchvision program runs on ember when its imports say ``ember.vision``.

The subpackages load on first use (``ember.vision.datasets``, ``from ember.vision import
transforms``), so ``import ember`` stays as fast as it was."""

import importlib as _importlib

_SUBPACKAGES = ("datasets", "transforms", "models", "utils")

__all__ = list(_SUBPACKAGES)


def __getattr__(name):
    if name in _SUBPACKAGES:
        return _importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'ember.vision' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_SUBPACKAGES))
