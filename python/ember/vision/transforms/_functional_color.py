"""torchvision's colour and filter ops on ember (part of ember.vision.transforms.functional): the
Gaussian blur, ColorJitter's adjustments and the augmentation policies' ops, on PIL images (Pillow's
ImageEnhance/ImageOps, as torchvision), NumPy arrays (as the PIL image they make) and tensors
(torchvision's float arithmetic, in NumPy)."""

from __future__ import annotations

import numbers

import numpy as np
from PIL import Image, ImageEnhance, ImageOps

from .functional import _convert_array, _kind, _pil_from, _tensor_array, _to_tensor_like, pil_to_tensor

__all__ = ["gaussian_blur", "adjust_brightness", "adjust_contrast", "adjust_saturation", "adjust_hue", "invert",
           "posterize", "solarize", "adjust_sharpness", "autocontrast", "equalize"]

# ---- blur -----------------------------------------------------------------------------------------

def _gaussian_kernel1d(size: int, sigma: float) -> np.ndarray:
    half = (size - 1) * 0.5
    x = np.linspace(-half, half, size, dtype=np.float32)
    pdf = np.exp(np.float32(-0.5) * (x / np.float32(sigma)) ** 2)
    return (pdf / pdf.sum()).astype(np.float32)


def gaussian_blur(img, kernel_size, sigma=None):
    """torchvision's Gaussian blur: a (ky, kx) kernel of float32 Gaussians (sigma per axis; None:
    0.3 * ((k - 1) / 2 - 1) + 0.8, i.e. 0.15 k + 0.35), reflect padding, float sums, uint8 rounded.
    PIL images and arrays go through their uint8 pixels as torchvision's PIL path does."""
    if isinstance(kernel_size, numbers.Integral) and not isinstance(kernel_size, bool):
        kernel_size = [int(kernel_size), int(kernel_size)]
    if not isinstance(kernel_size, (list, tuple)) or len(kernel_size) not in (1, 2):
        raise TypeError(f"kernel_size should be int or a sequence of integers. Got {kernel_size!r}")
    if len(kernel_size) == 1:
        kernel_size = [kernel_size[0], kernel_size[0]]
    for ks in kernel_size:
        if not isinstance(ks, numbers.Integral) or ks % 2 == 0 or ks < 0:
            raise ValueError(f"kernel_size should have odd and positive integers. Got {kernel_size}")
    if sigma is None:
        sigma = [ks * 0.15 + 0.35 for ks in kernel_size]
    elif isinstance(sigma, numbers.Real):
        sigma = [float(sigma), float(sigma)]
    elif isinstance(sigma, (list, tuple)) and len(sigma) == 1:
        sigma = [float(sigma[0]), float(sigma[0])]
    elif not (isinstance(sigma, (list, tuple)) and len(sigma) == 2):
        raise TypeError(f"sigma should be either float or sequence of floats. Got {sigma!r}")
    if any(s <= 0 for s in sigma):
        raise ValueError(f"sigma should have positive values. Got {sigma}")
    k = _kind(img)
    if k == "tensor":
        a = _tensor_array(img)
    elif k == "pil":
        a = np.asarray(pil_to_tensor(img))
    else:
        a = img[None] if img.ndim == 2 else np.moveaxis(img, 2, 0)
    if a.ndim < 3:
        raise TypeError(f"gaussian_blur: an image tensor must be (..., C, H, W), got shape {a.shape}")
    kx, ky = kernel_size
    ftype = a.dtype if np.issubdtype(a.dtype, np.floating) else np.dtype(np.float32)
    kernel = (_gaussian_kernel1d(ky, sigma[1])[:, None] * _gaussian_kernel1d(kx, sigma[0])[None, :]).astype(ftype)
    h, w = a.shape[-2:]
    py, px = ky // 2, kx // 2
    if py >= h or px >= w:
        raise ValueError(f"gaussian_blur: the kernel {kernel_size} needs an image larger than its half-size "
                         f"on each side (reflect padding), got {h} x {w}")
    widths = [(0, 0)] * (a.ndim - 2) + [(py, py), (px, px)]
    padded = np.pad(a.astype(ftype), widths, mode="reflect")
    out = np.zeros(a.shape, dtype=ftype)
    for dy in range(ky):
        for dx in range(kx):
            out += kernel[dy, dx] * padded[..., dy:dy + h, dx:dx + w]
    if not np.issubdtype(a.dtype, np.floating):
        info = np.iinfo(a.dtype)
        out = np.clip(np.round(out), info.min, info.max).astype(a.dtype)
    if k == "tensor":
        return _to_tensor_like(out, img)
    if k == "pil":
        return _pil_from(out[0] if out.shape[0] == 1 else np.moveaxis(out, 0, 2), img)
    return out[0] if img.ndim == 2 else np.ascontiguousarray(np.moveaxis(out, 0, 2))


