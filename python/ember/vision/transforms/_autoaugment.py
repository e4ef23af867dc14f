"""torchvision's autoaugment.py on ember (part of ember.vision.transforms): the augmentation policies —
AutoAugment, RandAugment, TrivialAugmentWide and AugMix — over one op table (_apply_op), their
magnitudes torchvision's, their draws from ember's global generator."""

from __future__ import annotations

import enum
import math
from typing import List, Optional

import numpy as np

import ember

from . import functional as F
from .functional import InterpolationMode
from .transforms import _Transform, _rand, _randint

__all__ = ["AutoAugmentPolicy", "AutoAugment", "RandAugment", "TrivialAugmentWide", "AugMix"]


def _apply_op(img, op_name: str, magnitude: float, interpolation, fill):
    """One augmentation op of torchvision's autoaugment._apply_op."""
    if op_name == "ShearX":
        return F.affine(img, 0.0, [0, 0], 1.0, [math.degrees(math.atan(magnitude)), 0.0], interpolation, fill, [0, 0])
    if op_name == "ShearY":
        return F.affine(img, 0.0, [0, 0], 1.0, [0.0, math.degrees(math.atan(magnitude))], interpolation, fill, [0, 0])
    if op_name == "TranslateX":
        return F.affine(img, 0.0, [int(magnitude), 0], 1.0, [0.0, 0.0], interpolation, fill)
    if op_name == "TranslateY":
        return F.affine(img, 0.0, [0, int(magnitude)], 1.0, [0.0, 0.0], interpolation, fill)
    if op_name == "Rotate":
        return F.rotate(img, magnitude, interpolation, fill=fill)
    if op_name == "Brightness":
        return F.adjust_brightness(img, 1.0 + magnitude)
    if op_name == "Color":
        return F.adjust_saturation(img, 1.0 + magnitude)
    if op_name == "Contrast":
        return F.adjust_contrast(img, 1.0 + magnitude)
    if op_name == "Sharpness":
        return F.adjust_sharpness(img, 1.0 + magnitude)
    if op_name == "Posterize":
        return F.posterize(img, int(magnitude))
    if op_name == "Solarize":
        return F.solarize(img, magnitude)
    if op_name == "AutoContrast":
        return F.autocontrast(img)
    if op_name == "Equalize":
        return F.equalize(img)
    if op_name == "Invert":
        return F.invert(img)
    if op_name == "Identity":
        return img
    raise ValueError(f"The provided operator {op_name} is not recognized.")


def _linspace(a: float, b: float, n: int) -> List[float]:
    return [float(v) for v in np.linspace(a, b, n, dtype=np.float32)]


def _policy_space(num_bins: int, image_size):
    """The ops RandAugment and AutoAugment share, in torchvision's order (RandAugment draws an op by
    its position): name -> (magnitudes over num_bins, signed); image_size (height, width)."""
    return {
            "ShearX": (_linspace(0.0, 0.3, num_bins), True),
            "ShearY": (_linspace(0.0, 0.3, num_bins), True),
            "TranslateX": (_linspace(0.0, 150.0 / 331.0 * image_size[1], num_bins), True),
            "TranslateY": (_linspace(0.0, 150.0 / 331.0 * image_size[0], num_bins), True),
            "Rotate": (_linspace(0.0, 30.0, num_bins), True),
            "Brightness": (_linspace(0.0, 0.9, num_bins), True),
            "Color": (_linspace(0.0, 0.9, num_bins), True),
            "Contrast": (_linspace(0.0, 0.9, num_bins), True),
            "Sharpness": (_linspace(0.0, 0.9, num_bins), True),
            "Posterize": (_posterize_bits(num_bins, 4), False),
            "Solarize": (_linspace(255.0, 0.0, num_bins), False),
            "AutoContrast": (None, False),
            "Equalize": (None, False),
    }


def _posterize_bits(num_bins: int, spread: int, top: int = 8) -> List[float]:
    """top - round(i / ((num_bins - 1) / spread)) for each bin i, in float32 as torch divides."""
    return [float(top - int(np.round(np.float32(i) / np.float32((num_bins - 1) / spread)))) for i in range(num_bins)]


