"""torchvision.transforms' classes on ember: each keeps torchvision's constructor and attributes and
calls the deterministic op in functional.py; random ones draw their parameters from ember's global
generator (ember.manual_seed makes them reproducible) through get_params, as torchvision's do."""

from __future__ import annotations

import math
import numbers
from typing import Callable, List, Optional, Sequence, Tuple

import ember

from . import functional as F
from .functional import InterpolationMode

__all__ = [
    "Compose", "ToTensor", "PILToTensor", "ToImage", "ToDtype", "ConvertImageDtype", "ToPILImage", "Normalize",
    "Lambda", "Resize", "CenterCrop", "Pad", "RandomCrop", "RandomResizedCrop", "RandomHorizontalFlip",
    "RandomVerticalFlip", "Grayscale", "RandomErasing", "RandomApply", "RandomChoice", "RandomOrder", "GaussianBlur",
    "ColorJitter", "RandomRotation", "RandomAffine", "RandomInvert", "RandomPosterize", "RandomSolarize",
    "RandomAdjustSharpness", "RandomAutocontrast", "RandomEqualize", "TrivialAugmentWide", "RandAugment",
    "RandomPerspective", "ElasticTransform", "AutoAugmentPolicy", "AutoAugment", "AugMix",
]


# ---- draws from ember's global generator ------------------------------------------------------------

def _rand() -> float:
    return float(ember.rand(1).item())


def _uniform(lo: float, hi: float) -> float:
    return lo + _rand() * (hi - lo)


def _randint(lo: int, hi: int) -> int:
    """An int in [lo, hi)."""
    return int(ember.randint(lo, hi, (1,)).item())


def _setup_size(size, error_msg: str) -> Tuple[int, int]:
    if isinstance(size, numbers.Integral) and not isinstance(size, bool):
        size = (int(size), int(size))
    elif isinstance(size, Sequence) and len(size) == 1:
        size = (int(size[0]), int(size[0]))
    elif isinstance(size, Sequence) and len(size) == 2:
        size = (int(size[0]), int(size[1]))
    else:
        raise ValueError(error_msg)
    if size[0] <= 0 or size[1] <= 0:
        raise ValueError(f"the size must be positive, got {size}")
    return size


def _check_p(p) -> float:
    if not isinstance(p, numbers.Real) or not 0.0 <= float(p) <= 1.0:
        raise ValueError(f"probability p should be a number in [0, 1], got {p!r}")
    return float(p)


class _Transform:
    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    # torchvision's transforms are nn.Modules; a Compose or a user's code calls forward too
    def forward(self, img):
        return self(img)


class Compose(_Transform):
    """The transforms applied in turn."""

    def __init__(self, transforms: Sequence[Callable]) -> None:
        if not isinstance(transforms, (list, tuple)):
            raise TypeError(f"Argument transforms should be a sequence of callables, got {type(transforms).__name__}")
        for t in transforms:
            if not callable(t):
                raise TypeError(f"Compose: {t!r} is not callable")
        self.transforms = list(transforms)

    def __call__(self, img):
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self) -> str:
        body = "".join(f"\n    {t}" for t in self.transforms)
        return f"{type(self).__name__}({body}\n)"


class ToTensor(_Transform):
    """A PIL image or NumPy (H, W[, C]) uint8 array to a float32 (C, H, W) tensor in [0, 1]."""

    def __call__(self, pic):
        return F.to_tensor(pic)


class PILToTensor(_Transform):
    """A PIL image to a (C, H, W) tensor of its own dtype (uint8), values unchanged."""

    def __call__(self, pic):
        return F.pil_to_tensor(pic)


class ToImage(_Transform):
    """v2.ToImage: a PIL image or NumPy array to a (C, H, W) tensor of the same dtype."""

    def __call__(self, inpt):
        return F.to_image(inpt)


