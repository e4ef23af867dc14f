"""ember.vision.transforms' later additions against torchvision's: tensor bicubic resize, perspective,
elastic transform, AutoAugment and AugMix — the functional forms with given parameters compared
value by value, the random classes by replaying their draws and by statistics, and their argument
errors. Without torch, PyTorch's values come from tests/python/golden/vision_transforms_more.json
(torch_golden.py; the image helpers are test_vision_transforms.py's)."""

from __future__ import annotations

import json

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
    # v2's coefficients in place of the corners
    from ember.vision.transforms._functional_affine import _get_perspective_coeffs
    c = _get_perspective_coeffs(START, end)
    np.testing.assert_array_equal(v2.functional.perspective(x, None, None, coefficients=c).numpy(),
                                  F.perspective(x, START, end).numpy())
    with pytest.raises(ValueError, match="shouldn't be defined concurrently"):
        F.perspective(x, START, end, coefficients=c)
    with pytest.raises(ValueError, match="Argument coefficients should have 8 float values"):
        F.perspective(x, None, None, coefficients=c[:6])
    with pytest.raises(ValueError, match="Either the startpoints/endpoints or the coefficients"):
        F.perspective(x, START, None)


def test_random_perspective_replays_get_params_and_keeps_corners_in_range():
    t = T.RandomPerspective(distortion_scale=0.6, p=1.0, fill=4)
    x = ember.from_numpy(chw_uint8())
    for seed in range(4):
        ember.manual_seed(seed)
        out = t(x)
        ember.manual_seed(seed)
        ember.rand(1)  # the p draw comes first
        start, end = T.RandomPerspective.get_params(17, 13, 0.6)
        np.testing.assert_array_equal(out.numpy(), F.perspective(x, start, end, fill=[4.0] * 3).numpy())
    ember.manual_seed(5)
    seen = set()
    for _ in range(300):
        start, end = T.RandomPerspective.get_params(17, 13, 0.6)
        assert start == START
        (tlx, tly), (trx, try_), (brx, bry), (blx, bly) = end
        # int(0.6 * 8) = 4 columns and int(0.6 * 6) = 3 rows in from each side
        assert 0 <= tlx <= 4 and 0 <= tly <= 3 and 11 <= trx <= 16 and 0 <= try_ <= 3
        assert 11 <= brx <= 16 and 8 <= bry <= 12 and 0 <= blx <= 4 and 8 <= bly <= 12
        seen.add(tlx)
    assert seen == set(range(5))
    # no distortion: the corners stay, the image too (nearest). The solved coefficients that should
    # be 0 are rounding noise (~1e-16, torch's QR and NumPy's SVD each their own), which can move a
    # bilinear pixel by a level, as torchvision's own result is moved
    ident = T.RandomPerspective(0.0, p=1.0, interpolation=T.InterpolationMode.NEAREST)
    assert np.array_equal(np.asarray(ident(pil_rgb())), np.asarray(pil_rgb()))
    same(T.RandomPerspective(0.0, p=1.0)(pil_rgb()), lambda: TT.RandomPerspective(0.0, p=1.0)(pil_rgb()), atol=1)
    ember.manual_seed(2)
    n = sum(T.RandomPerspective(p=0.3)(x) is not x for _ in range(400))
    assert 80 < n < 160


def test_random_perspective_arguments_and_repr():
    with pytest.raises(TypeError, match="Fill should be either a sequence or a number."):
        T.RandomPerspective(fill={"r": 255})
    with pytest.raises(ValueError, match=r"probability p should be a number in \[0, 1\]"):
        T.RandomPerspective(p=1.5)
    with pytest.raises(ValueError, match="Argument distortion_scale value should be between 0 and 1"):
        T.RandomPerspective(distortion_scale=-0.1)
    assert T.RandomPerspective(fill=None).fill == 0
    assert T.RandomPerspective(interpolation=0).interpolation is T.InterpolationMode.NEAREST
    ref = golden.reference(lambda: repr(TT.RandomPerspective(0.3, p=0.25)))
    assert repr(T.RandomPerspective(0.3, p=0.25)) == ref["value"]
    assert v2.RandomPerspective is T.RandomPerspective


# ---- elastic --------------------------------------------------------------------------------------------