def _policy_fill(img, fill):
    if not isinstance(img, ember.Tensor):
        return fill
    channels = F.get_dimensions(img)[0]
    if isinstance(fill, (int, float)):
        return [float(fill)] * channels
    return None if fill is None else [float(f) for f in fill]


class TrivialAugmentWide(_Transform):
    """One op of the wide augmentation space at a uniformly drawn magnitude (TrivialAugment)."""

    def __init__(self, num_magnitude_bins: int = 31, interpolation=InterpolationMode.NEAREST, fill=None) -> None:
        if num_magnitude_bins < 2:
            raise ValueError(f"num_magnitude_bins must be at least 2, got {num_magnitude_bins}")
        self.num_magnitude_bins = num_magnitude_bins
        self.interpolation = F._interpolation(interpolation)
        self.fill = fill

    def _augmentation_space(self, num_bins: int):
        return {
            "Identity": (None, False),
            "ShearX": (_linspace(0.0, 0.99, num_bins), True),
            "ShearY": (_linspace(0.0, 0.99, num_bins), True),
            "TranslateX": (_linspace(0.0, 32.0, num_bins), True),
            "TranslateY": (_linspace(0.0, 32.0, num_bins), True),
            "Rotate": (_linspace(0.0, 135.0, num_bins), True),
            "Brightness": (_linspace(0.0, 0.99, num_bins), True),
            "Color": (_linspace(0.0, 0.99, num_bins), True),
            "Contrast": (_linspace(0.0, 0.99, num_bins), True),
            "Sharpness": (_linspace(0.0, 0.99, num_bins), True),
            "Posterize": (_posterize_bits(num_bins, 6), False),
            "Solarize": (_linspace(255.0, 0.0, num_bins), False),
            "AutoContrast": (None, False),
            "Equalize": (None, False),
        }

    def get_params(self):
        """(op name, magnitude) as forward draws them."""
        op_meta = self._augmentation_space(self.num_magnitude_bins)
        op_name = list(op_meta.keys())[_randint(0, len(op_meta))]
        magnitudes, signed = op_meta[op_name]
        magnitude = magnitudes[_randint(0, len(magnitudes))] if magnitudes is not None else 0.0
        if signed and _randint(0, 2):
            magnitude *= -1.0
        return op_name, magnitude

    def __call__(self, img):
        fill = _policy_fill(img, self.fill)
        op_name, magnitude = self.get_params()
        return _apply_op(img, op_name, magnitude, self.interpolation, fill)

    def __repr__(self) -> str:
        return (f"TrivialAugmentWide(num_magnitude_bins={self.num_magnitude_bins}, "
                f"interpolation={self.interpolation}, fill={self.fill})")


class RandAugment(_Transform):
    """num_ops ops drawn uniformly from RandAugment's space, each at the fixed magnitude bin."""

    def __init__(self, num_ops: int = 2, magnitude: int = 9, num_magnitude_bins: int = 31,
                 interpolation=InterpolationMode.NEAREST, fill=None) -> None:
        if not 0 <= magnitude < num_magnitude_bins:
            raise ValueError(f"magnitude must be in [0, num_magnitude_bins = {num_magnitude_bins}), got {magnitude}")
        self.num_ops, self.magnitude, self.num_magnitude_bins = num_ops, magnitude, num_magnitude_bins
        self.interpolation = F._interpolation(interpolation)
        self.fill = fill

    def _augmentation_space(self, num_bins: int, image_size):
        return {"Identity": (None, False), **_policy_space(num_bins, image_size)}

    def get_params(self, image_size):
        """[(op name, magnitude)] * num_ops as forward draws them; image_size (height, width)."""
        op_meta = self._augmentation_space(self.num_magnitude_bins, image_size)
        ops = []
        for _ in range(self.num_ops):
            op_name = list(op_meta.keys())[_randint(0, len(op_meta))]
            magnitudes, signed = op_meta[op_name]
            magnitude = magnitudes[self.magnitude] if magnitudes is not None else 0.0
            if signed and _randint(0, 2):
                magnitude *= -1.0
            ops.append((op_name, magnitude))
        return ops

    def __call__(self, img):
        fill = _policy_fill(img, self.fill)
        _, height, width = F.get_dimensions(img)
        for op_name, magnitude in self.get_params((height, width)):
            img = _apply_op(img, op_name, magnitude, self.interpolation, fill)
        return img

    def __repr__(self) -> str:
        return (f"RandAugment(num_ops={self.num_ops}, magnitude={self.magnitude}, "
                f"num_magnitude_bins={self.num_magnitude_bins}, interpolation={self.interpolation}, fill={self.fill})")


