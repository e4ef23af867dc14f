"""ember.vision.transforms against torchvision's: the deterministic functional ops on PIL images,
NumPy arrays and ember tensors (uint8, float, batched), bit-equal where torchvision's are integer
arithmetic and within 1/255 where it interpolates; the random classes by replaying their drawn
parameters and by statistics; the fused batch plan against the same transforms in Python. Without
torch, PyTorch's values come from tests/python/golden/vision_transforms.json (torch_golden.py)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

import ember
from ember.vision import transforms as T
from ember.vision.transforms import functional as F
from ember.vision.transforms import v2
from torch_golden import Golden, torch

try:
    import torchvision.transforms as TT
    import torchvision.transforms.functional as TF
    import torchvision.transforms.v2.functional as TF2
except ImportError:  # CI: the golden file answers
    TT = TF = TF2 = None

golden = Golden("vision_transforms.json")


@pytest.fixture(autouse=True)
def _golden_id(request):
    golden.start(request.node.nodeid)


def rgb_array(h=13, w=17, c=3, seed=0) -> np.ndarray:
    """A small image from a formula (no stored pixels): edges, gradients and a checker."""
    y, x, ch = np.meshgrid(np.arange(h), np.arange(w), np.arange(c), indexing="ij")
    return ((y * 31 + x * 17 + ch * 71 + ((x * y + seed) % 13) * 5 + seed * 11) % 256).astype(np.uint8)


def pil_rgb():
    return Image.fromarray(rgb_array())


def pil_gray():
    return Image.fromarray(rgb_array(c=1)[:, :, 0])


def chw_uint8(batch=None):
    a = rgb_array().transpose(2, 0, 1)
    if batch:
        a = np.stack([rgb_array(seed=s).transpose(2, 0, 1) for s in range(batch)])
    return np.ascontiguousarray(a)


def small_float():
    """A float (3, 9, 11) image: float results are long in the golden file, so they use less."""
    return np.ascontiguousarray(chw_uint8()[:, 2:11, 3:14].astype(np.float32) / 255)


def as_ember(x):
    """An op's result as an ember tensor: PIL images and arrays by their pixels."""
    if isinstance(x, ember.Tensor):
        return x
    return ember.from_numpy(np.ascontiguousarray(np.asarray(x)).copy())


def as_torch(x):
    if isinstance(x, torch.Tensor):
        return x.contiguous()
    return torch.from_numpy(np.ascontiguousarray(np.asarray(x)).copy())


def same(ours, theirs_thunk, atol=0.0):
    """ours (PIL, array or tensor) equal to torchvision's result of theirs_thunk(): shape, dtype and
    values, within atol (for uint8 results too: atol=1 is one level, 1/255, where torchvision
    interpolates in float and rounds)."""
    e = as_ember(ours)
    if atol == 0 or e.is_floating_point():
        golden.same(e, lambda: as_torch(theirs_thunk()), atol=atol, rtol=0)
        return
    ref = golden.reference(lambda: as_torch(theirs_thunk()))
    a = e.numpy()
    assert list(a.shape) == ref["shape"], (a.shape, ref["shape"])
    assert str(e.dtype).split(".")[-1] == ref["dtype"], (e.dtype, ref["dtype"])
    np.testing.assert_allclose(a.astype(np.float64), np.asarray(ref["values"], np.float64).reshape(a.shape), atol=atol,
                               rtol=0)


def like_pil(from_array, from_pil):
    """A NumPy image's result equals the PIL image's (which the test compares with torchvision's)."""
    assert isinstance(from_array, np.ndarray), type(from_array)
    np.testing.assert_array_equal(from_array, np.asarray(from_pil))


def tt(a):  # a NumPy array as a torch tensor (inside thunks only)
    return torch.from_numpy(np.ascontiguousarray(a).copy())


# ---- conversions ------------------------------------------------------------------------------------

def test_to_tensor_pil_numpy_and_pil_to_tensor():
    same(F.to_tensor(pil_rgb()), lambda: TF.to_tensor(pil_rgb()))
    same(F.to_tensor(pil_gray()), lambda: TF.to_tensor(pil_gray()))
    same(T.ToTensor()(rgb_array()), lambda: TF.to_tensor(rgb_array()))
    same(T.PILToTensor()(pil_rgb()), lambda: TF.pil_to_tensor(pil_rgb()))
    same(v2.ToImage()(rgb_array()), lambda: TF2.to_image(rgb_array()))
    same(v2.ToImage()(pil_gray()), lambda: TF2.to_image(pil_gray()))