class ToDtype(_Transform):
    """v2.ToDtype(dtype, scale): a cast; with scale=True integer images map to [0, 1] floats and
    back, as ConvertImageDtype."""

    def __init__(self, dtype, scale: bool = False) -> None:
        if isinstance(dtype, dict):
            raise TypeError("ToDtype: a dict of dtypes per type is not supported here; give one dtype")
        F._np_dtype(dtype)  # a clear error now, not at the first image
        self.dtype = dtype
        self.scale = bool(scale)

    def __call__(self, inpt):
        if not isinstance(inpt, ember.Tensor):
            return inpt  # v2 passes PIL images and other types through
        return F.to_dtype(inpt, self.dtype, self.scale)

    def __repr__(self) -> str:
        return f"ToDtype(dtype={self.dtype}, scale={self.scale})"


class ConvertImageDtype(_Transform):
    def __init__(self, dtype) -> None:
        F._np_dtype(dtype)
        self.dtype = dtype

    def __call__(self, image):
        return F.convert_image_dtype(image, self.dtype)


class ToPILImage(_Transform):
    def __init__(self, mode: Optional[str] = None) -> None:
        self.mode = mode

    def __call__(self, pic):
        return F.to_pil_image(pic, self.mode)


class Normalize(_Transform):
    """(x - mean[c]) / std[c] per channel of a float tensor."""

    def __init__(self, mean: Sequence[float], std: Sequence[float], inplace: bool = False) -> None:
        self.mean = list(mean) if isinstance(mean, (list, tuple)) else [float(mean)]
        self.std = list(std) if isinstance(std, (list, tuple)) else [float(std)]
        if any(float(s) == 0 for s in self.std):
            raise ValueError(f"Normalize: std must not be zero, got {self.std}")
        self.inplace = inplace

    def __call__(self, tensor):
        return F.normalize(tensor, self.mean, self.std, self.inplace)

    def __repr__(self) -> str:
        return f"Normalize(mean={self.mean}, std={self.std})"


class Lambda(_Transform):
    """A user's function as a transform (runs in Python)."""

    def __init__(self, lambd: Callable) -> None:
        if not callable(lambd):
            raise TypeError(f"Argument lambd should be callable, got {repr(type(lambd).__name__)}")
        self.lambd = lambd

    def __call__(self, img):
        return self.lambd(img)


class Resize(_Transform):
    def __init__(self, size, interpolation=InterpolationMode.BILINEAR, max_size: Optional[int] = None,
                 antialias: Optional[bool] = True) -> None:
        self.size = F._check_size(size)
        if isinstance(size, numbers.Integral):
            self.size = size
        self.max_size = max_size
        self.interpolation = F._interpolation(interpolation)
        self.antialias = antialias

    def __call__(self, img):
        return F.resize(img, self.size, self.interpolation, self.max_size, self.antialias)

    def __repr__(self) -> str:
        return (f"Resize(size={self.size}, interpolation={self.interpolation.value}, max_size={self.max_size}, "
                f"antialias={self.antialias})")


class CenterCrop(_Transform):
    def __init__(self, size) -> None:
        self.size = _setup_size(size, "Please provide only two dimensions (h, w) for size.")

    def __call__(self, img):
        return F.center_crop(img, self.size)

    def __repr__(self) -> str:
        return f"CenterCrop(size={self.size})"


class Pad(_Transform):
    def __init__(self, padding, fill=0, padding_mode: str = "constant") -> None:
        F._parse_padding(padding)
        if not isinstance(fill, (numbers.Number, tuple, list)):
            raise TypeError("Got inappropriate fill arg")
        if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
            raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
        self.padding, self.fill, self.padding_mode = padding, fill, padding_mode

    def __call__(self, img):
        return F.pad(img, self.padding, self.fill, self.padding_mode)

    def __repr__(self) -> str:
        return f"Pad(padding={self.padding}, fill={self.fill}, padding_mode={self.padding_mode})"


