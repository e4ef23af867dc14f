"""torchvision's grid transforms on ember (part of ember.vision.transforms.functional): affine, rotate
and perspective through Pillow's transform/rotate on PIL images and torchvision's grids and
grid_sample on tensors (in NumPy); elastic_transform, a displacement field on the identity grid."""

from __future__ import annotations

import math
import numbers
from typing import List, Optional, Sequence

import numpy as np
from PIL import Image

import ember

from .functional import (InterpolationMode, _PIL_MODES, _interpolation, _kind, _pil_from, _tensor_array,
                         _to_tensor_like, get_dimensions)
from ._functional_color import _pil_op

__all__ = ["affine", "rotate", "perspective", "elastic_transform", "elastic"]

# ---- affine and rotate -----------------------------------------------------------------------------------
# PIL images: Pillow's transform/rotate with torchvision's inverse matrix. Tensors: torchvision's
# affine grid (float32, pixel centres at +-0.5) and grid_sample (align_corners=False, zeros outside)
# in NumPy; a fill is blended through a sampled mask channel as torchvision does.

def _inverse_affine_matrix(center, angle, translate, scale, shear, inverted=True) -> List[float]:
    rot = math.radians(angle)
    sx, sy = math.radians(shear[0]), math.radians(shear[1])
    cx, cy = center
    tx, ty = translate
    a = math.cos(rot - sy) / math.cos(sy)
    b = -math.cos(rot - sy) * math.tan(sx) / math.cos(sy) - math.sin(rot)
    c = math.sin(rot - sy) / math.cos(sy)
    d = -math.sin(rot - sy) * math.tan(sx) / math.cos(sy) + math.cos(rot)
    if inverted:
        m = [x / scale for x in [d, -b, 0.0, -c, a, 0.0]]
        m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty)
        m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty)
        m[2] += cx
        m[5] += cy
        return m
    m = [x * scale for x in [a, b, 0.0, c, d, 0.0]]
    m[2] += m[0] * (-cx) + m[1] * (-cy)
    m[5] += m[3] * (-cx) + m[4] * (-cy)
    m[2] += cx + tx
    m[5] += cy + ty
    return m


def _pil_fill(fill, img: Image.Image):
    bands = len(img.getbands())
    if fill is None:
        fill = 0
    if isinstance(fill, (int, float)) and bands > 1:
        fill = tuple([fill] * bands)
    if isinstance(fill, (list, tuple)):
        if len(fill) == 1:
            fill = tuple(fill) * bands
        elif len(fill) != bands:
            raise ValueError("The number of elements in 'fill' does not match the number of channels of the image "
                             f"({len(fill)} != {bands})")
        fill = tuple(fill)
    if img.mode != "F":
        fill = tuple(int(x) for x in fill) if isinstance(fill, tuple) else int(fill)
    return fill


def _grid_sample(a: np.ndarray, gx: np.ndarray, gy: np.ndarray, mode: str) -> np.ndarray:
    """grid_sample(align_corners=False, padding_mode="zeros") of a (..., C, H, W) at (oh, ow) grids."""
    h, w = a.shape[-2:]
    f = a.dtype.type
    ix = ((gx + f(1)) * f(w) - f(1)) / f(2)
    iy = ((gy + f(1)) * f(h) - f(1)) / f(2)
    if mode == "nearest":
        xi, yi = np.rint(ix).astype(np.int64), np.rint(iy).astype(np.int64)
        inside = (xi >= 0) & (xi < w) & (yi >= 0) & (yi < h)
        out = a[..., np.clip(yi, 0, h - 1), np.clip(xi, 0, w - 1)]
        return np.where(inside, out, f(0))
    x0, y0 = np.floor(ix), np.floor(iy)
    out = np.zeros(a.shape[:-2] + gx.shape, dtype=a.dtype)
    for dy in (0, 1):
        for dx in (0, 1):
            xs, ys = (x0 + dx).astype(np.int64), (y0 + dy).astype(np.int64)
            wx = (ix - x0) if dx else (x0 + f(1) - ix)
            wy = (iy - y0) if dy else (y0 + f(1) - iy)
            inside = (xs >= 0) & (xs < w) & (ys >= 0) & (ys < h)
            v = a[..., np.clip(ys, 0, h - 1), np.clip(xs, 0, w - 1)]
            out += np.where(inside, v * (wx * wy).astype(a.dtype), f(0))
    return out