def test_to_dtype_and_convert_image_dtype():
    u = chw_uint8()
    same(v2.ToDtype(ember.float32, scale=True)(ember.from_numpy(u)),
         lambda: TF2.to_dtype(tt(u), torch.float32, scale=True))
    same(v2.ToDtype(ember.float32)(ember.from_numpy(u)), lambda: TF2.to_dtype(tt(u), torch.float32))
    f = (u.astype(np.float32) / 255) ** 1.5
    same(T.ConvertImageDtype(ember.uint8)(ember.from_numpy(f)),
         lambda: TF.convert_image_dtype(tt(f), torch.uint8))
    same(F.convert_image_dtype(ember.from_numpy(u), ember.float64),
         lambda: TF.convert_image_dtype(tt(u), torch.float64))
    same(F.convert_image_dtype(ember.from_numpy(u), ember.int32), lambda: TF.convert_image_dtype(tt(u), torch.int32))


def test_normalize_bit_equal_plain_and_batched():
    x = chw_uint8(batch=2).astype(np.float32) / 255
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    same(T.Normalize(mean, std)(ember.from_numpy(x)), lambda: TF.normalize(tt(x), mean, std))
    same(F.normalize(ember.from_numpy(x[0]), [0.5], [0.25]), lambda: TF.normalize(tt(x[0]), [0.5], [0.25]))
    e = ember.from_numpy(x[0].copy())
    assert T.Normalize(mean, std, inplace=True)(e) is e


# ---- resize -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("size", [(7, 9), (20, 30), 8, [10], (13, 5)])
def test_resize_pil_and_numpy_bilinear_equal_pillow(size):
    same(F.resize(pil_rgb(), size), lambda: TF.resize(pil_rgb(), size))
    like_pil(T.Resize(size)(rgb_array()), T.Resize(size)(pil_rgb()))
    same(F.resize(pil_gray(), size, T.InterpolationMode.NEAREST),
         lambda: TF.resize(pil_gray(), size, TT.InterpolationMode.NEAREST))


def test_resize_max_size_and_bicubic_pil():
    same(T.Resize(8, max_size=10)(pil_rgb()), lambda: TT.Resize(8, max_size=10)(pil_rgb()))
    same(T.Resize((9, 11), T.InterpolationMode.BICUBIC)(pil_rgb()),
         lambda: TT.Resize((9, 11), TT.InterpolationMode.BICUBIC)(pil_rgb()))


@pytest.mark.parametrize("size", [(7, 9), (20, 30), 8, (13, 40)])
@pytest.mark.parametrize("antialias", [True, False])
def test_resize_tensor_bilinear_within_one_level(size, antialias):
    u = chw_uint8(batch=2)
    same(F.resize(ember.from_numpy(u), size, antialias=antialias),
         lambda: TF.resize(tt(u), size, antialias=antialias), atol=1)
    f = small_float()
    if np.prod(F._output_size(9, 11, F._check_size(size), None)) > 200:
        return  # float32 values are long in the golden file: the smaller sizes check the float path
    same(F.resize(ember.from_numpy(f), size, antialias=antialias),
         lambda: TF.resize(tt(f), size, antialias=antialias), atol=2e-6)


@pytest.mark.parametrize("size", [(7, 9), (20, 30), 5])
def test_resize_tensor_nearest_exact(size):
    u = chw_uint8()
    same(F.resize(ember.from_numpy(u), size, T.InterpolationMode.NEAREST),
         lambda: TF.resize(tt(u), size, TT.InterpolationMode.NEAREST))
    same(F.resize(ember.from_numpy(u), size, T.InterpolationMode.NEAREST_EXACT),
         lambda: TF.resize(tt(u), size, TT.InterpolationMode.NEAREST_EXACT))


# ---- crops, flips, pad, grayscale, erase -------------------------------------------------------------

@pytest.mark.parametrize("size", [(5, 7), 6, (13, 17), (16, 20), (4, 22)])
def test_center_crop_all_kinds(size):
    same(T.CenterCrop(size)(pil_rgb()), lambda: TF.center_crop(pil_rgb(), size))
    like_pil(T.CenterCrop(size)(rgb_array()), T.CenterCrop(size)(pil_rgb()))
    u = chw_uint8(batch=2)
    same(T.CenterCrop(size)(ember.from_numpy(u)), lambda: TF.center_crop(tt(u), size))


def test_crop_and_flips_all_kinds():
    for box in [(2, 3, 5, 6), (-2, 10, 6, 9)]:
        same(F.crop(pil_rgb(), *box), lambda: TF.crop(pil_rgb(), *box))
        like_pil(F.crop(rgb_array(), *box), F.crop(pil_rgb(), *box))
        same(F.crop(ember.from_numpy(chw_uint8()), *box), lambda: TF.crop(tt(chw_uint8()), *box))
    for ours, name in ((F.hflip, "hflip"), (F.vflip, "vflip")):
        theirs = lambda *a, name=name: getattr(TF, name)(*a)  # noqa: E731 (TF is None without torch)
        same(ours(pil_rgb()), lambda: theirs(pil_rgb()))
        like_pil(ours(rgb_array()), ours(pil_rgb()))
        f = small_float()
        same(ours(ember.from_numpy(f)), lambda: theirs(tt(f)))


