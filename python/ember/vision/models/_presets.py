"""torchvision's ImageClassification preset (what ``Weights.transforms()`` returns): resize, centre
crop, to float in [0, 1], normalise — built from ember.vision.transforms on first call, so importing
the models does not import the transforms."""

from __future__ import annotations

from typing import Optional, Sequence

from ...nn import Module


class ImageClassification(Module):
    def __init__(self, *, crop_size: int, resize_size: int = 256,
                 mean: Sequence[float] = (0.485, 0.456, 0.406), std: Sequence[float] = (0.229, 0.224, 0.225),
                 interpolation="bilinear", antialias: Optional[bool] = True) -> None:
        super().__init__()
        self.crop_size = [crop_size]
        self.resize_size = [resize_size]
        self.mean = list(mean)
        self.std = list(std)
        self.interpolation = _interpolation(interpolation)
        self.antialias = antialias
        self._steps = None

    def _pipeline(self):
        if self._steps is None:
            from .. import transforms as T
            self._steps = (T.Resize(self.resize_size, interpolation=self.interpolation, antialias=self.antialias),
                           T.CenterCrop(self.crop_size), T.PILToTensor(), T.ConvertImageDtype(_float32()),
                           T.Normalize(mean=self.mean, std=self.std))
        return self._steps

    def forward(self, img):
        from ... import Tensor

        resize, crop, to_tensor, to_float, normalize = self._pipeline()
        img = crop(resize(img))
        if not isinstance(img, Tensor):
            img = to_tensor(img)
        return normalize(to_float(img))

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(\n    crop_size={self.crop_size}\n    resize_size={self.resize_size}\n"
                f"    mean={self.mean}\n    std={self.std}\n    interpolation={self.interpolation}\n)")

    def describe(self) -> str:
        return ("Accepts ``PIL.Image``, batched ``(B, C, H, W)`` and single ``(C, H, W)`` image tensors. The images "
                f"are resized to ``resize_size={self.resize_size}`` using ``interpolation={self.interpolation}``, "
                f"followed by a central crop of ``crop_size={self.crop_size}``. Finally the values are first rescaled "
                f"to ``[0.0, 1.0]`` and then normalized using ``mean={self.mean}`` and ``std={self.std}``.")


def _float32():
    from ... import float32
    return float32


def _interpolation(mode):
    """torchvision's InterpolationMode member for 'bilinear'/'bicubic' once ember.vision.transforms has it;
    the string until then (so constructing a preset never needs the transforms)."""
    if not isinstance(mode, str):
        return mode
    try:
        from ..transforms import InterpolationMode
    except ImportError:
        return mode
    return InterpolationMode(mode)
