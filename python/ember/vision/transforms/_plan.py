"""batch_plan: a Compose of built-in transforms recognised as one data::SampleTransform (random crop
with padding, horizontal flip, scale to [0, 1], normalise, random erasing), so the DataLoader runs a
whole batch of uint8 rows in one C++ call, the GIL released, on ember's threads, with random draws
stateless from (seed, epoch, index) (include/ember/data/transforms.h documents the Philox words).
With height and width None the plan is for picture files of any size (ImageFolder): run_files decodes
and transforms a batch of files in C++ (data::transform_files)."""

from __future__ import annotations

import numbers
import os
from typing import List, Optional, Sequence

import numpy as np

import ember
from ember import _core

from . import functional as F
from .functional import InterpolationMode
from .transforms import (CenterCrop, Compose, ConvertImageDtype, Normalize, PILToTensor, RandomCrop, RandomErasing,
                         RandomHorizontalFlip, RandomResizedCrop, Resize, ToDtype, ToImage, ToTensor)


def _zero_fill(fill) -> bool:
    if isinstance(fill, numbers.Number):
        return float(fill) == 0.0
    if isinstance(fill, (list, tuple)):
        return all(isinstance(f, numbers.Number) and float(f) == 0.0 for f in fill)
    return False


def _uniform_padding(padding) -> Optional[int]:
    if padding is None:
        return 0
    if isinstance(padding, numbers.Integral) and not isinstance(padding, bool):
        return int(padding) if padding >= 0 else None
    if isinstance(padding, (list, tuple)) and len(padding) in (1, 2, 4) and len(set(padding)) == 1:
        p = padding[0]
        return int(p) if isinstance(p, numbers.Integral) and p >= 0 else None
    return None


def _per_channel(values: Sequence[float], channels: int) -> Optional[List[float]]:
    v = [float(x) for x in values]
    if len(v) == 1:
        return v * channels
    return v if len(v) == channels else None


class BatchPlan:
    """A Compose run as one fused C++ pass per sample: ``run(images, indices, seed, epoch)`` gives
    the (B, C, H, W) tensor of the selected rows; ``params(index, seed, epoch)`` the parameters
    sample ``index`` gets (crop offsets into the padded image, flip, erased box), so a test or a
    user can replay them with functional's ops."""

    def __init__(self, channels: int, height: Optional[int], width: Optional[int], options: dict, steps: list) -> None:
        self.channels, self.height, self.width = channels, height, width
        self.options = dict(options)
        self.steps = steps
        # height and width None: pictures of any size (run_files); 0 x 0 tells the C++ plan so.
        self._plan = _core._vision.SamplePlan(channels, height or 0, width or 0, **options)
        self.out_size = (options["random_resized_crop"] or options["center_crop"] or options["resize"]
                         or [height, width])

    @property
    def dtype(self):
        return ember.uint8 if self.options["uint8_out"] else ember.float32

    @property
    def for_files(self) -> bool:
        """True for a plan of picture files of any size (batch_plan without height and width)."""
        return self.height is None

    def params(self, index: int, seed: int, epoch: int = 0, image_size=None) -> dict:
        """crop_top/crop_left (into the image padded by `padding`), flip, erase and its box, and for
        RandomResizedCrop its box (top, left, height, width) — on a picture of image_size (height,
        width) for a plan of files (the box depends on the picture's size)."""
        size = None if image_size is None else (int(image_size[0]), int(image_size[1]))
        p = dict(self._plan.params(int(seed), int(epoch), int(index), size))
        p["padding"] = self.options["crop_padding"]
        return p

    def _array(self, images) -> np.ndarray:
        if isinstance(images, ember.Tensor):
            images = images.cpu().numpy() if images.device.type != "cpu" else np.asarray(images)
        if not isinstance(images, np.ndarray):
            raise TypeError(f"BatchPlan.run: images must be an ember.Tensor or a NumPy array, got "
                            f"{type(images).__name__}")
        if images.dtype != np.uint8:
            raise TypeError(f"BatchPlan.run: images must be uint8, got {images.dtype}")
        c, h, w = self.channels, self.height, self.width
        ok = (images.ndim == 3 and c == 1 and images.shape[1:] == (h, w)) or \
             (images.ndim == 4 and images.shape[1:] == (h, w, c))
        if not ok:
            want = f"(N, {h}, {w})" + (f" or (N, {h}, {w}, 1)" if c == 1 else "") if c == 1 else f"(N, {h}, {w}, {c})"
            raise ValueError(f"BatchPlan.run: images of shape {images.shape} do not match the plan's {want}")
        return np.ascontiguousarray(images)

    def run_files(self, paths, indices, seed: int, epoch: int = 0):
        """The picture files `paths` decoded to RGB (ember's decoders, Pillow's pixels, no EXIF
        rotation, Pillow's pixel budget) and transformed, sample b with the draws of dataset index
        indices[b]: a float32 (B, 3, H, W) tensor. A file that cannot be read or decoded raises
        ember.IOError / ember.DataError naming it."""
        if not self.for_files:
            raise ValueError("BatchPlan.run_files: this plan is for images of one size; make it with "
                             "batch_plan(transform) (no height and width) for files")
        idx = [int(i) for i in (indices.tolist() if hasattr(indices, "tolist") else indices)]
        return self._plan.run_files([os.fspath(p) for p in paths], idx, int(seed) & ((1 << 64) - 1), int(epoch))

    def run(self, images, indices, seed: int, epoch: int = 0):
        if self.for_files:
            raise ValueError("BatchPlan.run: this plan is for picture files (run_files); give batch_plan "
                             "the images' height and width for a uint8 array")
        arr = self._array(images)
        idx = [int(i) for i in (indices.tolist() if hasattr(indices, "tolist") else indices)]
        return self._plan.run(arr, idx, int(seed) & ((1 << 64) - 1), int(epoch), True)

    def __repr__(self) -> str:
        return f"BatchPlan(({self.channels}, {self.height}, {self.width}), {self.options})"