@pytest.mark.parametrize("padding,fill,mode", [
    (2, 0, "constant"), ([1, 3], 7, "constant"), ([1, 2, 3, 4], (10, 20, 30), "constant"),
    (3, 0, "edge"), ([2, 1, 3, 4], 0, "reflect"), (4, 0, "symmetric"), ([-2, 1, 3, -1], 5, "constant")])
def test_pad_all_kinds(padding, fill, mode):
    same(T.Pad(padding, fill, mode)(pil_rgb()), lambda: TF.pad(pil_rgb(), padding, fill, mode))
    like_pil(T.Pad(padding, fill, mode)(rgb_array()), T.Pad(padding, fill, mode)(pil_rgb()))
    if not isinstance(fill, tuple):  # torchvision's tensor pad takes one fill value
        u = chw_uint8()
        same(T.Pad(padding, fill, mode)(ember.from_numpy(u)), lambda: TF.pad(tt(u), padding, fill, mode))
        f = small_float()
        same(F.pad(ember.from_numpy(f), padding, fill, mode), lambda: TF.pad(tt(f), padding, fill, mode))


@pytest.mark.parametrize("n", [1, 3])
def test_grayscale_all_kinds(n):
    same(T.Grayscale(n)(pil_rgb()), lambda: TF.rgb_to_grayscale(pil_rgb(), n))
    like_pil(T.Grayscale(n)(rgb_array()), T.Grayscale(n)(pil_rgb()))
    u = chw_uint8(batch=2)
    same(T.Grayscale(n)(ember.from_numpy(u)), lambda: TF.rgb_to_grayscale(tt(u), n))
    f = small_float()
    same(T.Grayscale(n)(ember.from_numpy(f)), lambda: TF.rgb_to_grayscale(tt(f), n))


def test_erase():
    f = small_float()
    same(F.erase(ember.from_numpy(f), 2, 3, 4, 5, 0.5), lambda: TF.erase(tt(f), 2, 3, 4, 5, torch.tensor(0.5)))


# ---- random classes: their draws replayed, and their statistics ----------------------------------------

def test_random_crop_replays_get_params():
    img = ember.from_numpy(chw_uint8())
    t = T.RandomCrop((9, 11), padding=2, padding_mode="reflect")
    for seed in range(5):
        ember.manual_seed(seed)
        out = t(img)
        ember.manual_seed(seed)
        i, j, h, w = T.RandomCrop.get_params(F.pad(img, 2, 0, "reflect"), (9, 11))
        want = F.crop(F.pad(img, 2, 0, "reflect"), i, j, h, w)
        np.testing.assert_array_equal(out.numpy(), want.numpy())
    # pad_if_needed grows a small image to the crop size
    assert T.RandomCrop((20, 30), pad_if_needed=True)(pil_rgb()).size == (30, 20)


def test_random_crop_offsets_cover_every_position_and_reproduce():
    t = T.RandomCrop(13, padding=2)  # 13 x 17 padded to 17 x 21: top in [0, 4], left in [0, 8]
    seen = set()
    ember.manual_seed(3)
    for _ in range(400):
        seen.add(T.RandomCrop.get_params(np.zeros((17, 21)), (13, 13))[:2])
    assert seen == {(i, j) for i in range(5) for j in range(9)}
    ember.manual_seed(9)
    a = t(pil_rgb())
    ember.manual_seed(9)
    assert np.array_equal(np.asarray(a), np.asarray(t(pil_rgb())))


def test_random_resized_crop_replays_and_boxes_follow_scale_and_ratio():
    t = T.RandomResizedCrop((8, 10), scale=(0.2, 0.9), ratio=(0.5, 2.0))
    ember.manual_seed(1)
    out = t(pil_rgb())
    ember.manual_seed(1)
    i, j, h, w = T.RandomResizedCrop.get_params(pil_rgb(), (0.2, 0.9), (0.5, 2.0))
    same(out, lambda: TF.resized_crop(pil_rgb(), i, j, h, w, [8, 10]))
    big = np.zeros((200, 300, 3), np.uint8)
    for _ in range(200):
        i, j, h, w = T.RandomResizedCrop.get_params(big, (0.2, 0.9), (0.5, 2.0))
        assert 0 <= i and i + h <= 200 and 0 <= j and j + w <= 300
        assert 0.19 <= h * w / 60000 <= 0.91 and 0.45 <= w / h <= 2.2
    # ten misses fall back to the centre crop of the allowed ratio
    assert T.RandomResizedCrop.get_params(np.zeros((10, 100)), (1.0, 1.0), (1.0, 1.0)) == (0, 45, 10, 10)


def test_flips_follow_p_and_the_seed():
    img = ember.from_numpy(chw_uint8())
    flipped = F.hflip(img).numpy()
    ember.manual_seed(0)
    n = sum(np.array_equal(T.RandomHorizontalFlip(0.3)(img).numpy(), flipped) for _ in range(1000))
    assert 240 < n < 360
    assert np.array_equal(np.asarray(T.RandomVerticalFlip(1.0)(pil_rgb())), np.asarray(pil_rgb())[::-1])
    assert T.RandomVerticalFlip(0.0)(img) is img


