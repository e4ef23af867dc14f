"""torchvision.transforms.functional on ember: the deterministic image ops the transform classes
call, each on a PIL image (through Pillow, as torchvision does), a NumPy array (H, W) or (H, W, C)
(treated as the PIL image it would make: same pixels back, as an array) and an ember Tensor
(..., C, H, W) (torchvision's tensor arithmetic, computed on the tensor's memory with NumPy)."""

from __future__ import annotations

import enum
import math
import numbers
from typing import List, Optional, Sequence

import numpy as np
from PIL import Image

import ember

__all__ = [
    "InterpolationMode", "get_dimensions", "get_image_size", "get_image_num_channels", "to_tensor",
    "pil_to_tensor", "to_image", "to_pil_image", "convert_image_dtype", "to_dtype", "normalize", "resize",
    "crop", "center_crop", "resized_crop", "hflip", "vflip", "horizontal_flip", "vertical_flip", "pad",
    "rgb_to_grayscale", "to_grayscale", "erase", "gaussian_blur", "adjust_brightness", "adjust_contrast",
    "adjust_saturation", "adjust_hue", "affine", "rotate", "invert", "posterize", "solarize", "adjust_sharpness",
    "autocontrast", "equalize", "perspective", "elastic_transform", "elastic",
]


class InterpolationMode(enum.Enum):
    """torchvision's interpolation modes (the values are torch's names)."""
    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


_PIL_MODES = {
    InterpolationMode.NEAREST: Image.Resampling.NEAREST,
    InterpolationMode.NEAREST_EXACT: Image.Resampling.NEAREST,
    InterpolationMode.BILINEAR: Image.Resampling.BILINEAR,
    InterpolationMode.BICUBIC: Image.Resampling.BICUBIC,
    InterpolationMode.BOX: Image.Resampling.BOX,
    InterpolationMode.HAMMING: Image.Resampling.HAMMING,
    InterpolationMode.LANCZOS: Image.Resampling.LANCZOS,
}
_FROM_PIL_INT = {0: InterpolationMode.NEAREST, 2: InterpolationMode.BILINEAR, 3: InterpolationMode.BICUBIC,
                 4: InterpolationMode.BOX, 5: InterpolationMode.HAMMING, 1: InterpolationMode.LANCZOS}


def _interpolation(mode) -> InterpolationMode:
    if isinstance(mode, InterpolationMode):
        return mode
    if isinstance(mode, int) and mode in _FROM_PIL_INT:
        return _FROM_PIL_INT[mode]
    if isinstance(mode, str):
        for m in InterpolationMode:
            if m.value == mode:
                return m
    raise TypeError("Argument interpolation should be a InterpolationMode or a corresponding Pillow integer "
                    f"constant, got {mode!r}")


# ---- what an image is ------------------------------------------------------------------------------

def _kind(img) -> str:
    if isinstance(img, Image.Image):
        return "pil"
    if isinstance(img, ember.Tensor):
        return "tensor"
    if isinstance(img, np.ndarray):
        if img.ndim not in (2, 3):
            raise ValueError(f"a NumPy image must be (H, W) or (H, W, C), got shape {img.shape}")
        return "numpy"
    raise TypeError("img should be a PIL Image, a NumPy array (H, W[, C]) or an ember.Tensor (..., C, H, W), "
                    f"got {type(img).__name__}")


def _tensor_array(t) -> np.ndarray:
    if t.ndim < 2:
        raise ValueError(f"an image tensor must be (..., H, W), got shape {tuple(t.shape)}")
    return np.asarray(t.detach().cpu().numpy())


def _to_tensor_like(arr: np.ndarray, like=None):
    arr = np.ascontiguousarray(arr)
    t = ember.from_numpy(arr)
    if like is not None and like.device.type != "cpu":
        t = t.to(like.device)
    return t


def _pil_array(img: Image.Image) -> np.ndarray:
    return np.asarray(img)


def _pil_from(arr: np.ndarray, like: Image.Image) -> Image.Image:
    if like.mode == "P":  # the indices keep their palette
        out = Image.fromarray(np.ascontiguousarray(arr))
        out.putpalette(like.getpalette())
        return out
    if like.mode == "1":
        return Image.fromarray(np.ascontiguousarray(arr)).convert("1")
    return Image.fromarray(np.ascontiguousarray(arr))