class AutoAugmentPolicy(enum.Enum):
    """The AutoAugment policies learned on ImageNet, CIFAR10 and SVHN."""
    IMAGENET = "imagenet"
    CIFAR10 = "cifar10"
    SVHN = "svhn"


# (op, probability, magnitude bin) pairs, torchvision's tables (from the AutoAugment paper)
_POLICIES = {
    AutoAugmentPolicy.IMAGENET: [
        (("Posterize", 0.4, 8), ("Rotate", 0.6, 9)), (("Solarize", 0.6, 5), ("AutoContrast", 0.6, None)),
        (("Equalize", 0.8, None), ("Equalize", 0.6, None)), (("Posterize", 0.6, 7), ("Posterize", 0.6, 6)),
        (("Equalize", 0.4, None), ("Solarize", 0.2, 4)), (("Equalize", 0.4, None), ("Rotate", 0.8, 8)),
        (("Solarize", 0.6, 3), ("Equalize", 0.6, None)), (("Posterize", 0.8, 5), ("Equalize", 1.0, None)),
        (("Rotate", 0.2, 3), ("Solarize", 0.6, 8)), (("Equalize", 0.6, None), ("Posterize", 0.4, 6)),
        (("Rotate", 0.8, 8), ("Color", 0.4, 0)), (("Rotate", 0.4, 9), ("Equalize", 0.6, None)),
        (("Equalize", 0.0, None), ("Equalize", 0.8, None)), (("Invert", 0.6, None), ("Equalize", 1.0, None)),
        (("Color", 0.6, 4), ("Contrast", 1.0, 8)), (("Rotate", 0.8, 8), ("Color", 1.0, 2)),
        (("Color", 0.8, 8), ("Solarize", 0.8, 7)), (("Sharpness", 0.4, 7), ("Invert", 0.6, None)),
        (("ShearX", 0.6, 5), ("Equalize", 1.0, None)), (("Color", 0.4, 0), ("Equalize", 0.6, None)),
        (("Equalize", 0.4, None), ("Solarize", 0.2, 4)), (("Solarize", 0.6, 5), ("AutoContrast", 0.6, None)),
        (("Invert", 0.6, None), ("Equalize", 1.0, None)), (("Color", 0.6, 4), ("Contrast", 1.0, 8)),
        (("Equalize", 0.8, None), ("Equalize", 0.6, None)),
    ],
    AutoAugmentPolicy.CIFAR10: [
        (("Invert", 0.1, None), ("Contrast", 0.2, 6)), (("Rotate", 0.7, 2), ("TranslateX", 0.3, 9)),
        (("Sharpness", 0.8, 1), ("Sharpness", 0.9, 3)), (("ShearY", 0.5, 8), ("TranslateY", 0.7, 9)),
        (("AutoContrast", 0.5, None), ("Equalize", 0.9, None)), (("ShearY", 0.2, 7), ("Posterize", 0.3, 7)),
        (("Color", 0.4, 3), ("Brightness", 0.6, 7)), (("Sharpness", 0.3, 9), ("Brightness", 0.7, 9)),
        (("Equalize", 0.6, None), ("Equalize", 0.5, None)), (("Contrast", 0.6, 7), ("Sharpness", 0.6, 5)),
        (("Color", 0.7, 7), ("TranslateX", 0.5, 8)), (("Equalize", 0.3, None), ("AutoContrast", 0.4, None)),
        (("TranslateY", 0.4, 3), ("Sharpness", 0.2, 6)), (("Brightness", 0.9, 6), ("Color", 0.2, 8)),
        (("Solarize", 0.5, 2), ("Invert", 0.0, None)), (("Equalize", 0.2, None), ("AutoContrast", 0.6, None)),
        (("Equalize", 0.2, None), ("Equalize", 0.6, None)), (("Color", 0.9, 9), ("Equalize", 0.6, None)),
        (("AutoContrast", 0.8, None), ("Solarize", 0.2, 8)), (("Brightness", 0.1, 3), ("Color", 0.7, 0)),
        (("Solarize", 0.4, 5), ("AutoContrast", 0.9, None)), (("TranslateY", 0.9, 9), ("TranslateY", 0.7, 9)),
        (("AutoContrast", 0.9, None), ("Solarize", 0.8, 3)), (("Equalize", 0.8, None), ("Invert", 0.1, None)),
        (("TranslateY", 0.7, 9), ("AutoContrast", 0.9, None)),
    ],
    AutoAugmentPolicy.SVHN: [
        (("ShearX", 0.9, 4), ("Invert", 0.2, None)), (("ShearY", 0.9, 8), ("Invert", 0.7, None)),
        (("Equalize", 0.6, None), ("Solarize", 0.6, 6)), (("Invert", 0.9, None), ("Equalize", 0.6, None)),
        (("Equalize", 0.6, None), ("Rotate", 0.9, 3)), (("ShearX", 0.9, 4), ("AutoContrast", 0.8, None)),
        (("ShearY", 0.9, 8), ("Invert", 0.4, None)), (("ShearY", 0.9, 5), ("Solarize", 0.2, 6)),
        (("Invert", 0.9, None), ("AutoContrast", 0.8, None)), (("Equalize", 0.6, None), ("Rotate", 0.9, 3)),
        (("ShearX", 0.9, 4), ("Solarize", 0.3, 3)), (("ShearY", 0.8, 8), ("Invert", 0.7, None)),
        (("Equalize", 0.9, None), ("TranslateY", 0.6, 6)), (("Invert", 0.9, None), ("Equalize", 0.6, None)),
        (("Contrast", 0.3, 3), ("Rotate", 0.8, 4)), (("Invert", 0.8, None), ("TranslateY", 0.0, 2)),
        (("ShearY", 0.7, 6), ("Solarize", 0.4, 8)), (("Invert", 0.6, None), ("Rotate", 0.8, 4)),
        (("ShearY", 0.3, 7), ("TranslateX", 0.9, 3)), (("ShearX", 0.1, 6), ("Invert", 0.6, None)),
        (("Solarize", 0.7, 2), ("TranslateY", 0.6, 7)), (("ShearY", 0.8, 4), ("Invert", 0.8, None)),
        (("ShearX", 0.7, 9), ("TranslateY", 0.8, 3)), (("ShearY", 0.8, 5), ("AutoContrast", 0.7, None)),
        (("ShearX", 0.7, 2), ("Invert", 0.1, None)),
    ],
}


