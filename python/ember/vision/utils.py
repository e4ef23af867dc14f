"""ember.vision.utils, as torchvision.utils: ``make_grid`` (a batch of images tiled into one image,
torchvision's layout, padding and normalisation) and ``save_image`` (that grid written as a PNG by
ember's libspng encoder, or a JPEG by TurboJPEG with Pillow's defaults, in C++, with the pixels
torchvision's Pillow path writes). Other formats are not written: a clear ValueError says so."""

from __future__ import annotations

import math
import os
from typing import BinaryIO, List, Optional, Tuple, Union

from .. import _core
from .. import cat, no_grad, stack, uint8
from .._core import Tensor
from ..nn import functional as F

__all__ = ["make_grid", "save_image"]


def make_grid(tensor: Union[Tensor, List[Tensor]], nrow: int = 8, padding: int = 2, normalize: bool = False,
              value_range: Optional[Tuple[int, int]] = None, scale_each: bool = False,
              pad_value: float = 0.0) -> Tensor:
    """A grid of images, as torchvision.utils.make_grid: tensor is (B, C, H, W), a list of (C, H, W)
    tensors, one (C, H, W) or (H, W) image; single-channel images become 3 channels; nrow images per
    row, `padding` pixels of `pad_value` around each; normalize shifts into [0, 1] by value_range or
    the min and max (per image with scale_each). Built with pad and cat, so it is differentiable."""
    if not isinstance(tensor, Tensor):
        if isinstance(tensor, list):
            for t in tensor:
                if not isinstance(t, Tensor):
                    raise TypeError(f"tensor or list of tensors expected, got a list containing {type(t)}")
        else:
            raise TypeError(f"tensor or list of tensors expected, got {type(tensor)}")
    if isinstance(tensor, list):
        tensor = stack(tensor, dim=0)
    if tensor.dim() == 2:  # single image H x W
        tensor = tensor.unsqueeze(0)
    if tensor.dim() == 3:  # single image
        if tensor.size(0) == 1:  # single-channel: three equal channels
            tensor = cat((tensor, tensor, tensor), 0)
        tensor = tensor.unsqueeze(0)
    if tensor.dim() == 4 and tensor.size(1) == 1:  # single-channel images
        tensor = cat((tensor, tensor, tensor), 1)
    if tensor.dim() != 4:
        raise ValueError(f"make_grid: expected images of shape (B, C, H, W), (C, H, W) or (H, W), got a "
                         f"{tensor.dim()}-d tensor of shape {list(tensor.shape)}")

    if normalize is True:
        if value_range is not None and not isinstance(value_range, tuple):
            raise TypeError("value_range has to be a tuple (min, max) if specified. min and max are numbers")

        def norm_range(t):
            low, high = value_range if value_range is not None else (float(t.min()), float(t.max()))
            return t.clamp(min=low, max=high).sub(low).div(max(high - low, 1e-5))

        tensor = stack([norm_range(t) for t in tensor.unbind(0)]) if scale_each is True else norm_range(tensor)

    if tensor.size(0) == 1:
        return tensor.squeeze(0)

    nmaps = tensor.size(0)
    xmaps = min(nrow, nmaps)
    ymaps = int(math.ceil(float(nmaps) / xmaps))
    c, h, w = tensor.size(1), tensor.size(2), tensor.size(3)
    # Each image with `padding` pad_value pixels above and to its left; tiles past the last image are
    # all pad_value; the whole grid then gets its bottom and right border.
    tiles = F.pad(tensor, (padding, 0, padding, 0), value=pad_value)
    if ymaps * xmaps > nmaps:
        blank = tensor.new_full((ymaps * xmaps - nmaps, c, h + padding, w + padding), pad_value)
        tiles = cat((tiles, blank), 0)
    rows = [cat(tiles[y * xmaps:(y + 1) * xmaps].unbind(0), 2) for y in range(ymaps)]
    grid = cat(rows, 1)
    return F.pad(grid.unsqueeze(0), (0, padding, 0, padding), value=pad_value).squeeze(0)


# Pillow's format names for the extensions it would infer, and the one ember writes.
_EXTENSION_FORMATS = {".png": "PNG", ".jpg": "JPEG", ".jpeg": "JPEG", ".jpe": "JPEG", ".jfif": "JPEG",
                      ".bmp": "BMP", ".gif": "GIF", ".tif": "TIFF", ".tiff": "TIFF", ".webp": "WEBP", ".ppm": "PPM",
                      ".pgm": "PPM", ".tga": "TGA"}
_WRITTEN_FORMATS = ("PNG", "JPEG")


def _format_for(fp, format: Optional[str]) -> str:
    """The file format, as Pillow's Image.save picks it: `format` when given, else the extension of the
    path (or of a file object's .name)."""
    if format is not None:
        fmt = format.upper()
    else:
        name = fp if isinstance(fp, (str, os.PathLike)) else getattr(fp, "name", "")
        ext = os.path.splitext(os.fspath(name))[1].lower() if isinstance(name, (str, os.PathLike)) else ""
        if ext not in _EXTENSION_FORMATS:
            raise ValueError(f"unknown file extension: {ext!r}; name the file *.png (or *.jpg) or pass format='PNG'")
        fmt = _EXTENSION_FORMATS[ext]
    if fmt not in _WRITTEN_FORMATS:
        raise ValueError(f"save_image: ember writes PNG and JPEG files only, not {fmt}; save as .png (or "
                         "format='PNG'), or "
                         "write the grid with Pillow: Image.fromarray(grid.mul(255).add(0.5).clamp(0, 255)"
                         ".permute(1, 2, 0).to(ember.uint8).numpy()).save(fp)")
    return fmt


def save_image(tensor: Union[Tensor, List[Tensor]], fp: Union[str, os.PathLike, BinaryIO],
               format: Optional[str] = None, **kwargs) -> None:
    """Writes make_grid(tensor, **kwargs) as an image file, as torchvision.utils.save_image: values in
    [0, 1] scaled to 0..255 (x * 255 + 0.5, clamped, truncated); 3 channels an RGB PNG, 4 RGBA, 2
    grey+alpha; a JPEG (quality 75, Pillow's default) takes 3 channels. fp is a path or a binary file
    object; format ('PNG', 'JPEG') overrides the extension."""
    fmt = _format_for(fp, format)
    with no_grad():
        grid = make_grid(tensor, **kwargs)
        if grid.dim() != 3 or grid.size(0) not in (2, 3, 4):
            raise TypeError(f"save_image: cannot write an image of {grid.size(0) if grid.dim() == 3 else '?'} "
                            f"channels (grid of shape {list(grid.shape)}); PNG takes 2 (grey+alpha), 3 (RGB) or "
                            "4 (RGBA) channels here")
        pixels = grid.mul(255).add_(0.5).clamp_(0, 255).permute(1, 2, 0).to("cpu", uint8)
    if fmt == "JPEG":
        if pixels.size(2) != 3:
            mode = {2: "LA", 4: "RGBA"}[pixels.size(2)]
            raise OSError(f"cannot write mode {mode} as JPEG (Pillow's words): JPEG has no alpha; save as PNG")
        data = _core._image.encode_jpeg(pixels)
    else:
        data = _core._image.encode_png(pixels)
    if isinstance(fp, (str, os.PathLike)):
        with open(fp, "wb") as f:
            f.write(data)
    else:
        fp.write(data)