def get_dimensions(img) -> List[int]:
    """[channels, height, width]."""
    k = _kind(img)
    if k == "pil":
        return [len(img.getbands()), img.height, img.width]
    if k == "numpy":
        return [1 if img.ndim == 2 else img.shape[2], img.shape[0], img.shape[1]]
    shape = tuple(img.shape)
    if len(shape) < 2:
        raise ValueError(f"an image tensor must be (..., H, W), got shape {shape}")
    return [1 if len(shape) == 2 else shape[-3], shape[-2], shape[-1]]


def get_image_size(img) -> List[int]:
    """[width, height], as torchvision's."""
    _, h, w = get_dimensions(img)
    return [w, h]


def get_image_num_channels(img) -> int:
    return get_dimensions(img)[0]


def _spatial(img):
    """(array, height axis) — the pixels as an array and where its (H, W) axes start."""
    k = _kind(img)
    if k == "pil":
        return _pil_array(img), 0
    if k == "numpy":
        return img, 0
    a = _tensor_array(img)
    return a, a.ndim - 2


def _rewrap(arr: np.ndarray, img):
    k = _kind(img)
    if k == "pil":
        return _pil_from(arr, img)
    if k == "numpy":
        return np.ascontiguousarray(arr)
    return _to_tensor_like(arr, img)


# ---- conversion ------------------------------------------------------------------------------------

def _pil_numpy(pic: Image.Image) -> np.ndarray:
    types = {"I": np.int32, "I;16": np.int16, "F": np.float32}  # torchvision's mode_to_nptype
    arr = np.array(pic, dtype=types.get(pic.mode, np.uint8), copy=True)
    if pic.mode == "1":
        arr = 255 * arr
    if arr.ndim == 2:
        arr = arr[:, :, None]
    return arr


def to_tensor(pic):
    """ToTensor: a PIL image or a NumPy (H, W[, C]) array to a (C, H, W) tensor; uint8 pixels become
    float32 in [0, 1], other dtypes keep their values."""
    if isinstance(pic, Image.Image):
        arr = _pil_numpy(pic)
    elif isinstance(pic, np.ndarray):
        if pic.ndim not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
        arr = pic[:, :, None] if pic.ndim == 2 else pic
    else:
        raise TypeError(f"pic should be PIL Image or ndarray. Got {type(pic)}")
    chw = np.ascontiguousarray(arr.transpose(2, 0, 1))
    if chw.dtype == np.uint8:
        return ember.from_numpy(chw.astype(np.float32) / np.float32(255))
    return ember.from_numpy(chw.copy())


def pil_to_tensor(pic):
    """PILToTensor: the pixels of a PIL image as a (C, H, W) tensor of their own dtype (uint8 mostly)."""
    if not isinstance(pic, Image.Image):
        raise TypeError(f"pic should be PIL Image. Got {type(pic)}")
    arr = np.array(pic, copy=True)
    if arr.ndim == 2:
        arr = arr[:, :, None]
    return ember.from_numpy(np.ascontiguousarray(arr.transpose(2, 0, 1)))


def to_image(inpt):
    """v2.ToImage: a PIL image or a NumPy (H, W[, C]) array as a (C, H, W) tensor of the same dtype;
    a tensor passes through."""
    if isinstance(inpt, ember.Tensor):
        return inpt
    if isinstance(inpt, Image.Image):
        return pil_to_tensor(inpt)
    if isinstance(inpt, np.ndarray):
        arr = inpt[:, :, None] if inpt.ndim == 2 else inpt
        if arr.ndim != 3:
            raise ValueError(f"a NumPy image must be (H, W) or (H, W, C), got shape {inpt.shape}")
        return ember.from_numpy(np.ascontiguousarray(arr.transpose(2, 0, 1)))
    raise TypeError(f"ToImage expects a PIL Image, a NumPy array or a tensor, got {type(inpt).__name__}")