class RandomCrop(_Transform):
    """A random (h, w) window, of the image padded by `padding` (and by what it lacks when
    pad_if_needed)."""

    @staticmethod
    def get_params(img, output_size: Tuple[int, int]) -> Tuple[int, int, int, int]:
        _, h, w = F.get_dimensions(img)
        th, tw = output_size
        if h < th or w < tw:
            raise ValueError(f"Required crop size {(th, tw)} is larger than input image size {(h, w)}")
        if w == tw and h == th:
            return 0, 0, h, w
        i = _randint(0, h - th + 1)
        j = _randint(0, w - tw + 1)
        return i, j, th, tw

    def __init__(self, size, padding=None, pad_if_needed: bool = False, fill=0, padding_mode: str = "constant"):
        self.size = _setup_size(size, "Please provide only two dimensions (h, w) for size.")
        if padding is not None:
            F._parse_padding(padding)
        if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
            raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
        self.padding, self.pad_if_needed, self.fill, self.padding_mode = padding, pad_if_needed, fill, padding_mode

    def __call__(self, img):
        if self.padding is not None:
            img = F.pad(img, self.padding, self.fill, self.padding_mode)
        _, height, width = F.get_dimensions(img)
        if self.pad_if_needed and width < self.size[1]:
            img = F.pad(img, [self.size[1] - width, 0], self.fill, self.padding_mode)
        _, height, width = F.get_dimensions(img)
        if self.pad_if_needed and height < self.size[0]:
            img = F.pad(img, [0, self.size[0] - height], self.fill, self.padding_mode)
        i, j, h, w = self.get_params(img, self.size)
        return F.crop(img, i, j, h, w)

    def __repr__(self) -> str:
        return f"RandomCrop(size={self.size}, padding={self.padding})"