def _grid_source(img, mode: InterpolationMode, fill):
    """The tensor's pixels and the float dtype its grid is computed in, after torchvision's checks of
    a grid transform's inputs (_assert_grid_transform_inputs)."""
    if mode not in (InterpolationMode.NEAREST, InterpolationMode.BILINEAR):
        raise ValueError(f"Interpolation mode '{mode.value}' is unsupported with Tensor input")
    a = _tensor_array(img)
    if a.ndim < 3:
        raise TypeError(f"Tensor is not a torch image: it must be (..., C, H, W), got shape {a.shape}")
    c = a.shape[-3]
    if fill is not None and isinstance(fill, (tuple, list)) and len(fill) > 1 and len(fill) != c:
        raise ValueError("The number of elements in 'fill' cannot broadcast to match the number of channels of the "
                         f"image ({len(fill)} != {c})")
    ft = a.dtype if np.issubdtype(a.dtype, np.floating) else np.dtype(np.float32)
    return a, ft


def _apply_grid(img, a: np.ndarray, gx: np.ndarray, gy: np.ndarray, mode: InterpolationMode, fill, ft: np.dtype):
    """torchvision's _apply_grid_transform: a sampled at the normalised grid (gx, gy) in ft; a fill
    blended through a sampled mask channel (nearest: where the mask is < 0.5; bilinear: by the
    mask's weight); integer images rounded back."""
    f = ft.type
    h, w = a.shape[-2:]
    x = a.astype(ft)
    if fill is not None:
        x = np.concatenate([x, np.ones(x.shape[:-3] + (1, h, w), dtype=ft)], axis=-3)
    out = _grid_sample(x, gx.astype(ft), gy.astype(ft), mode.value)
    if fill is not None:
        mask = np.broadcast_to(out[..., -1:, :, :], out[..., :-1, :, :].shape)
        out = out[..., :-1, :, :]
        fills = np.asarray(fill if isinstance(fill, (list, tuple)) else [float(fill)], dtype=ft).reshape(-1, 1, 1)
        fills = np.broadcast_to(fills, out.shape)
        if mode is InterpolationMode.NEAREST:
            out = np.where(mask < f(0.5), fills, out)
        else:
            out = out * mask + (f(1.0) - mask) * fills
    if not np.issubdtype(a.dtype, np.floating):
        info = np.iinfo(a.dtype)
        out = np.clip(np.round(out), info.min, info.max)
    return _to_tensor_like(out.astype(a.dtype), img)


def _tensor_affine(img, matrix: List[float], ow: int, oh: int, mode: InterpolationMode, fill):
    a, ft = _grid_source(img, mode, fill)
    h, w = a.shape[-2:]
    theta = np.asarray(matrix, dtype=ft).reshape(2, 3)
    xs = np.linspace(-ow * 0.5 + 0.5, ow * 0.5 + 0.5 - 1, ow, dtype=ft)
    ys = np.linspace(-oh * 0.5 + 0.5, oh * 0.5 + 0.5 - 1, oh, dtype=ft)
    rescaled = theta.T / np.asarray([0.5 * w, 0.5 * h], dtype=ft)  # (3, 2)
    gx = xs[None, :] * rescaled[0, 0] + ys[:, None] * rescaled[1, 0] + rescaled[2, 0]
    gy = xs[None, :] * rescaled[0, 1] + ys[:, None] * rescaled[1, 1] + rescaled[2, 1]
    return _apply_grid(img, a, gx, gy, mode, fill, ft)


def _check_affine_fill(fill):
    if fill is not None and not isinstance(fill, (numbers.Number, list, tuple)):
        raise TypeError(f"Argument fill should be either int, float, tuple or list, got {type(fill).__name__}")


def affine(img, angle: float, translate: Sequence[int], scale: float, shear, interpolation=InterpolationMode.NEAREST,
           fill=None, center: Optional[Sequence[int]] = None):
    """Rotation by angle degrees (counter-clockwise), translation, scale and shear (degrees) about
    the centre, keeping the image size."""
    mode = _interpolation(interpolation)
    if not isinstance(angle, (int, float)):
        raise TypeError("Argument angle should be int or float")
    if not isinstance(translate, (list, tuple)):
        raise TypeError("Argument translate should be a sequence")
    if len(translate) != 2:
        raise ValueError("Argument translate should be a sequence of length 2")
    if scale <= 0.0:
        raise ValueError("Argument scale should be positive")
    if not isinstance(shear, (numbers.Number, list, tuple)):
        raise TypeError("Shear should be either a single value or a sequence of two values")
    _check_affine_fill(fill)
    angle = float(angle)
    shear = [shear, 0.0] if isinstance(shear, numbers.Number) else list(shear)
    if len(shear) == 1:
        shear = [shear[0], shear[0]]
    if len(shear) != 2:
        raise ValueError(f"Shear should be a sequence containing two values. Got {shear}")
    if center is not None and not isinstance(center, (list, tuple)):
        raise TypeError("Argument center should be a sequence")
    _, height, width = get_dimensions(img)
    k = _kind(img)
    if k != "tensor":
        c = [width * 0.5, height * 0.5] if center is None else center
        matrix = _inverse_affine_matrix(c, angle, list(translate), scale, shear)
        return _pil_op(img, lambda p: p.transform(p.size, Image.AFFINE, matrix, _PIL_MODES[mode],
                                                  fillcolor=_pil_fill(fill, p)))
    center_f = [0.0, 0.0] if center is None else [1.0 * (c - s * 0.5) for c, s in zip(center, [width, height])]
    matrix = _inverse_affine_matrix(center_f, angle, [1.0 * t for t in translate], scale, shear)
    return _tensor_affine(img, matrix, width, height, mode, fill)