def to_pil_image(pic, mode: Optional[str] = None) -> Image.Image:
    """A (C, H, W) tensor or (H, W, C) array as a PIL image; float values in [0, 1] are scaled by 255
    (torchvision's mul(255).byte())."""
    if isinstance(pic, ember.Tensor):
        a = _tensor_array(pic)
        if a.ndim == 2:
            a = a[None]
        if a.ndim != 3:
            raise ValueError(f"pic should be 2/3 dimensional. Got {a.ndim} dimensions.")
        if np.issubdtype(a.dtype, np.floating) and mode != "F":
            a = (a * np.float32(255)).astype(np.uint8)
        a = a.transpose(1, 2, 0)
    elif isinstance(pic, np.ndarray):
        a = pic[:, :, None] if pic.ndim == 2 else pic
        if a.ndim != 3:
            raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
    else:
        raise TypeError(f"pic should be Tensor or ndarray. Got {type(pic)}.")
    if a.shape[2] == 1:
        a = a[:, :, 0]
    out = Image.fromarray(np.ascontiguousarray(a))
    return out.convert(mode) if mode is not None and mode != out.mode else out


_INT_BITS = {np.dtype(np.uint8): 8, np.dtype(np.int16): 15, np.dtype(np.int32): 31, np.dtype(np.int64): 63}


def _np_dtype(dtype) -> np.dtype:
    return np.dtype(str(dtype).split(".")[-1])


def _convert_array(a: np.ndarray, dt: np.dtype, scale: bool = True, reciprocal: bool = False) -> np.ndarray:
    """torchvision's dtype conversion of image values; reciprocal: integers to float as
    x * (1 / max) (transforms.v2's to_dtype) rather than x / max (v1's convert_image_dtype)."""
    if a.dtype == dt:
        return a
    if not scale:
        return a.astype(dt)
    if np.issubdtype(a.dtype, np.floating):
        if np.issubdtype(dt, np.floating):
            return a.astype(dt)
        if dt not in _INT_BITS:
            raise TypeError(f"cannot convert an image to {dt}")
        if (a.dtype == np.float32 and dt in (np.int32, np.int64)) or (a.dtype == np.float64 and dt == np.int64):
            raise RuntimeError(f"The cast from {a.dtype} to {dt} cannot be performed safely.")
        # torchvision: mul(max + 1 - eps) then a truncating cast, in the image's float dtype.
        m = a.dtype.type((1 << _INT_BITS[dt]) - 1 + 1.0 - 1e-3)
        return (a * m).astype(dt)
    if a.dtype not in _INT_BITS:
        raise TypeError(f"cannot convert an image of dtype {a.dtype}")
    in_bits = _INT_BITS[a.dtype]
    if np.issubdtype(dt, np.floating):
        if reciprocal:
            return a.astype(dt) * dt.type(1.0 / ((1 << in_bits) - 1))
        return a.astype(dt) / dt.type((1 << in_bits) - 1)
    out_bits = _INT_BITS[dt]
    if out_bits < in_bits:
        return (a >> (in_bits - out_bits)).astype(dt)
    return a.astype(dt) << (out_bits - in_bits)


def convert_image_dtype(image, dtype=ember.float32):
    """ConvertImageDtype: integer images scaled to [0, 1] as float, float to integers by
    x * (max + 1 - 1e-3) truncated, integers between widths by bit shifts."""
    if not isinstance(image, ember.Tensor):
        raise TypeError("Input img should be Tensor Image")
    return _to_tensor_like(_convert_array(_tensor_array(image), _np_dtype(dtype)), image)


def to_dtype(inpt, dtype=ember.float32, scale: bool = False):
    """v2.functional.to_dtype: a cast, scaled as convert_image_dtype when scale=True."""
    if not isinstance(inpt, ember.Tensor):
        raise TypeError(f"to_dtype expects a tensor, got {type(inpt).__name__}")
    return _to_tensor_like(_convert_array(_tensor_array(inpt), _np_dtype(dtype), scale, reciprocal=True), inpt)


# ---- normalize ---------------------------------------------------------------------------------------

def normalize(tensor, mean: Sequence[float], std: Sequence[float], inplace: bool = False):
    """(x - mean[c]) / std[c] per channel of a float (..., C, H, W) tensor, in its dtype."""
    if not isinstance(tensor, ember.Tensor):
        raise TypeError(f"img should be Tensor Image. Got {type(tensor)}")
    if not tensor.is_floating_point():
        raise TypeError(f"Input tensor should be a float tensor. Got {tensor.dtype}.")
    if tensor.ndim < 3:
        raise ValueError("Expected tensor to be a tensor image of size (..., C, H, W). Got tensor.size() = "
                         f"{tuple(tensor.shape)}")
    a = _tensor_array(tensor)
    m = np.asarray(mean, dtype=a.dtype).reshape(-1)
    s = np.asarray(std, dtype=a.dtype).reshape(-1)
    if (s == 0).any():
        raise ValueError(f"std evaluated to zero after conversion to {a.dtype}, leading to division by zero.")
    c = a.shape[-3]
    for name, v in (("mean", m), ("std", s)):
        if v.size not in (1, c):
            raise ValueError(f"Normalize: {name} has {v.size} values but the image has {c} channels; "
                             "give one per channel")
    out = (a - m[:, None, None]) / s[:, None, None]
    if inplace and tensor.device.type == "cpu" and a.flags.writeable:
        a[...] = out
        return tensor
    return _to_tensor_like(out.astype(a.dtype, copy=False), tensor)