class RandomResizedCrop(_Transform):
    """A box of a random area fraction (scale) and aspect ratio (ratio) resized to size."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0),
                 interpolation=InterpolationMode.BILINEAR, antialias: Optional[bool] = True) -> None:
        self.size = _setup_size(size, "Please provide only two dimensions (h, w) for size.")
        if not isinstance(scale, Sequence) or not isinstance(ratio, Sequence):
            raise TypeError("Scale and ratio should be sequences")
        if scale[0] > scale[1] or ratio[0] > ratio[1]:
            raise ValueError(f"Scale and ratio should be of kind (min, max), got scale={scale}, ratio={ratio}")
        self.scale, self.ratio = tuple(scale), tuple(ratio)
        self.interpolation = F._interpolation(interpolation)
        self.antialias = antialias

    @staticmethod
    def get_params(img, scale: Sequence[float], ratio: Sequence[float]) -> Tuple[int, int, int, int]:
        _, height, width = F.get_dimensions(img)
        area = height * width
        log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
        for _ in range(10):
            target_area = area * _uniform(scale[0], scale[1])
            aspect_ratio = math.exp(_uniform(log_ratio[0], log_ratio[1]))
            w = int(round(math.sqrt(target_area * aspect_ratio)))
            h = int(round(math.sqrt(target_area / aspect_ratio)))
            if 0 < w <= width and 0 < h <= height:
                i = _randint(0, height - h + 1)
                j = _randint(0, width - w + 1)
                return i, j, h, w
        in_ratio = float(width) / float(height)
        if in_ratio < min(ratio):
            w = width
            h = int(round(w / min(ratio)))
        elif in_ratio > max(ratio):
            h = height
            w = int(round(h * max(ratio)))
        else:
            w, h = width, height
        i = (height - h) // 2
        j = (width - w) // 2
        return i, j, h, w

    def __call__(self, img):
        i, j, h, w = self.get_params(img, self.scale, self.ratio)
        return F.resized_crop(img, i, j, h, w, list(self.size), self.interpolation, antialias=self.antialias)

    def __repr__(self) -> str:
        return f"RandomResizedCrop(size={self.size}, scale={self.scale}, ratio={self.ratio})"


class RandomHorizontalFlip(_Transform):
    def __init__(self, p: float = 0.5) -> None:
        self.p = _check_p(p)

    def __call__(self, img):
        return F.hflip(img) if _rand() < self.p else img

    def __repr__(self) -> str:
        return f"RandomHorizontalFlip(p={self.p})"


class RandomVerticalFlip(_Transform):
    def __init__(self, p: float = 0.5) -> None:
        self.p = _check_p(p)

    def __call__(self, img):
        return F.vflip(img) if _rand() < self.p else img

    def __repr__(self) -> str:
        return f"RandomVerticalFlip(p={self.p})"


class Grayscale(_Transform):
    def __init__(self, num_output_channels: int = 1) -> None:
        if num_output_channels not in (1, 3):
            raise ValueError("num_output_channels should be either 1 or 3")
        self.num_output_channels = num_output_channels

    def __call__(self, img):
        return F.rgb_to_grayscale(img, self.num_output_channels)

    def __repr__(self) -> str:
        return f"Grayscale(num_output_channels={self.num_output_channels})"


class RandomErasing(_Transform):
    """With probability p, a random rectangle of a (..., C, H, W) tensor set to value (a number, one
    per channel, or "random": standard normal noise)."""

    def __init__(self, p: float = 0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0, inplace: bool = False):
        if not isinstance(value, (numbers.Number, str, tuple, list)):
            raise TypeError("Argument value should be either a number or str or a sequence")
        if isinstance(value, str) and value != "random":
            raise ValueError("If value is str, it should be 'random'")
        if not isinstance(scale, Sequence) or not isinstance(ratio, Sequence):
            raise TypeError("Scale and ratio should be sequences")
        if scale[0] > scale[1] or ratio[0] > ratio[1]:
            raise ValueError("Scale and ratio should be of kind (min, max)")
        if scale[0] < 0 or scale[1] > 1:
            raise ValueError("Scale should be between 0 and 1")
        self.p = _check_p(p)
        self.scale, self.ratio, self.value, self.inplace = tuple(scale), tuple(ratio), value, inplace

    @staticmethod
    def get_params(img, scale, ratio, value: Optional[List[float]] = None):
        img_c, img_h, img_w = img.shape[-3], img.shape[-2], img.shape[-1]
        area = img_h * img_w
        log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
        for _ in range(10):
            erase_area = area * _uniform(scale[0], scale[1])
            aspect_ratio = math.exp(_uniform(log_ratio[0], log_ratio[1]))
            h = int(round(math.sqrt(erase_area * aspect_ratio)))
            w = int(round(math.sqrt(erase_area / aspect_ratio)))
            if not (h < img_h and w < img_w):
                continue
            if value is None:
                v = ember.randn(img_c, h, w, dtype=img.dtype)
            else:
                v = ember.tensor(value, dtype=img.dtype).reshape(-1, 1, 1)
            i = _randint(0, img_h - h + 1)
            j = _randint(0, img_w - w + 1)
            return i, j, h, w, v
        return 0, 0, img_h, img_w, img

    def __call__(self, img):
        if not isinstance(img, ember.Tensor):
            raise TypeError(f"RandomErasing: img should be a tensor (..., C, H, W), got {type(img).__name__}")
        if _rand() < self.p:
            if isinstance(self.value, numbers.Number):
                value = [float(self.value)]
            elif isinstance(self.value, str):
                value = None
            else:
                value = [float(v) for v in self.value]
            if value is not None and len(value) not in (1, img.shape[-3]):
                raise ValueError("If value is a sequence, it should have either a single value or "
                                 f"{img.shape[-3]} (number of input channels)")
            x, y, h, w, v = self.get_params(img, self.scale, self.ratio, value)
            return F.erase(img, x, y, h, w, v, self.inplace)
        return img

    def __repr__(self) -> str:
        return f"RandomErasing(p={self.p}, scale={self.scale}, ratio={self.ratio}, value={self.value})"


# ---- choosing among transforms --------------------------------------------------------------------------

class RandomApply(_Transform):
    """The transforms, in turn, with probability p; else the image unchanged."""

    def __init__(self, transforms: Sequence[Callable], p: float = 0.5) -> None:
        self.transforms = Compose(transforms).transforms
        self.p = _check_p(p)

    def __call__(self, img):
        if self.p < _rand():
            return img
        for t in self.transforms:
            img = t(img)
        return img


class RandomChoice(_Transform):
    """One of the transforms, picked with weights p (equal when None). ember's generator draws the
    pick (torchvision's uses Python's random module), so ember.manual_seed makes it reproducible."""

    def __init__(self, transforms: Sequence[Callable], p: Optional[Sequence[float]] = None) -> None:
        if p is not None and not isinstance(p, Sequence):
            raise TypeError("Argument p should be a sequence")
        self.transforms = Compose(transforms).transforms
        if not self.transforms:
            raise ValueError("RandomChoice needs at least one transform")
        if p is not None and (len(p) != len(self.transforms) or any(w < 0 for w in p) or sum(p) <= 0):
            raise ValueError(f"RandomChoice: p needs one non-negative weight per transform ({len(self.transforms)}), "
                             f"not all zero; got {list(p)}")
        self.p = p

    def __call__(self, *args):
        weights = self.p if self.p is not None else [1.0] * len(self.transforms)
        u = _rand() * float(sum(weights))
        pick, acc = len(self.transforms) - 1, 0.0
        for k, w in enumerate(weights):
            acc += float(w)
            if u < acc:
                pick = k
                break
        return self.transforms[pick](*args)


class RandomOrder(_Transform):
    """The transforms in a random order (a permutation from ember's generator)."""

    def __init__(self, transforms: Sequence[Callable]) -> None:
        self.transforms = Compose(transforms).transforms

    def __call__(self, img):
        for k in ember.randperm(len(self.transforms)).tolist():
            img = self.transforms[k](img)
        return img


# ---- blur ---------------------------------------------------------------------------------------------

class GaussianBlur(_Transform):
    """A Gaussian blur of kernel_size with a sigma drawn uniformly from sigma (a range, or one value)."""

    def __init__(self, kernel_size, sigma=(0.1, 2.0)) -> None:
        self.kernel_size = _setup_size(kernel_size, "Kernel size should be a tuple/list of two integers")
        for ks in self.kernel_size:
            if ks <= 0 or ks % 2 == 0:
                raise ValueError("Kernel size value should be an odd and positive number.")
        if isinstance(sigma, numbers.Number):
            if sigma <= 0:
                raise ValueError("If sigma is a single number, it must be positive.")
            sigma = (float(sigma), float(sigma))
        elif isinstance(sigma, Sequence) and len(sigma) == 2:
            if not 0.0 < sigma[0] <= sigma[1]:
                raise ValueError("sigma values should be positive and of the form (min, max).")
        else:
            raise ValueError("sigma should be a single number or a list/tuple with length 2.")
        self.sigma = (float(sigma[0]), float(sigma[1]))

    @staticmethod
    def get_params(sigma_min: float, sigma_max: float) -> float:
        return _uniform(float(sigma_min), float(sigma_max))

    def __call__(self, img):
        sigma = self.get_params(self.sigma[0], self.sigma[1])
        return F.gaussian_blur(img, list(self.kernel_size), [sigma, sigma])

    def __repr__(self) -> str:
        return f"GaussianBlur(kernel_size={self.kernel_size}, sigma={self.sigma})"


# ---- colour ---------------------------------------------------------------------------------------------

class ColorJitter(_Transform):
    """Brightness, contrast, saturation and hue factors drawn uniformly from their ranges, applied
    in a random order (get_params gives the order and the factors)."""

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0) -> None:
        self.brightness = self._check_input(brightness, "brightness")
        self.contrast = self._check_input(contrast, "contrast")
        self.saturation = self._check_input(saturation, "saturation")
        self.hue = self._check_input(hue, "hue", center=0, bound=(-0.5, 0.5), clip_first_on_zero=False)

    @staticmethod
    def _check_input(value, name, center=1.0, bound=(0, float("inf")), clip_first_on_zero=True):
        if isinstance(value, numbers.Number):
            if value < 0:
                raise ValueError(f"If {name} is a single number, it must be non negative.")
            value = [center - float(value), center + float(value)]
            if clip_first_on_zero:
                value[0] = max(value[0], 0.0)
        elif isinstance(value, (tuple, list)) and len(value) == 2:
            value = [float(value[0]), float(value[1])]
        else:
            raise TypeError(f"{name} should be a single number or a list/tuple with length 2.")
        if not bound[0] <= value[0] <= value[1] <= bound[1]:
            raise ValueError(f"{name} values should be between {bound}, but got {value}.")
        if value[0] == value[1] == center:
            return None
        return tuple(value)

    @staticmethod
    def get_params(brightness, contrast, saturation, hue):
        fn_idx = ember.randperm(4).tolist()
        b = None if brightness is None else _uniform(brightness[0], brightness[1])
        c = None if contrast is None else _uniform(contrast[0], contrast[1])
        s = None if saturation is None else _uniform(saturation[0], saturation[1])
        h = None if hue is None else _uniform(hue[0], hue[1])
        return fn_idx, b, c, s, h

    def __call__(self, img):
        fn_idx, b, c, s, h = self.get_params(self.brightness, self.contrast, self.saturation, self.hue)
        for fn_id in fn_idx:
            if fn_id == 0 and b is not None:
                img = F.adjust_brightness(img, b)
            elif fn_id == 1 and c is not None:
                img = F.adjust_contrast(img, c)
            elif fn_id == 2 and s is not None:
                img = F.adjust_saturation(img, s)
            elif fn_id == 3 and h is not None:
                img = F.adjust_hue(img, h)
        return img

    def __repr__(self) -> str:
        return (f"ColorJitter(brightness={self.brightness}, contrast={self.contrast}, "
                f"saturation={self.saturation}, hue={self.hue})")


