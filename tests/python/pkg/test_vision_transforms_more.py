"""ember.vision.transforms' later additions against torchvision's: tensor bicubic resize, perspective,
elastic transform, AutoAugment and AugMix — the functional forms with given parameters compared
value by value, the random classes by replaying their draws and by statistics, and their argument
errors. Without torch, PyTorch's values come from tests/python/golden/vision_transforms_more.json
(torch_golden.py; the image helpers are test_vision_transforms.py's)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

import ember
from ember.vision import transforms as T
from ember.vision.transforms import functional as F
from ember.vision.transforms import v2
from test_vision_transforms import as_ember, as_torch, chw_uint8, like_pil, pil_gray, pil_rgb, rgb_array, small_float, tt
from torch_golden import Golden, torch

try:
    import torchvision.transforms as TT
    import torchvision.transforms.functional as TF
except ImportError:  # CI: the golden file answers
    TT = TF = None

golden = Golden("vision_transforms_more.json")


@pytest.fixture(autouse=True)
def _golden_id(request):
    golden.start(request.node.nodeid)


def same(ours, theirs_thunk, atol=0.0):
    """ours (PIL, array or tensor) equal to torchvision's result: shape, dtype, values within atol
    (atol=1 on uint8 is one level, 1/255, where torchvision interpolates in float and rounds)."""
    e = as_ember(ours)
    ref = golden.reference(lambda: as_torch(theirs_thunk()))
    a = e.numpy()
    assert list(a.shape) == ref["shape"], (a.shape, ref["shape"])
    assert str(e.dtype).split(".")[-1] == ref["dtype"], (e.dtype, ref["dtype"])
    b = np.asarray(ref["values"], np.float64).reshape(a.shape)
    if atol == 0:
        np.testing.assert_array_equal(a.astype(np.float64), b)
    else:
        np.testing.assert_allclose(a.astype(np.float64), b, atol=atol, rtol=0)


def mode(name):
    """ember's and torchvision's InterpolationMode of that value (torchvision's None without torch)."""
    return T.InterpolationMode(name), (TT.InterpolationMode(name) if TT else None)


# ---- resize: bicubic on tensors ----------------------------------------------------------------------

@pytest.mark.parametrize("size", [(7, 9), (20, 30), 8, (13, 40), (5, 3)])
@pytest.mark.parametrize("antialias", [True, False])
def test_resize_tensor_bicubic(size, antialias):
    ours, theirs = mode("bicubic")
    u = chw_uint8(batch=2)
    same(F.resize(ember.from_numpy(u), size, ours, antialias=antialias),
         lambda: TF.resize(tt(u), size, theirs, antialias=antialias), atol=1)
    f = small_float()
    if np.prod(F._output_size(9, 11, F._check_size(size), None)) <= 200:  # float values are long in the golden file
        same(T.Resize(size, ours, antialias=antialias)(ember.from_numpy(f)),
             lambda: TT.Resize(size, theirs, antialias=antialias)(tt(f)), atol=2e-6)
    d = f[:1].astype(np.float64)
    if np.prod(F._output_size(9, 11, F._check_size(size), None)) <= 100:
        same(F.resize(ember.from_numpy(d), size, ours, antialias=antialias),
             lambda: TF.resize(tt(d), size, theirs, antialias=antialias), atol=1e-12)


def test_resize_tensor_bicubic_overshoot_is_clamped_for_uint8():
    # a hard edge: bicubic overshoots below 0 and above 255; uint8 clamps, float keeps the ringing
    edge = np.zeros((1, 6, 12), np.uint8)
    edge[:, :, 6:] = 255
    ours, theirs = mode("bicubic")
    same(F.resize(ember.from_numpy(edge), [6, 25], ours, antialias=False),
         lambda: TF.resize(tt(edge), [6, 25], theirs, antialias=False), atol=1)
    f = edge.astype(np.float32) / 255
    out = F.resize(ember.from_numpy(f), [6, 25], ours, antialias=False).numpy()
    assert out.min() < 0 and out.max() > 1
    same(out, lambda: TF.resize(tt(f), [6, 25], theirs, antialias=False), atol=2e-6)


def test_resize_tensor_modes_torchvision_refuses():
    x = ember.from_numpy(chw_uint8())
    with pytest.raises(ValueError, match="Lanczos mode requires antialias=True"):
        F.resize(x, [5, 7], T.InterpolationMode.LANCZOS)
    with pytest.raises(ValueError, match="Lanczos mode requires antialias=True"):
        T.Resize(5, T.InterpolationMode.LANCZOS, antialias=False)(x)
    for m in (T.InterpolationMode.BOX, T.InterpolationMode.HAMMING):
        with pytest.raises(NotImplementedError, match="PIL images only"):
            F.resize(x, [5, 7], m)
    # the PIL image takes them all
    assert F.resize(pil_rgb(), [5, 7], T.InterpolationMode.LANCZOS).size == (7, 5)


# ---- perspective ----------------------------------------------------------------------------------------

START = [[0, 0], [16, 0], [16, 12], [0, 12]]  # the corners of a 13 x 17 image
PERSPECTIVES = [
    ([[2, 1], [15, 0], [13, 11], [1, 12]], None),
    ([[0, 3], [14, 2], [16, 9], [3, 12]], 7),
    ([[4, 2], [12, 3], [16, 12], [0, 10]], (3, 200, 40)),
    ([[-2, -1], [18, 1], [17, 14], [1, 11]], 0),
]


def test_perspective_coefficients_equal_torchvisions():
    from ember.vision.transforms._functional_affine import _get_perspective_coeffs
    for end, _ in PERSPECTIVES:
        ref = golden.reference(lambda: torch.tensor(TF._get_perspective_coeffs(START, end), dtype=torch.float64))
        np.testing.assert_allclose(_get_perspective_coeffs(START, end), ref["values"], rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError, match="exactly four corners, got 3 startpoints and 4 endpoints"):
        F.perspective(pil_rgb(), START[:3], START)


@pytest.mark.parametrize("end,fill", PERSPECTIVES)
@pytest.mark.parametrize("name", ["nearest", "bilinear", "bicubic"])
def test_perspective_pil_and_numpy_equal_pillows(end, fill, name):
    ours, theirs = mode(name)
    same(F.perspective(pil_rgb(), START, end, ours, fill), lambda: TF.perspective(pil_rgb(), START, end, theirs, fill))
    like_pil(F.perspective(rgb_array(), START, end, ours, fill), F.perspective(pil_rgb(), START, end, ours, fill))
    g = 9 if fill is not None else None
    same(F.perspective(pil_gray(), START, end, ours, g), lambda: TF.perspective(pil_gray(), START, end, theirs, g))


@pytest.mark.parametrize("end,fill", PERSPECTIVES)
@pytest.mark.parametrize("name", ["nearest", "bilinear"])
def test_perspective_tensor(end, fill, name):
    ours, theirs = mode(name)
    u = chw_uint8(batch=2)
    tfill = list(fill) if isinstance(fill, tuple) else fill
    same(F.perspective(ember.from_numpy(u), START, end, ours, tfill),
         lambda: TF.perspective(tt(u), START, end, theirs, tfill), atol=1)
    f = small_float()
    small_end = [[min(x, 10), min(y, 8)] for x, y in end]
    small_start = [[0, 0], [10, 0], [10, 8], [0, 8]]
    ffill = [0.5] * 3 if fill is not None else None
    same(F.perspective(ember.from_numpy(f), small_start, small_end, ours, ffill),
         lambda: TF.perspective(tt(f), small_start, small_end, theirs, ffill), atol=1e-5)


def test_perspective_argument_errors():
    x = ember.from_numpy(chw_uint8())
    end = PERSPECTIVES[0][0]
    with pytest.raises(ValueError, match="Interpolation mode 'bicubic' is unsupported with Tensor input"):
        F.perspective(x, START, end, T.InterpolationMode.BICUBIC)
    with pytest.raises(ValueError, match=r"cannot broadcast to match the number of channels of the image \(2 != 3\)"):
        F.perspective(x, START, end, fill=[1.0, 2.0])
    with pytest.raises(ValueError, match=r"does not match the number of channels of the image \(2 != 3\)"):
        F.perspective(pil_rgb(), START, end, fill=[1, 2])
    with pytest.raises(TypeError, match="Argument interpolation should be a InterpolationMode"):
        F.perspective(x, START, end, interpolation="cubic-ish")


def test_zz_write_goldens():
    golden.write()