# ---- resize -------------------------------------------------------------------------------------------

def _output_size(h: int, w: int, size, max_size) -> List[int]:
    short, long = (w, h) if w <= h else (h, w)
    if size is None:
        if not isinstance(max_size, int):
            raise ValueError(f"max_size must be an integer when size is None, but got {max_size} instead.")
        new_short, new_long = int(max_size * short / long), max_size
        new_w, new_h = (new_short, new_long) if w <= h else (new_long, new_short)
    elif len(size) == 1:
        requested = size[0]
        new_short, new_long = requested, int(requested * long / short)
        if max_size is not None:
            if max_size <= requested:
                raise ValueError(f"max_size = {max_size} must be strictly greater than the requested size for "
                                 f"the smaller edge size = {size}")
            if new_long > max_size:
                new_short, new_long = int(max_size * new_short / new_long), max_size
        new_w, new_h = (new_short, new_long) if w <= h else (new_long, new_short)
    else:
        new_w, new_h = size[1], size[0]
    return [new_h, new_w]


def _check_size(size, name: str = "size"):
    if size is None:
        return None
    if isinstance(size, numbers.Integral) and not isinstance(size, bool):
        size = [int(size)]
    elif isinstance(size, (list, tuple)):
        if len(size) not in (1, 2):
            raise ValueError(f"Size must be an int or a 1 or 2 element tuple/list, not a {len(size)} element "
                             "tuple/list")
        if not all(isinstance(s, numbers.Integral) and not isinstance(s, bool) for s in size):
            raise TypeError(f"{name} must hold integers, got {size!r}")
        size = [int(s) for s in size]
    else:
        raise TypeError(f"Size should be int or sequence. Got {type(size)}")
    if any(s <= 0 for s in size):
        raise ValueError(f"{name} must be positive, got {size}")
    return size


def _aa_weights(n_in: int, n_out: int, antialias: bool) -> np.ndarray:
    """(n_out, n_in) weights of torch's bilinear interpolation (align_corners=False); with antialias
    the triangle filter widened by the scale when shrinking (torch's _upsample_bilinear2d_aa, Pillow's
    coefficients in floating point)."""
    scale = n_in / n_out
    w = np.zeros((n_out, n_in), dtype=np.float64)
    if antialias and scale >= 1.0:
        support = scale
        invscale = 1.0 / scale
        for i in range(n_out):
            center = scale * (i + 0.5)
            xmin = max(int(center - support + 0.5), 0)
            xmax = min(int(center + support + 0.5), n_in)
            js = np.arange(xmin, xmax)
            ws = np.maximum(0.0, 1.0 - np.abs((js - center + 0.5) * invscale))
            total = ws.sum()
            w[i, xmin:xmax] = ws / total if total != 0 else ws
        return w
    for i in range(n_out):
        src = max((i + 0.5) * scale - 0.5, 0.0)
        i0 = min(int(math.floor(src)), n_in - 1)
        i1 = min(i0 + 1, n_in - 1)
        l1 = src - i0
        w[i, i0] += 1.0 - l1
        w[i, i1] += l1
    return w


def _cubic(x: np.ndarray, a: float) -> np.ndarray:
    """The cubic convolution kernel (Keys) with parameter a, at distances x."""
    x = np.abs(x)
    near = ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
    far = (((x - 5.0) * x + 8.0) * x - 4.0) * a
    return np.where(x < 1.0, near, np.where(x < 2.0, far, 0.0))