def displacement(h, w, seed=0, scale=0.15):
    """A smooth (1, H, W, 2) field from a formula: a few pixels of shift, some of it off the image."""
    y, x = np.meshgrid(np.linspace(0, 1, h), np.linspace(0, 1, w), indexing="ij")
    dx = scale * np.sin(6.0 * y + seed) * np.cos(3.0 * x)
    dy = scale * np.cos(5.0 * x - seed) * (y - 0.3)
    return np.stack([dx, dy], axis=-1)[None].astype(np.float32)


@pytest.mark.parametrize("fill", [None, 0, [9.0], [3.0, 200.0, 40.0]])
@pytest.mark.parametrize("name", ["nearest", "bilinear"])
def test_elastic_transform_all_kinds(fill, name):
    ours, theirs = mode(name)
    d = displacement(13, 17)
    u = chw_uint8(batch=2)
    same(F.elastic_transform(ember.from_numpy(u), ember.from_numpy(d), ours, fill),
         lambda: TF.elastic_transform(tt(u), tt(d), theirs, fill), atol=1)
    same(F.elastic_transform(pil_rgb(), ember.from_numpy(d), ours, fill),
         lambda: TF.elastic_transform(pil_rgb(), tt(d), theirs, fill), atol=1)
    like_pil(F.elastic_transform(rgb_array(), ember.from_numpy(d), ours, fill),
             F.elastic_transform(pil_rgb(), ember.from_numpy(d), ours, fill))
    f = small_float()
    ds = displacement(9, 11, seed=1)
    ffill = [0.5] * 3 if isinstance(fill, list) and len(fill) == 3 else fill
    same(F.elastic_transform(ember.from_numpy(f), ember.from_numpy(ds), ours, ffill),
         lambda: TF.elastic_transform(tt(f), tt(ds), theirs, ffill), atol=1e-5)
    g = v2.functional.elastic(pil_gray(), ember.from_numpy(d), ours, None if fill is None else 5)
    assert g.mode == "L"
    same(g, lambda: TF.elastic_transform(pil_gray(), tt(d), theirs, None if fill is None else 5), atol=1)


def test_elastic_transform_argument_errors():
    x = ember.from_numpy(chw_uint8())
    with pytest.raises(TypeError, match="Argument displacement should be a Tensor"):
        F.elastic_transform(x, displacement(13, 17))
    with pytest.raises(ValueError, match=r"Argument displacement shape should be \(1, 13, 17, 2\), but given \(1, 17, 13, 2\)"):
        F.elastic_transform(x, ember.from_numpy(displacement(17, 13)))
    with pytest.raises(ValueError, match="Interpolation mode 'bicubic' is unsupported with Tensor input"):
        F.elastic_transform(x, ember.from_numpy(displacement(13, 17)), T.InterpolationMode.BICUBIC)
    with pytest.raises(TypeError, match="alpha should be float or a sequence of floats"):
        T.ElasticTransform(alpha=50)
    with pytest.raises(ValueError, match="If sigma is a sequence its length should be 2. Got 3"):
        T.ElasticTransform(sigma=(1.0, 2.0, 3.0))
    with pytest.raises(TypeError, match="sigma should be a sequence of floats"):
        T.ElasticTransform(sigma=(1.0, 2))
    with pytest.raises(TypeError, match="fill should be int or float or a list or tuple of them"):
        T.ElasticTransform(fill="black")
    ref = golden.reference(lambda: repr(TT.ElasticTransform(alpha=(30.0, 40.0), sigma=3.0, fill=(1, 2, 3))))
    assert repr(T.ElasticTransform(alpha=(30.0, 40.0), sigma=3.0, fill=(1, 2, 3))) == ref["value"]


def test_elastic_transform_displacement_is_torchvisions_from_the_same_noise():
    alpha, sigma, size = [30.0, 12.0], [2.0, 1.2], [19, 23]
    ember.manual_seed(11)
    ours = T.ElasticTransform.get_params(alpha, sigma, size)
    assert tuple(ours.shape) == (1, 19, 23, 2)
    ember.manual_seed(11)
    noise = [ember.rand(1, 1, *size).numpy() * 2 - 1 for _ in range(2)]

    def theirs():
        # torchvision's get_params with torch.rand's draws replaced by ember's
        dx = TF.gaussian_blur(tt(noise[0]), [17, 17], sigma) * alpha[0] / size[1]
        dy = TF.gaussian_blur(tt(noise[1]), [11, 11], sigma) * alpha[1] / size[0]
        return torch.concat([dx, dy], 1).permute([0, 2, 3, 1])

    same(ours, theirs, atol=2e-6)
    ember.manual_seed(3)
    t = T.ElasticTransform(alpha=20.0, sigma=2.0, fill=[1.0, 2.0, 3.0])
    x = ember.from_numpy(chw_uint8())
    out = t(x)
    ember.manual_seed(3)
    d = T.ElasticTransform.get_params(t.alpha, t.sigma, [13, 17])
    np.testing.assert_array_equal(out.numpy(), F.elastic_transform(x, d, fill=[1.0, 2.0, 3.0]).numpy())
    # no blur: the field is the noise scaled by alpha over the size, within alpha / size
    d = T.ElasticTransform.get_params([17.0, 13.0], [0.0, 0.0], [13, 17]).numpy()
    assert np.abs(d).max() <= 1.0 and np.abs(d).max() > 0.9 and abs(d.mean()) < 0.1