# ---- colour adjustments (ColorJitter) ------------------------------------------------------------------
# PIL images: Pillow's ImageEnhance and HSV conversion, as torchvision's PIL path. Tensors:
# torchvision's float arithmetic (blend = ratio * img1 + (1 - ratio) * img2, clamped, cast back with
# truncation) in float32 with NumPy. NumPy arrays: as the PIL image they make.

def _pil_op(img, fn):
    """fn on a PIL image; a NumPy array through the PIL image it makes, returned as an array."""
    if _kind(img) == "pil":
        return fn(img)
    return np.asarray(fn(Image.fromarray(np.ascontiguousarray(img))))


def _color_tensor(img) -> np.ndarray:
    a = _tensor_array(img)
    if a.ndim < 3:
        raise TypeError(f"Tensor is not a torch image: it must be (..., C, H, W), got shape {a.shape}")
    if a.shape[-3] not in (1, 3):
        raise TypeError(f"Input image tensor permitted channel values are [1, 3], but found {a.shape[-3]}")
    return a


def _bound(dtype: np.dtype) -> float:
    return 1.0 if np.issubdtype(dtype, np.floating) else float(np.iinfo(dtype).max)


def _blend(img1: np.ndarray, img2, ratio: float) -> np.ndarray:
    f = img1.dtype.type if np.issubdtype(img1.dtype, np.floating) else np.float32
    ratio = float(ratio)
    out = f(ratio) * img1.astype(f) + f(1.0 - ratio) * np.asarray(img2).astype(f)
    return np.clip(out, 0, _bound(img1.dtype)).astype(img1.dtype)


def _gray_array(a: np.ndarray) -> np.ndarray:
    f = a.dtype.type if np.issubdtype(a.dtype, np.floating) else np.float32
    r, g, b = (a[..., i, :, :] for i in range(3))
    lum = (f(0.2989) * r.astype(f) + f(0.587) * g.astype(f)) + f(0.114) * b.astype(f)
    return lum.astype(a.dtype)[..., None, :, :]


def adjust_brightness(img, brightness_factor: float):
    if brightness_factor < 0:
        raise ValueError(f"brightness_factor ({brightness_factor}) is not non-negative.")
    if _kind(img) != "tensor":
        return _pil_op(img, lambda p: ImageEnhance.Brightness(p).enhance(brightness_factor))
    a = _color_tensor(img)
    return _to_tensor_like(_blend(a, 0.0, brightness_factor), img)


def adjust_contrast(img, contrast_factor: float):
    if contrast_factor < 0:
        raise ValueError(f"contrast_factor ({contrast_factor}) is not non-negative.")
    if _kind(img) != "tensor":
        return _pil_op(img, lambda p: ImageEnhance.Contrast(p).enhance(contrast_factor))
    a = _color_tensor(img)
    f = a.dtype if np.issubdtype(a.dtype, np.floating) else np.dtype(np.float32)
    gray = _gray_array(a) if a.shape[-3] == 3 else a
    mean = gray.astype(f).mean(axis=(-3, -2, -1), keepdims=True, dtype=np.float64).astype(f)
    return _to_tensor_like(_blend(a, mean, contrast_factor), img)


def adjust_saturation(img, saturation_factor: float):
    if saturation_factor < 0:
        raise ValueError(f"saturation_factor ({saturation_factor}) is not non-negative.")
    if _kind(img) != "tensor":
        return _pil_op(img, lambda p: ImageEnhance.Color(p).enhance(saturation_factor))
    a = _color_tensor(img)
    if a.shape[-3] == 1:
        return img
    return _to_tensor_like(_blend(a, _gray_array(a), saturation_factor), img)