def _bicubic_weights(n_in: int, n_out: int, antialias: bool) -> np.ndarray:
    """(n_out, n_in) weights of torch's bicubic interpolation (align_corners=False). Without
    antialias: torch's upsample_bicubic2d, a = -0.75, the 4 taps at floor(src) - 1 .. + 2 clamped
    to the image. With antialias (shrinking or not): torch's _upsample_bicubic2d_aa, Pillow's
    a = -0.5 filter widened by the scale when shrinking, taps inside the image, normalised."""
    scale = n_in / n_out
    w = np.zeros((n_out, n_in), dtype=np.float64)
    if antialias:
        support = 2.0 * max(scale, 1.0)
        invscale = 1.0 / scale if scale >= 1.0 else 1.0
        for i in range(n_out):
            center = scale * (i + 0.5)
            xmin = max(int(center - support + 0.5), 0)
            xmax = min(int(center + support + 0.5), n_in)
            ws = _cubic((np.arange(xmin, xmax) - center + 0.5) * invscale, -0.5)
            total = ws.sum()
            w[i, xmin:xmax] = ws / total if total != 0 else ws
        return w
    for i in range(n_out):
        src = scale * (i + 0.5) - 0.5  # not clamped at 0, unlike bilinear
        i0 = math.floor(src)
        taps = _cubic(src - i0 - np.arange(-1, 3), -0.75)
        for k, tap in zip(range(-1, 3), taps):
            w[i, min(max(i0 + k, 0), n_in - 1)] += tap
    return w


def _nearest_index(n_in: int, n_out: int, exact: bool) -> np.ndarray:
    scale = np.float32(n_in / n_out)
    o = np.arange(n_out, dtype=np.float32)
    src = np.floor((o + np.float32(0.5)) * scale) if exact else np.floor(o * scale)
    return np.minimum(src.astype(np.int64), n_in - 1)


def _resize_tensor_array(a: np.ndarray, oh: int, ow: int, mode: InterpolationMode, antialias: bool) -> np.ndarray:
    ih, iw = a.shape[-2:]
    if mode in (InterpolationMode.NEAREST, InterpolationMode.NEAREST_EXACT):
        exact = mode is InterpolationMode.NEAREST_EXACT
        return np.ascontiguousarray(a[..., _nearest_index(ih, oh, exact)[:, None], _nearest_index(iw, ow, exact)])
    if mode is InterpolationMode.LANCZOS:
        # torchvision passes antialias=False for every mode but bilinear and bicubic, so torch's
        # interpolate refuses lanczos whatever antialias says: its error, with the way out
        raise ValueError("Lanczos mode requires antialias=True (torchvision's resize turns antialias off for "
                         "LANCZOS on tensors, so a tensor cannot be resized with LANCZOS): resize the PIL image, "
                         "or use BICUBIC")
    if mode not in (InterpolationMode.BILINEAR, InterpolationMode.BICUBIC):
        raise NotImplementedError(f"resize: interpolation {mode.name} works on PIL images only (torch's interpolate "
                                  "has no such mode); tensors take NEAREST, NEAREST_EXACT, BILINEAR and BICUBIC")
    weights = _aa_weights if mode is InterpolationMode.BILINEAR else _bicubic_weights
    wy = weights(ih, oh, antialias)
    wx = weights(iw, ow, antialias)
    ft = a.dtype if a.dtype == np.float64 else np.dtype(np.float32)
    x = a.astype(ft)
    out = np.einsum("...hw,vw->...hv", x, wx.astype(ft), optimize=True)  # width first, as torch does
    out = np.einsum("...hv,oh->...ov", out, wy.astype(ft), optimize=True)
    if np.issubdtype(a.dtype, np.floating):
        return out.astype(a.dtype)
    info = np.iinfo(a.dtype)
    # torchvision: bicubic uint8 clamped to [0, 255], then every integer dtype rounded and cast
    return np.clip(np.round(out), info.min, info.max).astype(a.dtype)


def _resize_pil(img: Image.Image, oh: int, ow: int, mode: InterpolationMode) -> Image.Image:
    return img.resize((ow, oh), _PIL_MODES[mode])