# ---- AutoAugment ----------------------------------------------------------------------------------------

def tv_apply_op(img, op_name, magnitude, interpolation, fill):
    from torchvision.transforms.autoaugment import _apply_op
    return _apply_op(img, op_name, magnitude, TT.InterpolationMode(interpolation.value), fill)


@pytest.mark.parametrize("policy", ["IMAGENET", "CIFAR10", "SVHN"])
def test_auto_augment_policies_and_magnitudes_are_torchvisions(policy):
    ours = T.AutoAugment(T.AutoAugmentPolicy[policy])
    ref = golden.reference(lambda: json.loads(json.dumps(TT.AutoAugment(TT.AutoAugmentPolicy[policy]).policies)))
    assert json.loads(json.dumps(ours.policies)) == ref["value"]  # tuples as JSON's lists, as the golden file
    assert len(ours.policies) == 25
    space = ours._augmentation_space(10, (13, 17))
    ref = golden.reference(lambda: sorted(TT.AutoAugment()._augmentation_space(10, (13, 17))))
    assert sorted(space) == ref["value"]
    for name, (mags, signed) in space.items():
        ref = golden.reference(lambda: TT.AutoAugment()._augmentation_space(10, (13, 17))[name][0].float().reshape(-1))
        np.testing.assert_allclose(mags if mags is not None else [0.0], ref["values"], rtol=1e-6)


@pytest.mark.parametrize("policy", ["IMAGENET", "CIFAR10", "SVHN"])
def test_auto_augment_equals_torchvisions_ops_with_its_draws(policy):
    t = T.AutoAugment(T.AutoAugmentPolicy[policy], fill=[7, 7, 7])
    u = chw_uint8()
    applied = 0
    for seed in range(6):
        ember.manual_seed(seed)
        out_pil, out_tensor = t(pil_rgb()), None
        ember.manual_seed(seed)
        sub, probs, signs = T.AutoAugment.get_params(25)
        ops = []
        for i, (op_name, p, bin_) in enumerate(t.policies[sub]):
            if probs[i].item() <= p:
                mags, signed = t._augmentation_space(10, (13, 17))[op_name]
                magnitude = float(mags[bin_]) if bin_ is not None else 0.0
                ops.append((op_name, -magnitude if signed and signs[i].item() == 0 else magnitude))
        applied += len(ops)
        ember.manual_seed(seed)
        out_tensor = t(ember.from_numpy(u))

        def theirs(img, fill, ops=ops):
            for op_name, magnitude in ops:
                img = tv_apply_op(img, op_name, magnitude, T.InterpolationMode.NEAREST, fill)
            return img

        same(out_pil, lambda: theirs(pil_rgb(), [7, 7, 7]))
        same(out_tensor, lambda: theirs(tt(u), [7.0] * 3), atol=1)
        ember.manual_seed(seed)
        like_pil(t(rgb_array()), out_pil)
    assert applied >= 4


def test_auto_augment_arguments_repr_and_the_invert_op():
    with pytest.raises(ValueError, match="The provided policy imagenet is not recognized"):
        T.AutoAugment("imagenet")
    with pytest.raises(TypeError, match="Argument interpolation should be a InterpolationMode"):
        T.AutoAugment(interpolation="cubic-ish")
    ref = golden.reference(lambda: repr(TT.AutoAugment(TT.AutoAugmentPolicy.SVHN, fill=[1, 2, 3])))
    assert repr(T.AutoAugment(T.AutoAugmentPolicy.SVHN, fill=[1, 2, 3])) == ref["value"]
    assert v2.AutoAugment is T.AutoAugment and v2.AutoAugmentPolicy is T.AutoAugmentPolicy
    from ember.vision.transforms.transforms import _apply_op
    u = chw_uint8()
    same(_apply_op(ember.from_numpy(u), "Invert", 0.0, T.InterpolationMode.NEAREST, None),
         lambda: tv_apply_op(tt(u), "Invert", 0.0, T.InterpolationMode.NEAREST, None))
    with pytest.raises(ValueError, match="The provided operator Blur is not recognized."):
        _apply_op(ember.from_numpy(u), "Blur", 0.0, T.InterpolationMode.NEAREST, None)