def test_random_erasing_replays_get_params_and_rejects_whole_image():
    x = ember.from_numpy(chw_uint8().astype(np.float32) / 255)
    t = T.RandomErasing(p=1.0, value=(0.1, 0.2, 0.3))
    ember.manual_seed(5)
    out = t(x)
    ember.manual_seed(5)
    ember.rand(1)  # the p draw comes first
    i, j, h, w, v = T.RandomErasing.get_params(x, t.scale, t.ratio, [0.1, 0.2, 0.3])
    np.testing.assert_array_equal(out.numpy(), F.erase(x, i, j, h, w, v).numpy())
    assert 0 < h < 13 and 0 < w < 17
    # a rectangle as tall as the image never counts: scale 1 gives the image's values back
    np.testing.assert_array_equal(T.RandomErasing(p=1.0, scale=(1.0, 1.0), ratio=(1.0, 1.0))(x).numpy(), x.numpy())
    noisy = T.RandomErasing(p=1.0, value="random")(x)
    assert noisy.shape == x.shape and not np.array_equal(noisy.numpy(), x.numpy())


def test_compose_lambda_and_v2_names():
    t = T.Compose([T.CenterCrop(9), T.Lambda(lambda im: F.hflip(im)), T.ToTensor(),
                   T.Normalize([0.5] * 3, [0.25] * 3)])
    same(t(pil_rgb()), lambda: TT.Compose([TT.CenterCrop(9), TT.Lambda(TF.hflip), TT.ToTensor(),
                                           TT.Normalize([0.5] * 3, [0.25] * 3)])(pil_rgb()))
    assert v2.RandomResizedCrop is T.RandomResizedCrop and v2.functional.resize is F.resize
    assert "Normalize" in repr(t)


# ---- bad input ---------------------------------------------------------------------------------------------

def test_bad_input_is_a_clear_error():
    with pytest.raises(TypeError, match="float tensor"):
        F.normalize(ember.from_numpy(chw_uint8()), [0.5], [0.5])
    with pytest.raises(ValueError, match="3 channels"):
        T.Normalize([0.5, 0.5], [0.2, 0.2])(ember.from_numpy(chw_uint8().astype(np.float32)))
    with pytest.raises(ValueError, match="std"):
        T.Normalize([0.5], [0.0])
    with pytest.raises(ValueError, match="positive"):
        T.Resize(-3)
    with pytest.raises(ValueError, match="positive"):
        T.CenterCrop((0, 4))
    with pytest.raises(TypeError, match="PIL Image"):
        F.hflip("an image")
    with pytest.raises(TypeError, match="pic should be PIL Image or ndarray"):
        T.ToTensor()([1, 2, 3])
    with pytest.raises(ValueError, match="Padding mode"):
        T.Pad(2, padding_mode="wrap")
    with pytest.raises(ValueError, match="probability"):
        T.RandomHorizontalFlip(1.5)
    with pytest.raises(TypeError, match="tensor"):
        T.RandomErasing(p=1.0)(pil_rgb())
    with pytest.raises(TypeError, match="permitted channel values"):
        F.rgb_to_grayscale(ember.from_numpy(chw_uint8(batch=2)[0][:2]))
    with pytest.raises(ValueError, match="larger than input image size"):
        T.RandomCrop(20)(pil_rgb())


# ---- the fused batch plan ------------------------------------------------------------------------------------

def _replay(transform, image, p):
    """The plan's drawn parameters applied with the Python ops, in the Compose's order."""
    x = image
    for t in transform.transforms:
        if isinstance(t, T.RandomResizedCrop):
            x = F.resized_crop(x, *p["box"], list(t.size))
        elif isinstance(t, T.RandomCrop):
            pad = p["padding"]
            if pad:
                x = F.pad(x, pad, 0, t.padding_mode)
            x = F.crop(x, p["crop_top"], p["crop_left"], *t.size)
        elif isinstance(t, T.RandomHorizontalFlip):
            x = F.hflip(x) if p["flip"] else x
        elif isinstance(t, T.RandomErasing):
            if p["erase"]:
                x = F.erase(x, p["erase_top"], p["erase_left"], p["erase_height"], p["erase_width"], 0.0)
        else:
            x = t(x)
    return x


CIFAR_TRAIN = [T.RandomCrop((13, 17), padding=4), T.RandomHorizontalFlip(), T.ToTensor(),
               T.Normalize((0.4914, 0.4822, 0.4465), (0.247, 0.243, 0.261)), T.RandomErasing(p=0.5)]