def _resize_numpy(a: np.ndarray, oh: int, ow: int, mode: InterpolationMode) -> np.ndarray:
    """A NumPy image resized as the PIL image it makes: channel by channel through Pillow (Pillow's
    filters treat bands alike, so an 'L' image per channel gives an RGB image's pixels)."""
    if a.dtype != np.uint8:
        if mode in (InterpolationMode.NEAREST, InterpolationMode.NEAREST_EXACT, InterpolationMode.BILINEAR):
            moved = a if a.ndim == 2 else np.moveaxis(a, 2, 0)
            r = _resize_tensor_array(moved, oh, ow, mode if mode is not InterpolationMode.NEAREST
                                     else InterpolationMode.NEAREST_EXACT, True)
            return r if a.ndim == 2 else np.moveaxis(r, 0, 2)
        raise ValueError(f"resize: a {a.dtype} NumPy image takes NEAREST or BILINEAR only")
    planes = [a] if a.ndim == 2 else [a[:, :, c] for c in range(a.shape[2])]
    out = [np.asarray(_resize_pil(Image.fromarray(np.ascontiguousarray(p)), oh, ow, mode)) for p in planes]
    return out[0] if a.ndim == 2 else np.stack(out, axis=2)


def resize(img, size, interpolation=InterpolationMode.BILINEAR, max_size: Optional[int] = None,
           antialias: Optional[bool] = True):
    """Resize to size (h, w), or the shorter side to size (an int or [int]) keeping the aspect
    ratio, the longer side capped by max_size. PIL images go through Pillow (antialiased always),
    tensors through torch's arithmetic (NEAREST, NEAREST_EXACT, BILINEAR and BICUBIC, antialiased by
    default; uint8 computed in float and rounded; LANCZOS, BOX and HAMMING are PIL-only)."""
    mode = _interpolation(interpolation)
    size = _check_size(size)
    if max_size is not None and size is not None and len(size) != 1:
        raise ValueError("max_size should only be passed if size specifies the length of the smaller edge, i.e. "
                         "size should be an int or a sequence of length 1 in torchscript mode.")
    _, h, w = get_dimensions(img)
    oh, ow = _output_size(h, w, size, max_size)
    if [h, w] == [oh, ow]:
        return img
    k = _kind(img)
    if k == "pil":
        return _resize_pil(img, oh, ow, mode)
    if k == "numpy":
        return _resize_numpy(img, oh, ow, mode)
    return _to_tensor_like(_resize_tensor_array(_tensor_array(img), oh, ow, mode, bool(antialias)), img)


# ---- crops and flips ----------------------------------------------------------------------------------

def _crop_array(a: np.ndarray, ax: int, top: int, left: int, height: int, width: int) -> np.ndarray:
    """The (height, width) window at (top, left) of a's axes (ax, ax+1); zeros where it leaves the image."""
    h, w = a.shape[ax], a.shape[ax + 1]
    shape = list(a.shape)
    shape[ax], shape[ax + 1] = height, width
    out = np.zeros(shape, dtype=a.dtype)
    y0, y1 = max(top, 0), min(top + height, h)
    x0, x1 = max(left, 0), min(left + width, w)
    if y1 > y0 and x1 > x0:
        idx_src = [slice(None)] * a.ndim
        idx_dst = [slice(None)] * a.ndim
        idx_src[ax], idx_src[ax + 1] = slice(y0, y1), slice(x0, x1)
        idx_dst[ax], idx_dst[ax + 1] = slice(y0 - top, y1 - top), slice(x0 - left, x1 - left)
        out[tuple(idx_dst)] = a[tuple(idx_src)]
    return out


def crop(img, top: int, left: int, height: int, width: int):
    """The (height, width) window at (top, left); zero pixels where it extends past the image."""
    if height <= 0 or width <= 0:
        raise ValueError(f"crop: height and width must be positive, got ({height}, {width})")
    if _kind(img) == "pil":
        return img.crop((left, top, left + width, top + height))
    a, ax = _spatial(img)
    return _rewrap(_crop_array(a, ax, int(top), int(left), int(height), int(width)), img)


def _pair(size, name: str) -> List[int]:
    if isinstance(size, numbers.Integral) and not isinstance(size, bool):
        size = [int(size), int(size)]
    elif isinstance(size, (list, tuple)) and len(size) == 1:
        size = [int(size[0]), int(size[0])]
    elif isinstance(size, (list, tuple)) and len(size) == 2:
        size = [int(size[0]), int(size[1])]
    else:
        raise ValueError(f"{name}: please provide only two dimensions (h, w) for size, got {size!r}")
    if size[0] <= 0 or size[1] <= 0:
        raise ValueError(f"{name}: the size must be positive, got {size}")
    return size