# ---- AugMix -----------------------------------------------------------------------------------------------

def test_augmix_mixes_as_torchvision_with_its_draws():
    t = T.AugMix(severity=4, mixture_width=3, chain_depth=-1, alpha=0.7)
    u = chw_uint8(batch=2)
    for seed in range(3):
        ember.manual_seed(seed)
        out = t(ember.from_numpy(u))
        ember.manual_seed(seed)
        m, combined, chains = t._draw(2, (13, 17))
        assert np.allclose(m.sum(axis=1), 1) and np.allclose(combined.sum(axis=1), m[:, 1], atol=1e-6)
        assert all(1 <= len(c) <= 3 for c in chains)

        def theirs(m=m, combined=combined, chains=chains):
            # torchvision's AugMix.forward with its Dirichlet and op draws replaced by ember's
            batch = tt(u)
            mix = tt(m[:, 0]).view(2, 1, 1, 1) * batch
            for i, ops in enumerate(chains):
                aug = batch
                for op_name, magnitude in ops:
                    aug = tv_apply_op(aug, op_name, magnitude, T.InterpolationMode.BILINEAR, None)
                mix.add_(tt(combined[:, i]).view(2, 1, 1, 1) * aug)
            return mix.to(torch.uint8)

        same(out, theirs, atol=1)
    # PIL images are mixed as their uint8 tensor and come back as PIL images; arrays as arrays
    t = T.AugMix(chain_depth=2, all_ops=False, fill=3)
    ember.manual_seed(4)
    pil = t(pil_rgb())
    assert isinstance(pil, Image.Image) and pil.size == (17, 13)
    ember.manual_seed(4)
    like_pil(t(rgb_array()), pil)
    ember.manual_seed(4)
    np.testing.assert_array_equal(np.asarray(pil).transpose(2, 0, 1), t(F.pil_to_tensor(pil_rgb())).numpy())
    assert "Brightness" not in t._augmentation_space(10, (13, 17))


def test_augmix_weights_follow_the_dirichlet():
    from ember.vision.transforms._autoaugment import _sample_dirichlet
    ember.manual_seed(0)
    for alphas in ([0.5, 0.5], [1.0, 1.0], [2.0, 2.0, 2.0]):
        d = _sample_dirichlet(alphas, 3000)
        a0, k = sum(alphas), len(alphas)
        mean, var = 1.0 / k, alphas[0] * (a0 - alphas[0]) / (a0 * a0 * (a0 + 1))
        assert d.dtype == np.float32 and np.allclose(d.sum(axis=1), 1.0, atol=1e-6) and (d >= 0).all()
        assert abs(d[:, 0].mean() - mean) < 0.02, (alphas, d[:, 0].mean())
        assert abs(d[:, 0].var() - var) < 0.1 * var, (alphas, d[:, 0].var(), var)


def test_augmix_arguments_and_repr():
    with pytest.raises(ValueError, match=r"The severity must be between \[1, 10\]. Got 11 instead."):
        T.AugMix(severity=11)
    with pytest.raises(ValueError, match="mixture_width must be a positive integer"):
        T.AugMix(mixture_width=0)
    with pytest.raises(ValueError, match="alpha must be positive"):
        T.AugMix(alpha=0.0)
    ref = golden.reference(lambda: repr(TT.AugMix(severity=2, chain_depth=3, fill=[5])))
    assert repr(T.AugMix(severity=2, chain_depth=3, fill=[5])) == ref["value"]
    ref = golden.reference(lambda: TT.AugMix()._augmentation_space(10, (13, 17))["Posterize"][0].float())
    np.testing.assert_array_equal(T.AugMix()._augmentation_space(10, (13, 17))["Posterize"][0], ref["values"])
    with pytest.raises(TypeError, match="uint8"):  # equalize and posterize, as torchvision's, take uint8 only
        ember.manual_seed(0)
        for _ in range(20):
            T.AugMix(severity=10)(ember.from_numpy(small_float()))


def test_zz_write_goldens():
    golden.write()
