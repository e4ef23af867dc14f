"""ember.vision.transforms.v2, as torchvision.transforms.v2: the same classes as v1 (ToImage and
ToDtype are the v2 way to tensors) and v2.functional."""

from .. import functional
from ..functional import InterpolationMode
from ..transforms import *  # noqa: F401,F403
from ..transforms import __all__ as _classes

__all__ = list(_classes) + ["InterpolationMode", "functional"]