def center_crop(img, output_size):
    """The centre (h, w) window: top = round((H - h) / 2) (half to even); zero padding around an
    image smaller than the crop."""
    ch, cw = _pair(output_size, "center_crop")
    _, h, w = get_dimensions(img)
    if cw > w or ch > h:
        pl = (cw - w) // 2 if cw > w else 0
        pt = (ch - h) // 2 if ch > h else 0
        pr = (cw - w + 1) // 2 if cw > w else 0
        pb = (ch - h + 1) // 2 if ch > h else 0
        img = pad(img, [pl, pt, pr, pb], fill=0)
        _, h, w = get_dimensions(img)
        if cw == w and ch == h:
            return img
    top = int(round((h - ch) / 2.0))
    left = int(round((w - cw) / 2.0))
    return crop(img, top, left, ch, cw)


def resized_crop(img, top: int, left: int, height: int, width: int, size,
                 interpolation=InterpolationMode.BILINEAR, antialias: Optional[bool] = True):
    """crop then resize, as RandomResizedCrop applies its box."""
    return resize(crop(img, top, left, height, width), size, interpolation, antialias=antialias)


def hflip(img):
    """Mirrored left to right."""
    if _kind(img) == "pil":
        return img.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    a, ax = _spatial(img)
    return _rewrap(np.flip(a, axis=ax + 1), img)


def vflip(img):
    """Mirrored top to bottom."""
    if _kind(img) == "pil":
        return img.transpose(Image.Transpose.FLIP_TOP_BOTTOM)
    a, ax = _spatial(img)
    return _rewrap(np.flip(a, axis=ax), img)


horizontal_flip = hflip
vertical_flip = vflip


# ---- pad ------------------------------------------------------------------------------------------------

def _parse_padding(padding) -> List[int]:
    if isinstance(padding, numbers.Integral) and not isinstance(padding, bool):
        return [int(padding)] * 4
    if not isinstance(padding, (list, tuple)):
        raise TypeError(f"Got inappropriate padding arg: {padding!r}")
    if len(padding) not in (1, 2, 4):
        raise ValueError(f"Padding must be an int or a 1, 2, or 4 element tuple, not a {len(padding)} element tuple")
    if not all(isinstance(p, numbers.Integral) and not isinstance(p, bool) for p in padding):
        raise TypeError(f"padding must hold integers, got {padding!r}")
    p = [int(v) for v in padding]
    if len(p) == 1:
        return p * 4
    if len(p) == 2:
        return [p[0], p[1], p[0], p[1]]
    return p


_NP_PAD_MODES = {"edge": "edge", "reflect": "reflect", "symmetric": "symmetric"}


def pad(img, padding, fill=0, padding_mode: str = "constant"):
    """Pad by padding: an int (all sides), [left/right, top/bottom] or [left, top, right, bottom];
    fill (a number, or one per channel) for padding_mode "constant", else "edge", "reflect" (the edge
    not repeated) or "symmetric" (repeated). Negative padding crops."""
    if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
        raise ValueError("Padding mode should be either constant, edge, reflect or symmetric, "
                         f"got {padding_mode!r}")
    if not isinstance(fill, (numbers.Number, tuple, list)):
        raise TypeError(f"Got inappropriate fill arg: {fill!r}")
    pl, pt, pr, pb = _parse_padding(padding)
    k = _kind(img)
    a, ax = _spatial(img)
    h, w = a.shape[ax], a.shape[ax + 1]
    if min(pl, pt, pr, pb) < 0:  # crop the negative sides first
        ct, cl = max(-pt, 0), max(-pl, 0)
        ch, cw = h - ct - max(-pb, 0), w - cl - max(-pr, 0)
        if ch <= 0 or cw <= 0:
            raise ValueError(f"pad: the negative padding {padding} leaves nothing of a {h} x {w} image")
        a = _crop_array(a, ax, ct, cl, ch, cw)
        h, w = ch, cw
        pl, pt, pr, pb = max(pl, 0), max(pt, 0), max(pr, 0), max(pb, 0)
    widths = [(0, 0)] * a.ndim
    widths[ax], widths[ax + 1] = (pt, pb), (pl, pr)
    if padding_mode == "reflect" and k == "tensor" and (max(pt, pb) >= h or max(pl, pr) >= w):
        raise ValueError(f"pad: reflect padding {[pl, pt, pr, pb]} must be smaller than the image's side "
                         f"({h} x {w})")
    if padding_mode != "constant":
        out = np.pad(a, widths, mode=_NP_PAD_MODES[padding_mode])
        return _rewrap(out, img)
    out = np.pad(a, widths, mode="constant")
    fills = np.asarray(fill, dtype=np.float64).reshape(-1)
    if fills.size and (fills != 0).any():
        # the fill written where the padding is (per channel when it has one value per channel)
        mask = np.ones((out.shape[ax], out.shape[ax + 1]), dtype=bool)
        mask[pt:pt + h, pl:pl + w] = False
        if k == "tensor":
            chan = out.shape[-3] if out.ndim >= 3 else 1
        else:
            chan = 1 if out.ndim == 2 else out.shape[2]
        if fills.size not in (1, chan):
            raise ValueError(f"pad: fill has {fills.size} values for an image of {chan} channels")
        vals = np.broadcast_to(fills, (chan,)).astype(out.dtype) if np.issubdtype(out.dtype, np.floating) else \
            np.broadcast_to(np.trunc(fills), (chan,)).astype(out.dtype)
        if k == "tensor":
            if out.ndim == 2:
                out[mask] = vals[0]
            else:
                sel = out[..., mask]  # (..., C, n)
                sel[...] = vals[:, None]
                out[..., mask] = sel
        else:
            if out.ndim == 2:
                out[mask] = vals[0]
            else:
                out[mask] = vals
    return _rewrap(out, img)