class AutoAugment(_Transform):
    """One of the policy's 25 sub-policies, drawn uniformly; each of its two ops applied with its
    probability at its magnitude bin (of 10), signed ops negated half the time."""

    def __init__(self, policy: AutoAugmentPolicy = AutoAugmentPolicy.IMAGENET,
                 interpolation=InterpolationMode.NEAREST, fill: Optional[List[float]] = None) -> None:
        self.policy = policy
        self.interpolation = F._interpolation(interpolation)
        self.fill = fill
        self.policies = self._get_policies(policy)

    def _get_policies(self, policy: AutoAugmentPolicy):
        if not isinstance(policy, AutoAugmentPolicy) or policy not in _POLICIES:
            raise ValueError(f"The provided policy {policy} is not recognized. Give an AutoAugmentPolicy: "
                             "IMAGENET, CIFAR10 or SVHN.")
        return list(_POLICIES[policy])

    def _augmentation_space(self, num_bins: int, image_size):
        return {**_policy_space(num_bins, image_size), "Invert": (None, False)}

    @staticmethod
    def get_params(transform_num: int):
        """(sub-policy index, the two ops' probability draws (2,), their sign draws (2,)), drawn in
        torchvision's order."""
        policy_id = _randint(0, transform_num)
        probs = ember.rand(2)
        signs = ember.randint(0, 2, (2,))
        return policy_id, probs, signs

    def __call__(self, img):
        fill = _policy_fill(img, self.fill)
        _, height, width = F.get_dimensions(img)
        transform_id, probs, signs = self.get_params(len(self.policies))
        probs, signs = probs.tolist(), signs.tolist()
        op_meta = self._augmentation_space(10, (height, width))
        for i, (op_name, p, magnitude_id) in enumerate(self.policies[transform_id]):
            if probs[i] <= p:
                magnitudes, signed = op_meta[op_name]
                magnitude = float(magnitudes[magnitude_id]) if magnitude_id is not None else 0.0
                if signed and signs[i] == 0:
                    magnitude *= -1.0
                img = _apply_op(img, op_name, magnitude, self.interpolation, fill)
        return img

    def __repr__(self) -> str:
        return f"AutoAugment(policy={self.policy}, fill={self.fill})"