def _affine_output_size(matrix: List[float], w: int, h: int):
    pts = np.asarray([[-0.5 * w, -0.5 * h, 1.0], [-0.5 * w, 0.5 * h, 1.0], [0.5 * w, 0.5 * h, 1.0],
                      [0.5 * w, -0.5 * h, 1.0]], dtype=np.float32)
    theta = np.asarray(matrix, dtype=np.float32).reshape(2, 3)
    new = pts @ theta.T
    half = np.asarray([w * 0.5, h * 0.5], dtype=np.float32)
    mn, mx = new.min(axis=0) + half, new.max(axis=0) + half
    tol = np.float32(1e-4)
    cmax = np.ceil(np.trunc(mx / tol) * tol)
    cmin = np.floor(np.trunc(mn / tol) * tol)
    size = cmax - cmin
    return int(size[0]), int(size[1])


def rotate(img, angle: float, interpolation=InterpolationMode.NEAREST, expand: bool = False,
           center: Optional[Sequence[int]] = None, fill=None):
    """Rotated by angle degrees counter-clockwise about the centre; expand grows the canvas to hold
    the whole rotated image."""
    mode = _interpolation(interpolation)
    if not isinstance(angle, (int, float)):
        raise TypeError("Argument angle should be int or float")
    if center is not None and not isinstance(center, (list, tuple)):
        raise TypeError("Argument center should be a sequence")
    _check_affine_fill(fill)
    k = _kind(img)
    if k != "tensor":
        return _pil_op(img, lambda p: p.rotate(angle, _PIL_MODES[mode], expand, center, fillcolor=_pil_fill(fill, p)))
    _, height, width = get_dimensions(img)
    center_f = [0.0, 0.0] if center is None else [1.0 * (c - s * 0.5) for c, s in zip(center, [width, height])]
    matrix = _inverse_affine_matrix(center_f, -angle, [0.0, 0.0], 1.0, [0.0, 0.0])
    ow, oh = _affine_output_size(matrix, width, height) if expand else (width, height)
    return _tensor_affine(img, matrix, ow, oh, mode, fill)


# ---- perspective ----------------------------------------------------------------------------------------

def _get_perspective_coeffs(startpoints, endpoints) -> List[float]:
    """(a, b, c, d, e, f, g, h) with each output pixel (x, y) read at ((ax + by + c) / (gx + hy + 1),
    (dx + ey + f) / (gx + hy + 1)): the 8 x 8 system of the four corners solved in float64, rounded
    to float32, as torchvision's. Bit-equal to torchvision's but where a coefficient is 0 exactly
    (no distortion): there both are rounding noise (~1e-16; torch solves by QR, NumPy by SVD)."""
    if len(startpoints) != 4 or len(endpoints) != 4:
        raise ValueError(f"Please provide exactly four corners, got {len(startpoints)} startpoints and "
                         f"{len(endpoints)} endpoints.")
    a_matrix = np.zeros((8, 8), dtype=np.float64)
    for i, (p1, p2) in enumerate(zip(endpoints, startpoints)):
        a_matrix[2 * i, :] = [p1[0], p1[1], 1, 0, 0, 0, -p2[0] * p1[0], -p2[0] * p1[1]]
        a_matrix[2 * i + 1, :] = [0, 0, 0, p1[0], p1[1], 1, -p2[1] * p1[0], -p2[1] * p1[1]]
    b_matrix = np.asarray(startpoints, dtype=np.float64).reshape(8)
    res = np.linalg.lstsq(a_matrix, b_matrix, rcond=None)[0]
    return [float(v) for v in res.astype(np.float32)]