# ---- colour ---------------------------------------------------------------------------------------

def rgb_to_grayscale(img, num_output_channels: int = 1):
    """Luma L = 0.299 R + 0.587 G + 0.114 B (Pillow's convert("L") on PIL images; torchvision's
    0.2989/0.587/0.114 float sum, cast back to the dtype, on tensors)."""
    if num_output_channels not in (1, 3):
        raise ValueError("num_output_channels should be either 1 or 3")
    k = _kind(img)
    if k in ("pil", "numpy"):
        pil = img if k == "pil" else Image.fromarray(np.ascontiguousarray(img))
        if k == "numpy" and not (img.ndim == 2 or img.shape[2] in (1, 3)):
            raise ValueError(f"rgb_to_grayscale: a NumPy image needs 1 or 3 channels, got shape {img.shape}")
        g = pil.convert("L")
        if num_output_channels == 3:
            arr = np.asarray(g)
            g = Image.fromarray(np.ascontiguousarray(np.dstack([arr, arr, arr])), "RGB")
        return g if k == "pil" else np.asarray(g)
    a = _tensor_array(img)
    if a.ndim < 3:
        raise TypeError(f"Input image tensor should have at least 3 dimensions, but found {a.ndim}")
    c = a.shape[-3]
    if c not in (1, 3):
        raise TypeError(f"Input image tensor permitted channel values are [1, 3], but found {c}")
    if c == 3:
        r, gr, b = (a[..., i, :, :] for i in range(3))
        f = a.dtype.type if np.issubdtype(a.dtype, np.floating) else np.float32
        lum = (f(0.2989) * r.astype(f) + f(0.587) * gr.astype(f)) + f(0.114) * b.astype(f)
        lum = lum.astype(a.dtype)[..., None, :, :]
    else:
        lum = a.copy()
    if num_output_channels == 3:
        lum = np.broadcast_to(lum, a.shape[:-3] + (3,) + a.shape[-2:])
    return _to_tensor_like(lum, img)


def to_grayscale(img, num_output_channels: int = 1):
    return rgb_to_grayscale(img, num_output_channels)


# ---- erase ----------------------------------------------------------------------------------------

def erase(img, i: int, j: int, h: int, w: int, v, inplace: bool = False):
    """The (h, w) rectangle at (i, j) of a (..., C, H, W) tensor set to v (a tensor or number)."""
    if not isinstance(img, ember.Tensor):
        raise TypeError(f"img should be Tensor Image. Got {type(img)}")
    a = _tensor_array(img)
    out = a if inplace and a.flags.writeable and img.device.type == "cpu" else a.copy()
    vv = np.asarray(v.numpy() if isinstance(v, ember.Tensor) else v)
    out[..., i:i + h, j:j + w] = vv.astype(a.dtype) if vv.dtype != a.dtype else vv
    return img if out is a else _to_tensor_like(out, img)


# The colour/filter and affine families live in their own files; functional is their one public name.
from ._functional_color import *  # noqa: E402,F401,F403
from ._functional_affine import *  # noqa: E402,F401,F403