# ---- AugMix ---------------------------------------------------------------------------------------------------

def _sample_gamma(alpha: float) -> float:
    """A Gamma(alpha, 1) draw from ember's generator: Marsaglia and Tsang's squeeze (alpha >= 1), and
    Gamma(alpha + 1) * U^(1 / alpha) below 1. torch draws its Dirichlet in C++ with its own
    generator; the distribution is the same, the numbers and the count of draws are not."""
    if alpha < 1.0:
        return _sample_gamma(alpha + 1.0) * _rand() ** (1.0 / alpha)
    d = alpha - 1.0 / 3.0
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        x = float(ember.randn(1).item())
        v = (1.0 + c * x) ** 3
        if v <= 0.0:
            continue
        u = _rand()
        if u > 0.0 and math.log(u) < 0.5 * x * x + d - d * v + d * math.log(v):
            return d * v


def _sample_dirichlet(alphas: List[float], rows: int) -> np.ndarray:
    """(rows, len(alphas)) float32 Dirichlet draws: normalised Gamma draws."""
    g = np.asarray([[_sample_gamma(a) for a in alphas] for _ in range(rows)], dtype=np.float64)
    return (g / g.sum(axis=1, keepdims=True)).astype(np.float32)


class AugMix(_Transform):
    """AugMix: mixture_width chains of chain_depth ops (1 to 3 when negative) at up to severity,
    mixed with Dirichlet(alpha) weights, then blended with the original by a Beta(alpha, alpha)
    weight. PIL images and arrays are mixed as uint8 tensors (torchvision's path) and come back
    as they came."""

    _PARAMETER_MAX = 10

    def __init__(self, severity: int = 3, mixture_width: int = 3, chain_depth: int = -1, alpha: float = 1.0,
                 all_ops: bool = True, interpolation=InterpolationMode.BILINEAR,
                 fill: Optional[List[float]] = None) -> None:
        if not (1 <= severity <= self._PARAMETER_MAX):
            raise ValueError(f"The severity must be between [1, {self._PARAMETER_MAX}]. Got {severity} instead.")
        if int(mixture_width) != mixture_width or mixture_width < 1:
            raise ValueError(f"AugMix: mixture_width must be a positive integer (the number of chains), got "
                             f"{mixture_width!r}")
        if not alpha > 0:
            raise ValueError(f"AugMix: alpha must be positive (the Dirichlet's concentration), got {alpha!r}")
        self.severity = severity
        self.mixture_width = int(mixture_width)
        self.chain_depth = chain_depth
        self.alpha = alpha
        self.all_ops = all_ops
        self.interpolation = F._interpolation(interpolation)
        self.fill = fill

    def _augmentation_space(self, num_bins: int, image_size):
        s = {
            "ShearX": (_linspace(0.0, 0.3, num_bins), True),
            "ShearY": (_linspace(0.0, 0.3, num_bins), True),
            "TranslateX": (_linspace(0.0, image_size[1] / 3.0, num_bins), True),
            "TranslateY": (_linspace(0.0, image_size[0] / 3.0, num_bins), True),
            "Rotate": (_linspace(0.0, 30.0, num_bins), True),
            "Posterize": (_posterize_bits(num_bins, 4, top=4), False),
            "Solarize": (_linspace(255.0, 0.0, num_bins), False),
            "AutoContrast": (None, False),
            "Equalize": (None, False),
        }
        if self.all_ops:
            s.update({
                "Brightness": (_linspace(0.0, 0.9, num_bins), True),
                "Color": (_linspace(0.0, 0.9, num_bins), True),
                "Contrast": (_linspace(0.0, 0.9, num_bins), True),
                "Sharpness": (_linspace(0.0, 0.9, num_bins), True),
            })
        return s

    def _draw(self, batch_size: int, image_size):
        """(m (B, 2): the original's and the mixture's weights, combined (B, mixture_width): each
        chain's weight, chains: [(op name, magnitude)] per chain), in torchvision's order: the Beta
        pair, the chain weights, then each chain's depth and its ops' (op, bin, sign)."""
        op_meta = self._augmentation_space(self._PARAMETER_MAX, image_size)
        names = list(op_meta.keys())
        m = _sample_dirichlet([float(self.alpha)] * 2, batch_size)
        combined = _sample_dirichlet([float(self.alpha)] * self.mixture_width, batch_size) * m[:, 1:2]
        chains = []
        for _ in range(self.mixture_width):
            depth = self.chain_depth if self.chain_depth > 0 else _randint(1, 4)
            ops = []
            for _ in range(depth):
                op_name = names[_randint(0, len(names))]
                magnitudes, signed = op_meta[op_name]
                magnitude = float(magnitudes[_randint(0, self.severity)]) if magnitudes is not None else 0.0
                if signed and _randint(0, 2):
                    magnitude *= -1.0
                ops.append((op_name, magnitude))
            chains.append(ops)
        return m, combined, chains

    def __call__(self, orig_img):
        kind = F._kind(orig_img)
        fill = _policy_fill(orig_img, self.fill)
        _, height, width = F.get_dimensions(orig_img)
        img = orig_img if kind == "tensor" else F.to_image(orig_img)
        dims = tuple(img.shape)
        batch = img.reshape(*([1] * max(4 - len(dims), 0) + list(dims)))
        b = batch.shape[0]
        m, combined, chains = self._draw(b, (height, width))
        bshape = (b,) + (1,) * (batch.ndim - 1)
        x = F._tensor_array(batch)
        ft = np.result_type(np.float32, x.dtype)
        mix = m[:, 0].reshape(bshape).astype(ft) * x
        for i, ops in enumerate(chains):
            aug = batch
            for op_name, magnitude in ops:
                aug = _apply_op(aug, op_name, magnitude, self.interpolation, fill)
            mix += combined[:, i].reshape(bshape).astype(ft) * F._tensor_array(aug)
        out = mix.reshape(dims).astype(x.dtype)  # torch's .to(dtype): float to integer truncates
        if kind == "tensor":
            return F._to_tensor_like(out, orig_img)
        if kind == "pil":
            return F.to_pil_image(ember.from_numpy(np.ascontiguousarray(out)))
        return out[0] if orig_img.ndim == 2 else np.ascontiguousarray(np.moveaxis(out, 0, 2))

    def __repr__(self) -> str:
        return (f"AugMix(severity={self.severity}, mixture_width={self.mixture_width}, "
                f"chain_depth={self.chain_depth}, alpha={self.alpha}, all_ops={self.all_ops}, "
                f"interpolation={self.interpolation}, fill={self.fill})")