@pytest.mark.parametrize("steps,c", [
    (CIFAR_TRAIN, 3),
    ([T.RandomCrop((13, 17), padding=3, padding_mode="reflect"), T.RandomHorizontalFlip(0.7), T.PILToTensor(),
      v2.ToDtype(ember.float32, scale=True), T.Normalize([0.5], [0.3])], 3),
    ([T.ToTensor(), T.Normalize([0.1307], [0.3081])], 1),
    ([T.PILToTensor(), T.RandomHorizontalFlip(), T.RandomCrop((13, 17), padding=2)], 1),
    ([v2.ToImage(), T.RandomCrop((13, 17), padding=[1, 1, 1, 1]), T.RandomHorizontalFlip(),
      v2.ToDtype(ember.float32, scale=True), T.RandomErasing(p=1.0, scale=(0.05, 0.2))], 3),
    ([T.Resize(10), T.CenterCrop(8), T.RandomHorizontalFlip(), T.ToTensor(), T.Normalize([0.4], [0.2])], 3),
    ([T.Resize((20, 30)), T.CenterCrop((24, 26)), T.PILToTensor()], 1),
    ([T.RandomResizedCrop((9, 11), scale=(0.3, 1.0)), T.RandomHorizontalFlip(), T.ToTensor(),
      T.Normalize([0.5, 0.4, 0.3], [0.2, 0.3, 0.4]), T.RandomErasing(p=0.5)], 3),
    ([T.RandomResizedCrop(12), T.RandomCrop(12, padding=2), v2.ToImage(), v2.ToDtype(ember.float32, scale=True)], 1),
])
def test_batch_plan_equals_the_python_transforms_with_its_parameters(steps, c):
    # the flip-before-crop order is not fused (None) — the case that is here runs as crop then flip
    transform = T.Compose(steps)
    kinds = [type(s) for s in steps]
    plan = T.batch_plan(transform, c, 13, 17)
    if T.RandomHorizontalFlip in kinds and T.RandomCrop in kinds and \
            kinds.index(T.RandomHorizontalFlip) < kinds.index(T.RandomCrop):
        assert plan is None
        return
    assert plan is not None
    images = np.stack([rgb_array(c=c, seed=s) for s in range(6)])
    if c == 1:
        images = images[:, :, :, 0]
    indices = [5, 0, 3, 3, 1]
    out = plan.run(ember.from_numpy(images) if c == 1 else images, indices, seed=1234, epoch=2)
    assert tuple(out.shape) == (5, c, *plan.out_size)
    for b, i in enumerate(indices):
        pic = Image.fromarray(images[i])
        want = _replay(transform, pic, plan.params(i, seed=1234, epoch=2))
        assert out.dtype == want.dtype
        if {T.Resize, T.RandomResizedCrop} & set(kinds):
            # ember's C++ resize is Pillow's arithmetic, yet Pillow 13 rounds some two-pass resizes
            # (e.g. 13 x 10 -> 9 x 11) one level apart: within 1/255 of the Python path, as promised
            std = min(min(s.std) for s in steps if isinstance(s, T.Normalize)) if T.Normalize in kinds else 1.0
            level = 1.0 if out.dtype == ember.uint8 else 1.0 / 255 / std
            np.testing.assert_allclose(out[b].numpy().astype(np.float64), want.numpy().astype(np.float64),
                                       atol=level * 1.0001, rtol=0)
        else:
            np.testing.assert_array_equal(out[b].numpy(), want.numpy())


def test_batch_plan_draws_are_stateless_and_thread_count_free():
    plan = T.batch_plan(T.Compose(CIFAR_TRAIN), 3, 13, 17)
    images = np.stack([rgb_array(seed=s) for s in range(40)])
    idx = list(range(39, -1, -1))
    before = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        one = plan.run(images, idx, seed=7, epoch=0).numpy()
        ember.set_num_threads(4)
        four = plan.run(images, idx, seed=7, epoch=0).numpy()
    finally:
        ember.set_num_threads(before)
    np.testing.assert_array_equal(one, four)
    again = plan.run(images, idx[:3], seed=7, epoch=0).numpy()
    np.testing.assert_array_equal(again, one[:3])
    other_epoch = plan.run(images, idx, seed=7, epoch=1).numpy()
    assert not np.array_equal(other_epoch, one)
    flips = sum(plan.params(i, seed=7, epoch=0)["flip"] for i in range(2000))
    assert 880 < flips < 1120