def _rgb2hsv(a: np.ndarray) -> np.ndarray:
    r, g, b = a[..., 0, :, :], a[..., 1, :, :], a[..., 2, :, :]
    maxc, minc = a.max(axis=-3), a.min(axis=-3)
    eqc = maxc == minc
    cr = maxc - minc
    ones = np.ones_like(maxc)
    s = cr / np.where(eqc, ones, maxc)
    cr_divisor = np.where(eqc, ones, cr)
    rc, gc, bc = (maxc - r) / cr_divisor, (maxc - g) / cr_divisor, (maxc - b) / cr_divisor
    f = a.dtype.type
    hr = (maxc == r) * (bc - gc)
    hg = ((maxc == g) & (maxc != r)) * (f(2.0) + rc - bc)
    hb = ((maxc != g) & (maxc != r)) * (f(4.0) + gc - rc)
    h = hr + hg + hb
    h = np.fmod(h / f(6.0) + f(1.0), f(1.0))
    return np.stack((h, s, maxc), axis=-3)


def _hsv2rgb(a: np.ndarray) -> np.ndarray:
    f = a.dtype.type
    h, s, v = a[..., 0, :, :], a[..., 1, :, :], a[..., 2, :, :]
    i = np.floor(h * f(6.0))
    frac = h * f(6.0) - i
    i = i.astype(np.int32) % 6
    p = np.clip(v * (f(1.0) - s), 0.0, 1.0)
    q = np.clip(v * (f(1.0) - s * frac), 0.0, 1.0)
    t = np.clip(v * (f(1.0) - s * (f(1.0) - frac)), 0.0, 1.0)
    choices = ((v, q, p, p, t, v), (t, v, v, q, p, p), (p, p, t, v, v, q))
    return np.stack([np.choose(i, c) for c in choices], axis=-3).astype(a.dtype)


def adjust_hue(img, hue_factor: float):
    """Hue rotated by hue_factor turns (in [-0.5, 0.5]): Pillow's HSV with the uint8 hue wrapping on
    PIL images, torchvision's float HSV round trip on tensors."""
    if not -0.5 <= hue_factor <= 0.5:
        raise ValueError(f"hue_factor ({hue_factor}) is not in [-0.5, 0.5].")
    if _kind(img) != "tensor":
        def pil_hue(p):
            if p.mode in {"L", "1", "I", "F"}:
                return p
            h, s, v = p.convert("HSV").split()
            np_h = np.array(h, dtype=np.uint8)
            np_h += np.int32(hue_factor * 255).astype(np.uint8)
            return Image.merge("HSV", (Image.fromarray(np_h, "L"), s, v)).convert(p.mode)
        return _pil_op(img, pil_hue)
    a = _color_tensor(img)
    if a.shape[-3] == 1:
        return img
    x = _convert_array(a, np.dtype(np.float32))
    hsv = _rgb2hsv(x)
    hsv[..., 0, :, :] = np.mod(hsv[..., 0, :, :] + np.float32(hue_factor), np.float32(1.0))
    return _to_tensor_like(_convert_array(_hsv2rgb(hsv), a.dtype), img)


# ---- the ops of the augmentation policies (invert, posterize, solarize, sharpness, autocontrast,
# equalize): Pillow's ImageOps/ImageEnhance on PIL images, torchvision's tensor arithmetic on tensors.

def _policy_tensor(img, uint8_only: str = "") -> np.ndarray:
    a = _tensor_array(img)
    if a.ndim < 3:
        raise TypeError(f"Tensor is not a torch image: it must be (..., C, H, W), got shape {a.shape}")
    if a.shape[-3] not in (1, 3):
        raise TypeError(f"Input image tensor permitted channel values are [1, 3], but found {a.shape[-3]}")
    if uint8_only and a.dtype != np.uint8:
        raise TypeError(f"Only torch.uint8 image tensors are supported by {uint8_only}, but found {a.dtype}")
    return a