# ---- geometry: rotation and affine -------------------------------------------------------------------------

def _setup_angle(x, name: str, req_sizes=(2,)):
    if isinstance(x, numbers.Number):
        if x < 0:
            raise ValueError(f"If {name} is a single number, it must be positive.")
        return [-float(x), float(x)]
    if not isinstance(x, Sequence) or len(x) not in req_sizes:
        raise ValueError(f"{name} should be a sequence of length {' or '.join(str(r) for r in req_sizes)}.")
    return [float(d) for d in x]


def _tensor_fill(img, fill):
    """torchvision's fill for tensors: one float per channel (so the mask blend always runs)."""
    if not isinstance(img, ember.Tensor):
        return fill
    channels = F.get_dimensions(img)[0]
    if fill is None:
        return None
    if isinstance(fill, (int, float)):
        return [float(fill)] * channels
    return [float(f) for f in fill]


class RandomRotation(_Transform):
    """Rotated by an angle drawn uniformly from degrees ((-d, d) for a number)."""

    def __init__(self, degrees, interpolation=InterpolationMode.NEAREST, expand: bool = False, center=None, fill=0):
        self.degrees = _setup_angle(degrees, "degrees", (2,))
        if center is not None and (not isinstance(center, Sequence) or len(center) != 2):
            raise ValueError("center should be a sequence of length 2.")
        if fill is None or not isinstance(fill, (numbers.Number, tuple, list)):
            raise TypeError("Fill should be either a sequence or a number.")
        self.interpolation = F._interpolation(interpolation)
        self.expand, self.center, self.fill = expand, center, fill

    @staticmethod
    def get_params(degrees: List[float]) -> float:
        return _uniform(float(degrees[0]), float(degrees[1]))

    def __call__(self, img):
        angle = self.get_params(self.degrees)
        return F.rotate(img, angle, self.interpolation, self.expand, self.center, _tensor_fill(img, self.fill))

    def __repr__(self) -> str:
        return f"RandomRotation(degrees={self.degrees}, interpolation={self.interpolation.value}, expand={self.expand})"