def test_batch_plan_refuses_what_it_cannot_fuse():
    assert T.batch_plan(T.Compose([T.ToTensor(), T.Lambda(lambda x: x)]), 3, 13, 17) is None
    assert T.batch_plan(T.Compose([T.RandomCrop(16, padding=4), T.ToTensor()]), 3, 13, 17) is None  # size
    assert T.batch_plan(T.Compose([T.RandomCrop(17, padding=4, fill=3), T.ToTensor()]), 3, 13, 17) is None
    assert T.batch_plan(T.Compose([T.RandomCrop(17)]), 3, 13, 17) is None  # still a PIL image
    assert T.batch_plan(T.Compose([T.ToTensor(), T.RandomErasing(), T.Normalize([0.5], [0.5])]), 3, 13, 17) is None
    assert T.batch_plan(T.Compose([T.ToTensor(), T.Normalize([0.5] * 2, [0.5] * 2)]), 3, 13, 17) is None
    assert T.batch_plan(T.ToTensor(), 1, 28, 28) is not None
    # a resize after the conversion is torch's arithmetic, not Pillow's: not fused
    assert T.batch_plan(T.Compose([T.ToTensor(), T.Resize(8)]), 3, 13, 17) is None
    assert T.batch_plan(T.Compose([T.Resize(8, T.InterpolationMode.BICUBIC), T.ToTensor()]), 3, 13, 17) is None
    assert T.batch_plan(T.Compose([T.RandomHorizontalFlip(), T.CenterCrop(8), T.ToTensor()]), 3, 13, 17) is None
    with pytest.raises(ValueError, match="height"):
        T.batch_plan(T.ToTensor(), 1, -28, 28)
    plan = T.batch_plan(T.ToTensor(), 3, 13, 17)
    with pytest.raises(ValueError, match="do not match"):
        plan.run(np.zeros((4, 13, 17), np.uint8), [0], 0, 0)
    with pytest.raises(TypeError, match="uint8"):
        plan.run(np.zeros((4, 13, 17, 3), np.float32), [0], 0, 0)
    with pytest.raises(ValueError, match="outside the 4 images"):
        plan.run(np.zeros((4, 13, 17, 3), np.uint8), [4], 0, 0)


# ---- blur and the transforms that choose transforms ----------------------------------------------------

@pytest.mark.parametrize("ks,sigma", [(3, 1.0), ((5, 3), (0.8, 1.5)), (5, None)])
def test_gaussian_blur_all_kinds(ks, sigma):
    same(F.gaussian_blur(pil_rgb(), ks, sigma), lambda: TF.gaussian_blur(pil_rgb(), ks, sigma), atol=1)
    like_pil(F.gaussian_blur(rgb_array(), ks, sigma), F.gaussian_blur(pil_rgb(), ks, sigma))
    u = chw_uint8(batch=2)
    same(F.gaussian_blur(ember.from_numpy(u), ks, sigma), lambda: TF.gaussian_blur(tt(u), ks, sigma), atol=1)
    f = small_float()
    same(F.gaussian_blur(ember.from_numpy(f), ks, sigma), lambda: TF.gaussian_blur(tt(f), ks, sigma), atol=2e-6)


def test_gaussian_blur_class_replays_its_sigma():
    t = T.GaussianBlur(5, sigma=(0.5, 3.0))
    x = ember.from_numpy(chw_uint8().astype(np.float32) / 255)
    ember.manual_seed(4)
    out = t(x)
    ember.manual_seed(4)
    s = T.GaussianBlur.get_params(0.5, 3.0)
    assert 0.5 <= s <= 3.0
    np.testing.assert_array_equal(out.numpy(), F.gaussian_blur(x, [5, 5], [s, s]).numpy())
    with pytest.raises(ValueError, match="odd and positive"):
        T.GaussianBlur(4)


def test_random_apply_choice_order():
    img = ember.from_numpy(chw_uint8())
    flipped = F.hflip(img).numpy()
    assert np.array_equal(T.RandomApply([T.RandomHorizontalFlip(1.0)], p=1.0)(img).numpy(), flipped)
    assert T.RandomApply([T.RandomHorizontalFlip(1.0)], p=0.0)(img) is img
    ember.manual_seed(2)
    n = sum(np.array_equal(T.RandomApply([T.RandomHorizontalFlip(1.0)], p=0.25)(img).numpy(), flipped)
            for _ in range(800))
    assert 150 < n < 250
    picks = [T.RandomChoice([lambda x: 0, lambda x: 1, lambda x: 2], p=[1, 0, 3])(img) for _ in range(800)]
    assert picks.count(1) == 0 and 150 < picks.count(0) < 250
    orders = {tuple(T.RandomOrder([lambda x: x + [0], lambda x: x + [1], lambda x: x + [2]])([])) for _ in range(200)}
    assert len(orders) == 6
    with pytest.raises(ValueError, match="one non-negative weight per transform"):
        T.RandomChoice([F.hflip, F.vflip], p=[1.0])


# ---- colour ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("op,factor", [("adjust_brightness", 1.4), ("adjust_brightness", 0.6),
                                       ("adjust_contrast", 1.7), ("adjust_contrast", 0.3),
                                       ("adjust_saturation", 1.8), ("adjust_saturation", 0.2),
                                       ("adjust_hue", 0.2), ("adjust_hue", -0.37)])
def test_color_adjustments_all_kinds(op, factor):
    ours, theirs = getattr(F, op), lambda *a: getattr(TF, op)(*a)
    same(ours(pil_rgb(), factor), lambda: theirs(pil_rgb(), factor))
    like_pil(ours(rgb_array(), factor), ours(pil_rgb(), factor))
    u = chw_uint8()
    same(ours(ember.from_numpy(u), factor), lambda: theirs(tt(u), factor), atol=1)
    f = small_float()
    same(ours(ember.from_numpy(f), factor), lambda: theirs(tt(f), factor), atol=2e-6)
    if op != "adjust_hue":
        same(ours(pil_gray(), factor), lambda: theirs(pil_gray(), factor))