def _perspective_grid(coeffs: List[float], ow: int, oh: int, ft: np.dtype):
    """torchvision's _perspective_grid: Pillow's perspective map at the pixel centres, normalised
    to grid_sample's [-1, 1]."""
    f = ft.type
    theta1 = np.asarray([[coeffs[0], coeffs[1], coeffs[2]], [coeffs[3], coeffs[4], coeffs[5]]], dtype=ft)
    xs = np.linspace(0.5, ow * 1.0 + 0.5 - 1.0, ow, dtype=np.float32).astype(ft)
    ys = np.linspace(0.5, oh * 1.0 + 0.5 - 1.0, oh, dtype=np.float32).astype(ft)
    rescaled = theta1.T / np.asarray([0.5 * ow, 0.5 * oh], dtype=ft)  # (3, 2)
    gx1 = xs[None, :] * rescaled[0, 0] + ys[:, None] * rescaled[1, 0] + rescaled[2, 0]
    gy1 = xs[None, :] * rescaled[0, 1] + ys[:, None] * rescaled[1, 1] + rescaled[2, 1]
    den = xs[None, :] * f(coeffs[6]) + ys[:, None] * f(coeffs[7]) + f(1.0)
    return gx1 / den - f(1.0), gy1 / den - f(1.0)


def perspective(img, startpoints, endpoints, interpolation=InterpolationMode.BILINEAR, fill=None,
                coefficients: Optional[Sequence[float]] = None):
    """The image seen in perspective: the four corners startpoints ([top-left, top-right,
    bottom-right, bottom-left], each [x, y]) moved to endpoints, the size kept; fill where nothing
    maps (a number, or one per channel). v2's coefficients gives the 8 coefficients instead."""
    if coefficients is not None:
        if startpoints is not None and endpoints is not None:
            raise ValueError("The startpoints/endpoints and the coefficients shouldn't be defined concurrently.")
        if len(coefficients) != 8:
            raise ValueError("Argument coefficients should have 8 float values")
        coeffs = [float(c) for c in coefficients]
    elif startpoints is not None and endpoints is not None:
        coeffs = _get_perspective_coeffs(startpoints, endpoints)
    else:
        raise ValueError("Either the startpoints/endpoints or the coefficients must have non `None` values.")
    mode = _interpolation(interpolation)
    _check_affine_fill(fill)
    if _kind(img) != "tensor":
        return _pil_op(img, lambda p: p.transform(p.size, Image.PERSPECTIVE, coeffs, _PIL_MODES[mode],
                                                  fillcolor=_pil_fill(fill, p)))
    a, ft = _grid_source(img, mode, fill)
    oh, ow = a.shape[-2:]
    gx, gy = _perspective_grid(coeffs, ow, oh, ft)
    return _apply_grid(img, a, gx, gy, mode, fill, ft)


# ---- elastic ------------------------------------------------------------------------------------------

def elastic_transform(img, displacement, interpolation=InterpolationMode.BILINEAR, fill=None):
    """Each pixel read at its place plus displacement, a (1, H, W, 2) tensor of (dx, dy) in grid_sample's
    normalised units ([-1, 1] across the image), added to torchvision's identity grid (float32).
    PIL images and NumPy arrays go through their pixels as a tensor and come back as they came,
    as torchvision's PIL path does."""
    mode = _interpolation(interpolation)
    if not isinstance(displacement, ember.Tensor):
        raise TypeError("Argument displacement should be a Tensor")
    k = _kind(img)
    if k == "pil":
        from .functional import pil_to_tensor
        t_img = pil_to_tensor(img)
    elif k == "numpy":
        t_img = _to_tensor_like(img[None] if img.ndim == 2 else np.moveaxis(img, 2, 0))
    else:
        t_img = img
    _, height, width = get_dimensions(t_img)
    shape = (1, height, width, 2)
    if tuple(displacement.shape) != shape:
        raise ValueError(f"Argument displacement shape should be {shape}, but given {tuple(displacement.shape)}")
    d = np.asarray(displacement.detach().cpu().numpy())
    # torchvision's identity grid is float32 (the default dtype) whatever the image's: the grid's
    # dtype, float32 + the displacement's, is the one the image is sampled in
    ft = np.result_type(np.float32, d.dtype)
    ix = np.linspace((-width + 1) / width, (width - 1) / width, width, dtype=np.float32)
    iy = np.linspace((-height + 1) / height, (height - 1) / height, height, dtype=np.float32)
    gx = (ix[None, :] + d[0, :, :, 0]).astype(ft)
    gy = (iy[:, None] + d[0, :, :, 1]).astype(ft)
    a, _ = _grid_source(t_img, mode, fill)
    out = _apply_grid(t_img, a, gx, gy, mode, fill, np.dtype(ft))
    if k == "tensor":
        return out
    arr = out.numpy()
    if k == "pil":
        return _pil_from(arr[0] if arr.shape[0] == 1 else np.moveaxis(arr, 0, 2), img)
    return arr[0] if img.ndim == 2 else np.ascontiguousarray(np.moveaxis(arr, 0, 2))


elastic = elastic_transform  # transforms.v2.functional's name