class RandomAffine(_Transform):
    """A random rotation (degrees), translation (fractions of the size), scale and shear."""

    def __init__(self, degrees, translate=None, scale=None, shear=None, interpolation=InterpolationMode.NEAREST,
                 fill=0, center=None) -> None:
        self.degrees = _setup_angle(degrees, "degrees", (2,))
        if translate is not None:
            if not isinstance(translate, Sequence) or len(translate) != 2:
                raise ValueError("translate should be a sequence of length 2.")
            for t in translate:
                if not 0.0 <= t <= 1.0:
                    raise ValueError("translation values should be between 0 and 1")
        if scale is not None:
            if not isinstance(scale, Sequence) or len(scale) != 2:
                raise ValueError("scale should be a sequence of length 2.")
            for v in scale:
                if v <= 0:
                    raise ValueError("scale values should be positive")
        self.shear = _setup_angle(shear, "shear", (2, 4)) if shear is not None else None
        if fill is None or not isinstance(fill, (numbers.Number, tuple, list)):
            raise TypeError("Fill should be either a sequence or a number.")
        if center is not None and (not isinstance(center, Sequence) or len(center) != 2):
            raise ValueError("center should be a sequence of length 2.")
        self.translate, self.scale, self.fill, self.center = translate, scale, fill, center
        self.interpolation = F._interpolation(interpolation)

    @staticmethod
    def get_params(degrees, translate, scale_ranges, shears, img_size):
        angle = _uniform(float(degrees[0]), float(degrees[1]))
        if translate is not None:
            max_dx = float(translate[0] * img_size[0])
            max_dy = float(translate[1] * img_size[1])
            translations = (int(round(_uniform(-max_dx, max_dx))), int(round(_uniform(-max_dy, max_dy))))
        else:
            translations = (0, 0)
        scale = _uniform(scale_ranges[0], scale_ranges[1]) if scale_ranges is not None else 1.0
        shear_x = shear_y = 0.0
        if shears is not None:
            shear_x = _uniform(shears[0], shears[1])
            if len(shears) == 4:
                shear_y = _uniform(shears[2], shears[3])
        return angle, translations, scale, (shear_x, shear_y)

    def __call__(self, img):
        _, height, width = F.get_dimensions(img)
        angle, translations, scale, shear = self.get_params(self.degrees, self.translate, self.scale, self.shear,
                                                            [width, height])
        return F.affine(img, angle, list(translations), scale, list(shear), interpolation=self.interpolation,
                        fill=_tensor_fill(img, self.fill), center=self.center)

    def __repr__(self) -> str:
        return (f"RandomAffine(degrees={self.degrees}, translate={self.translate}, scale={self.scale}, "
                f"shear={self.shear})")