def test_color_jitter_replays_get_params():
    t = T.ColorJitter(brightness=0.4, contrast=(0.5, 1.5), saturation=0.3, hue=0.1)
    for seed in range(4):
        ember.manual_seed(seed)
        out = t(pil_rgb())
        ember.manual_seed(seed)
        order, b, c, s, h = T.ColorJitter.get_params(t.brightness, t.contrast, t.saturation, t.hue)
        assert sorted(order) == [0, 1, 2, 3] and 0.6 <= b <= 1.4 and 0.5 <= c <= 1.5 and -0.1 <= h <= 0.1
        img = pil_rgb()
        for k in order:
            img = [lambda x: F.adjust_brightness(x, b), lambda x: F.adjust_contrast(x, c),
                   lambda x: F.adjust_saturation(x, s), lambda x: F.adjust_hue(x, h)][k](img)
        assert np.array_equal(np.asarray(out), np.asarray(img))
    assert T.ColorJitter().brightness is None
    with pytest.raises(ValueError, match="hue values should be between"):
        T.ColorJitter(hue=0.7)
    with pytest.raises(ValueError, match="non negative"):
        T.ColorJitter(brightness=-1)


# ---- rotation and affine ------------------------------------------------------------------------------------

AFFINES = [(23.0, [2, -1], 1.1, [10.0, 0.0], None), (-47.5, [0, 3], 0.8, [-5.0, 12.0], 7),
           (90.0, [0, 0], 1.0, [0.0, 0.0], None), (13.0, [1, 1], 1.3, [0.0, 0.0], (3, 200, 40))]


@pytest.mark.parametrize("angle,translate,scale,shear,fill", AFFINES)
@pytest.mark.parametrize("mode", ["nearest", "bilinear"])
def test_affine_all_kinds(angle, translate, scale, shear, fill, mode):
    ours_mode, their_mode = T.InterpolationMode(mode), TT.InterpolationMode(mode) if TT else None
    args = (angle, translate, scale, shear)
    same(F.affine(pil_rgb(), *args, ours_mode, fill), lambda: TF.affine(pil_rgb(), *args, their_mode, fill))
    like_pil(F.affine(rgb_array(), *args, ours_mode, fill), F.affine(pil_rgb(), *args, ours_mode, fill))
    u = chw_uint8()
    tfill = list(fill) if isinstance(fill, tuple) else fill
    same(F.affine(ember.from_numpy(u), *args, ours_mode, tfill),
         lambda: TF.affine(tt(u), *args, their_mode, tfill), atol=1)
    f = small_float()
    same(F.affine(ember.from_numpy(f), *args, ours_mode, [0.5] * 3 if fill else None),
         lambda: TF.affine(tt(f), *args, their_mode, [0.5] * 3 if fill else None), atol=1e-5)


@pytest.mark.parametrize("angle,expand,center", [(33.0, False, None), (-71.0, True, None), (15.0, False, [3, 4]),
                                                 (120.0, True, None)])
def test_rotate_all_kinds(angle, expand, center):
    same(F.rotate(pil_rgb(), angle, expand=expand, center=center),
         lambda: TF.rotate(pil_rgb(), angle, expand=expand, center=center))
    u = chw_uint8()
    same(F.rotate(ember.from_numpy(u), angle, expand=expand, center=center, fill=[0.0] * 3),
         lambda: TF.rotate(tt(u), angle, expand=expand, center=center, fill=[0.0] * 3), atol=1)
    f = small_float()
    same(F.rotate(ember.from_numpy(f), angle, T.InterpolationMode.BILINEAR, expand=expand, center=center),
         lambda: TF.rotate(tt(f), angle, TT.InterpolationMode.BILINEAR, expand=expand, center=center), atol=1e-5)


def test_random_rotation_and_affine_replay_get_params():
    x = ember.from_numpy(chw_uint8())
    t = T.RandomRotation(30, fill=5)
    ember.manual_seed(8)
    out = t(x)
    ember.manual_seed(8)
    angle = T.RandomRotation.get_params(t.degrees)
    assert -30 <= angle <= 30
    np.testing.assert_array_equal(out.numpy(), F.rotate(x, angle, fill=[5.0] * 3).numpy())
    a = T.RandomAffine(20, translate=(0.2, 0.1), scale=(0.8, 1.2), shear=(-5, 5, -3, 3))
    ember.manual_seed(9)
    out = a(pil_rgb())
    ember.manual_seed(9)
    angle, tr, sc, sh = T.RandomAffine.get_params(a.degrees, a.translate, a.scale, a.shear, [17, 13])
    assert abs(tr[0]) <= 3.4 and abs(tr[1]) <= 1.3 and 0.8 <= sc <= 1.2 and -3 <= sh[1] <= 3
    assert np.array_equal(np.asarray(out), np.asarray(F.affine(pil_rgb(), angle, list(tr), sc, list(sh))))
    with pytest.raises(ValueError, match="translation values should be between 0 and 1"):
        T.RandomAffine(0, translate=(1.5, 0))
    with pytest.raises(ValueError, match="must be positive"):
        T.RandomRotation(-3)