def invert(img):
    if _kind(img) != "tensor":
        return _pil_op(img, ImageOps.invert)
    a = _policy_tensor(img)
    return _to_tensor_like((a.dtype.type(_bound(a.dtype)) - a).astype(a.dtype), img)


def posterize(img, bits: int):
    if not 0 <= bits <= 8:
        raise ValueError(f"The number if bits should be between 0 and 8. Got {bits}")
    if _kind(img) != "tensor":
        return _pil_op(img, lambda p: ImageOps.posterize(p, bits))
    a = _policy_tensor(img, "posterize")
    return _to_tensor_like(a & np.uint8((-(2 ** (8 - bits))) & 0xFF), img)


def solarize(img, threshold: float):
    if _kind(img) != "tensor":
        return _pil_op(img, lambda p: ImageOps.solarize(p, threshold))
    a = _policy_tensor(img)
    if threshold > _bound(a.dtype):
        raise TypeError("Threshold should be less than bound of img.")
    inverted = (a.dtype.type(_bound(a.dtype)) - a).astype(a.dtype)
    return _to_tensor_like(np.where(a >= threshold, inverted, a), img)


def adjust_sharpness(img, sharpness_factor: float):
    if sharpness_factor < 0:
        raise ValueError(f"sharpness_factor ({sharpness_factor}) is not non-negative.")
    if _kind(img) != "tensor":
        return _pil_op(img, lambda p: ImageEnhance.Sharpness(p).enhance(sharpness_factor))
    a = _policy_tensor(img)
    h, w = a.shape[-2:]
    if h <= 2 or w <= 2:
        return img
    ft = a.dtype if np.issubdtype(a.dtype, np.floating) else np.dtype(np.float32)
    kernel = np.ones((3, 3), dtype=ft)
    kernel[1, 1] = 5.0
    kernel /= kernel.sum()
    x = a.astype(ft)
    blurred = np.zeros(a.shape[:-2] + (h - 2, w - 2), dtype=ft)
    for dy in range(3):
        for dx in range(3):
            blurred += kernel[dy, dx] * x[..., dy:dy + h - 2, dx:dx + w - 2]
    if not np.issubdtype(a.dtype, np.floating):
        blurred = np.clip(np.round(blurred), 0, _bound(a.dtype))
    degenerate = a.copy()
    degenerate[..., 1:-1, 1:-1] = blurred.astype(a.dtype)
    return _to_tensor_like(_blend(a, degenerate, sharpness_factor), img)


def autocontrast(img):
    if _kind(img) != "tensor":
        return _pil_op(img, ImageOps.autocontrast)
    a = _policy_tensor(img)
    bound = _bound(a.dtype)
    ft = a.dtype if np.issubdtype(a.dtype, np.floating) else np.dtype(np.float32)
    mn = a.min(axis=(-2, -1), keepdims=True).astype(ft)
    mx = a.max(axis=(-2, -1), keepdims=True).astype(ft)
    with np.errstate(divide="ignore", invalid="ignore"):  # torch's bound / t is t.reciprocal() * bound
        scale = (ft.type(1) / (mx - mn)) * ft.type(bound)
    bad = ~np.isfinite(scale)
    mn[bad] = 0
    scale[bad] = 1
    out = np.clip((a.astype(ft) - mn) * scale, 0, bound)
    return _to_tensor_like(out.astype(a.dtype), img)


def _equalize_channel(ch: np.ndarray) -> np.ndarray:
    hist = np.bincount(ch.reshape(-1), minlength=256).astype(np.int64)
    nonzero = hist[hist != 0]
    step = int(nonzero[:-1].sum()) // 255
    if step == 0:
        return ch
    lut = (np.cumsum(hist) + step // 2) // step
    lut = np.clip(np.concatenate([[0], lut[:-1]]), 0, 255)
    return lut[ch.astype(np.int64)].astype(np.uint8)


def equalize(img):
    if _kind(img) != "tensor":
        return _pil_op(img, ImageOps.equalize)
    a = _policy_tensor(img, "equalize")
    flat = a.reshape((-1,) + a.shape[-2:])
    out = np.stack([_equalize_channel(c) for c in flat]).reshape(a.shape)
    return _to_tensor_like(out, img)