class RandomPerspective(_Transform):
    """With probability p, a perspective transform whose four corners move inwards by up to
    distortion_scale * half the width and height (get_params draws the corners)."""

    def __init__(self, distortion_scale: float = 0.5, p: float = 0.5, interpolation=InterpolationMode.BILINEAR,
                 fill=0) -> None:
        self.p = _check_p(p)
        if not isinstance(distortion_scale, numbers.Real) or not 0.0 <= float(distortion_scale) <= 1.0:
            raise ValueError(f"Argument distortion_scale value should be between 0 and 1 (v2's check), got "
                             f"{distortion_scale!r}")
        self.interpolation = F._interpolation(interpolation)
        self.distortion_scale = distortion_scale
        if fill is None:
            fill = 0
        elif not isinstance(fill, (Sequence, numbers.Number)):
            raise TypeError("Fill should be either a sequence or a number.")
        self.fill = fill

    @staticmethod
    def get_params(width: int, height: int, distortion_scale: float):
        """([top-left, top-right, bottom-right, bottom-left] of the image, the same corners moved),
        drawn in torchvision's order: x then y of each corner."""
        half_height, half_width = height // 2, width // 2
        dw, dh = int(distortion_scale * half_width), int(distortion_scale * half_height)
        topleft = [_randint(0, dw + 1), _randint(0, dh + 1)]
        topright = [_randint(width - dw - 1, width), _randint(0, dh + 1)]
        botright = [_randint(width - dw - 1, width), _randint(height - dh - 1, height)]
        botleft = [_randint(0, dw + 1), _randint(height - dh - 1, height)]
        startpoints = [[0, 0], [width - 1, 0], [width - 1, height - 1], [0, height - 1]]
        return startpoints, [topleft, topright, botright, botleft]

    def __call__(self, img):
        fill = _tensor_fill(img, self.fill)
        _, height, width = F.get_dimensions(img)
        if _rand() < self.p:
            startpoints, endpoints = self.get_params(width, height, self.distortion_scale)
            return F.perspective(img, startpoints, endpoints, self.interpolation, fill)
        return img

    def __repr__(self) -> str:
        return f"RandomPerspective(p={self.p})"