# ---- augmentation policies ----------------------------------------------------------------------------------

@pytest.mark.parametrize("op,args", [("invert", ()), ("posterize", (3,)), ("solarize", (100,)),
                                     ("adjust_sharpness", (1.8,)), ("adjust_sharpness", (0.3,)),
                                     ("autocontrast", ()), ("equalize", ())])
def test_policy_ops_all_kinds(op, args):
    ours, theirs = getattr(F, op), lambda *a: getattr(TF, op)(*a)
    same(ours(pil_rgb(), *args), lambda: theirs(pil_rgb(), *args))
    like_pil(ours(rgb_array(), *args), ours(pil_rgb(), *args))
    low = (rgb_array() // 3 + 40).astype(np.uint8)  # a narrow range: autocontrast and equalize have work
    same(ours(low, *args), lambda: theirs(Image.fromarray(low), *args))
    u = chw_uint8(batch=2)
    u[1] = u[1] // 4 + 10
    same(ours(ember.from_numpy(u), *args), lambda: theirs(tt(u), *args), atol=1)
    if op not in ("posterize", "equalize"):
        f = small_float()
        a2 = (0.4,) if op == "solarize" else args
        same(ours(ember.from_numpy(f), *a2), lambda: theirs(tt(f), *a2), atol=2e-6)


OPS = [("Identity", 0.0), ("ShearX", 0.3), ("ShearY", -0.5), ("TranslateX", 5.0), ("TranslateY", -3.0),
       ("Rotate", 40.0), ("Brightness", 0.5), ("Color", -0.6), ("Contrast", 0.7), ("Sharpness", 0.9),
       ("Posterize", 4.0), ("Solarize", 128.0), ("AutoContrast", 0.0), ("Equalize", 0.0)]


@pytest.mark.parametrize("op_name,magnitude", OPS)
def test_augmentation_ops_equal_torchvisions(op_name, magnitude):
    from ember.vision.transforms.transforms import _apply_op

    def theirs(img, fill):
        from torchvision.transforms.autoaugment import _apply_op as tv_apply_op
        return tv_apply_op(img, op_name, magnitude, TT.InterpolationMode.NEAREST, fill)

    same(_apply_op(pil_rgb(), op_name, magnitude, T.InterpolationMode.NEAREST, None),
         lambda: theirs(pil_rgb(), None))
    u = chw_uint8()
    same(_apply_op(ember.from_numpy(u), op_name, magnitude, T.InterpolationMode.NEAREST, [7.0] * 3),
         lambda: theirs(tt(u), [7.0] * 3), atol=1)


def test_trivial_augment_and_rand_augment_replay_and_spaces():
    t = T.TrivialAugmentWide()
    names = set()
    for seed in range(40):
        ember.manual_seed(seed)
        out = t(pil_rgb())
        ember.manual_seed(seed)
        op_name, magnitude = t.get_params()
        names.add(op_name)
        from ember.vision.transforms.transforms import _apply_op
        want = _apply_op(pil_rgb(), op_name, magnitude, T.InterpolationMode.NEAREST, None)
        assert np.array_equal(np.asarray(out), np.asarray(want)), (op_name, magnitude)
    assert len(names) >= 10
    r = T.RandAugment(num_ops=3, magnitude=12)
    x = ember.from_numpy(chw_uint8())
    ember.manual_seed(3)
    out = r(x)
    ember.manual_seed(3)
    want = x
    for op_name, magnitude in r.get_params((13, 17)):
        want = _apply_op(want, op_name, magnitude, T.InterpolationMode.NEAREST, None)
    np.testing.assert_array_equal(out.numpy(), want.numpy())
    # the magnitude bins are torchvision's
    space = t._augmentation_space(31)
    for name, (mags, signed) in space.items():
        ref = golden.reference(lambda: torch.tensor([0.0]) if name in ("Identity", "AutoContrast", "Equalize") else
                               TT.TrivialAugmentWide()._augmentation_space(31)[name][0].float())
        np.testing.assert_allclose(mags if mags is not None else [0.0], ref["values"], rtol=1e-6)
    ref = golden.reference(lambda: TT.RandAugment()._augmentation_space(31, (13, 17))["TranslateX"][0].float())
    np.testing.assert_allclose(r._augmentation_space(31, (13, 17))["TranslateX"][0], ref["values"], rtol=1e-6)
    with pytest.raises(TypeError, match="uint8"):
        T.RandomEqualize(1.0)(ember.from_numpy(chw_uint8().astype(np.float32)))


def test_zz_write_goldens():
    golden.write()