def batch_plan(transform, channels: int = 3, height: Optional[int] = None,
               width: Optional[int] = None) -> Optional[BatchPlan]:
    """The fused plan of `transform` for uint8 images of channels x height x width, or None when a
    step is not built-in or not one the fused pass does (then the DataLoader calls the transform in
    Python). With height and width None, the plan is for RGB picture files of any size
    (BatchPlan.run_files, what the DataLoader uses for ImageFolder): it qualifies only when its
    photo steps end in a fixed size — RandomResizedCrop(size), Resize((h, w)), or Resize(int) (no
    max_size) then CenterCrop — and its result is float32. Recognised, in this order: Resize
    (bilinear) then CenterCrop, or RandomResizedCrop (bilinear), on the uint8 image as Pillow does them (the C++ photo transforms are Pillow's
    arithmetic bit for bit); RandomCrop(size=(height, width), padding (equal sides),
    fill=0, padding_mode "constant" or "reflect"), RandomHorizontalFlip (after the crop), one of
    ToTensor / PILToTensor / ToImage (+ ToDtype(float32, scale) or ConvertImageDtype(float32)), a
    Normalize, RandomErasing(value=0) after it. The flip and crop may come before or after the
    conversion; the result is float32, or uint8 when nothing converts to float."""
    files = height is None and width is None
    for name, v in (("channels", channels),) + (() if files else (("height", height), ("width", width))):
        if not isinstance(v, numbers.Integral) or v <= 0:
            raise ValueError(f"batch_plan: {name} must be a positive int, got {v!r}")
    if files and channels != 3:
        raise ValueError(f"batch_plan: pictures of any size (no height and width) are decoded to RGB, so "
                         f"channels must be 3, got {channels!r}")
    steps = list(transform.transforms) if type(transform) is Compose else [transform]
    opts = dict(scale=False, normalize=False, mean=[], std=[], crop_padding=0, reflect=False, hflip_p=0.0,
                erase_p=0.0, erase_scale=[0.02, 0.33], erase_ratio=[0.3, 3.3], uint8_out=True,
                scale_by_reciprocal=False, resize=None, center_crop=None, random_resized_crop=None,
                rrc_scale=[0.08, 1.0], rrc_ratio=[3.0 / 4.0, 4.0 / 3.0], resize_shorter=None)
    tensor = False      # converted to a tensor yet
    floating = False    # float32 values yet
    seen = set()
    cur_h, cur_w = height, width  # the image's size after the steps so far (None: the picture's own)
    for t in steps:
        kind = type(t)
        # The photo steps (Pillow's bilinear resize, as torchvision on a PIL image) come first, on the
        # uint8 image: after a conversion torchvision resizes with torch's arithmetic instead.
        if kind in (Resize, CenterCrop, RandomResizedCrop) and (tensor or seen - {"resize"}):
            return None
        if kind is Resize:
            if "resize" in seen or t.interpolation is not InterpolationMode.BILINEAR:
                return None
            size = [t.size] if isinstance(t.size, int) else t.size
            if cur_h is None:  # a picture of any size
                if size is None or len(size) != 2:
                    if size is None or t.max_size is not None:
                        return None
                    opts["resize_shorter"] = [int(size[0]), 0]  # the size depends on the picture
                else:
                    opts["resize"] = [int(size[0]), int(size[1])]
                    cur_h, cur_w = opts["resize"]
                seen.add("resize")
                continue
            oh, ow = F._output_size(cur_h, cur_w, size, t.max_size)
            if (oh, ow) != (cur_h, cur_w):  # torchvision hands an image of that size back untouched
                opts["resize"] = [oh, ow]
            cur_h, cur_w = oh, ow
            seen.add("resize")
        elif kind is CenterCrop:
            opts["center_crop"] = list(t.size)
            cur_h, cur_w = t.size
            seen.add("center_crop")
        elif kind is RandomResizedCrop:
            if seen or t.interpolation is not InterpolationMode.BILINEAR or not 0 < t.scale[0] <= t.scale[1] \
                    or not 0 < t.ratio[0] <= t.ratio[1]:
                return None
            opts.update(random_resized_crop=list(t.size), rrc_scale=[float(v) for v in t.scale],
                        rrc_ratio=[float(v) for v in t.ratio])
            cur_h, cur_w = t.size
            seen.add("random_resized_crop")
        elif kind is ToTensor:
            if tensor:
                return None
            tensor = floating = True
            opts["scale"] = True
        elif kind in (PILToTensor, ToImage):
            if tensor:
                return None
            tensor = True
        elif kind in (ToDtype, ConvertImageDtype):
            if not tensor or floating or F._np_dtype(t.dtype) != np.float32:
                return None
            floating = True
            opts["scale"] = True if kind is ConvertImageDtype else t.scale
            opts["scale_by_reciprocal"] = kind is ToDtype  # v2 multiplies by 1/255, v1 divides
        elif kind is RandomCrop:
            if seen & {"crop", "flip", "normalize", "erase"} or tuple(t.size) != (cur_h, cur_w):
                return None
            pad = _uniform_padding(t.padding)
            if pad is None or not _zero_fill(t.fill) or t.padding_mode not in ("constant", "reflect"):
                return None
            if t.padding_mode == "reflect" and pad > 0 and not (pad < cur_h and pad < cur_w):
                return None
            opts["crop_padding"], opts["reflect"] = pad, t.padding_mode == "reflect"
            seen.add("crop")
        elif kind is RandomHorizontalFlip:
            if seen & {"flip", "erase"}:
                return None
            opts["hflip_p"] = float(t.p)
            seen.add("flip")
        elif kind is Normalize:
            if not floating or seen & {"normalize", "erase"}:
                return None
            mean, std = _per_channel(t.mean, channels), _per_channel(t.std, channels)
            if mean is None or std is None or any(s <= 0 for s in std):
                return None
            opts.update(normalize=True, mean=mean, std=std)
            seen.add("normalize")
        elif kind is RandomErasing:
            if not tensor or "erase" in seen or not _zero_fill(t.value) or isinstance(t.value, str):
                return None
            if not (0 < t.scale[0] <= t.scale[1] <= 1) or not (0 < t.ratio[0] <= t.ratio[1]):
                return None
            opts.update(erase_p=float(t.p), erase_scale=[float(s) for s in t.scale],
                        erase_ratio=[float(r) for r in t.ratio])
            seen.add("erase")
        else:
            return None
    if not tensor or cur_h is None or (files and not floating):
        return None
    opts["uint8_out"] = not floating
    return BatchPlan(channels, height, width, opts, steps)