def _elastic_pair(value, name: str) -> List[float]:
    """alpha or sigma as torchvision takes them: a float, or a sequence of 2 floats."""
    if not isinstance(value, (float, Sequence)):
        raise TypeError(f"{name} should be float or a sequence of floats. Got {type(value)}")
    if isinstance(value, Sequence) and len(value) != 2:
        raise ValueError(f"If {name} is a sequence its length should be 2. Got {len(value)}")
    if isinstance(value, Sequence):
        for element in value:
            if not isinstance(element, float):
                raise TypeError(f"{name} should be a sequence of floats. Got {type(element)}")
        return value
    return [float(value), float(value)]


class ElasticTransform(_Transform):
    """Pixels moved by a random displacement field: uniform noise in [-1, 1] per pixel, blurred by a
    Gaussian of sigma, scaled by alpha (in pixels, over the image's size), one field per axis."""

    def __init__(self, alpha=50.0, sigma=5.0, interpolation=InterpolationMode.BILINEAR, fill=0) -> None:
        self.alpha = _elastic_pair(alpha, "alpha")
        self.sigma = _elastic_pair(sigma, "sigma")
        self.interpolation = F._interpolation(interpolation)
        if isinstance(fill, (int, float)):
            fill = [float(fill)]
        elif isinstance(fill, (list, tuple)):
            fill = [float(f) for f in fill]
        else:
            raise TypeError(f"fill should be int or float or a list or tuple of them. Got {type(fill)}")
        self.fill = fill

    @staticmethod
    def get_params(alpha: List[float], sigma: List[float], size: List[int]):
        """The (1, H, W, 2) displacement for an image of size [H, W]. As torchvision's: each axis
        blurred with kernel 8 sigma + 1 (made odd) of its own sigma and sigma = both sigmas (x, y)."""
        fields = []
        for axis in range(2):
            d = ember.rand(1, 1, *size) * 2 - 1
            if sigma[axis] > 0.0:
                k = int(8 * sigma[axis] + 1)
                k += 1 - k % 2
                d = F.gaussian_blur(d, [k, k], list(sigma))
            fields.append(d * alpha[axis] / size[1 - axis])
        return ember.cat(fields, 1).permute(0, 2, 3, 1)

    def __call__(self, img):
        _, height, width = F.get_dimensions(img)
        displacement = self.get_params(self.alpha, self.sigma, [height, width])
        return F.elastic_transform(img, displacement, self.interpolation, self.fill)

    def __repr__(self) -> str:
        return (f"ElasticTransform(alpha={self.alpha}, sigma={self.sigma}, interpolation={self.interpolation}, "
                f"fill={self.fill})")


# ---- the augmentation policies and their one-op random transforms ------------------------------------------

class _RandomOp(_Transform):
    def __init__(self, p: float = 0.5) -> None:
        self.p = _check_p(p)

    def _op(self, img):
        raise NotImplementedError

    def __call__(self, img):
        return self._op(img) if _rand() < self.p else img


class RandomInvert(_RandomOp):
    def _op(self, img):
        return F.invert(img)


class RandomAutocontrast(_RandomOp):
    def _op(self, img):
        return F.autocontrast(img)


class RandomEqualize(_RandomOp):
    def _op(self, img):
        return F.equalize(img)


class RandomPosterize(_RandomOp):
    def __init__(self, bits: int, p: float = 0.5) -> None:
        super().__init__(p)
        self.bits = bits

    def _op(self, img):
        return F.posterize(img, self.bits)


class RandomSolarize(_RandomOp):
    def __init__(self, threshold: float, p: float = 0.5) -> None:
        super().__init__(p)
        self.threshold = threshold

    def _op(self, img):
        return F.solarize(img, self.threshold)


class RandomAdjustSharpness(_RandomOp):
    def __init__(self, sharpness_factor: float, p: float = 0.5) -> None:
        super().__init__(p)
        self.sharpness_factor = sharpness_factor

    def _op(self, img):
        return F.adjust_sharpness(img, self.sharpness_factor)


# The augmentation policies (AutoAugment, RandAugment, TrivialAugmentWide, AugMix) share one op table:
# they live in _autoaugment.py, as torchvision's autoaugment.py.
from ._autoaugment import (_apply_op, AugMix, AutoAugment, AutoAugmentPolicy, RandAugment,  # noqa: E402,F401
                           TrivialAugmentWide)
