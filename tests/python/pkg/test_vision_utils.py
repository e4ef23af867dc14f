"""ember.vision.utils against torchvision.utils (issue 47): make_grid equals torchvision's for every
layout (batch, list, single image, grey, partial last row, padding, pad_value, normalize with and
without value_range, scale_each); save_image writes a PNG whose pixels, read by Pillow, are those of
torchvision's file, to a path or a file object; a JPEG decodes to the pixels of torchvision's JPEG;
other formats are refused.
torchvision's side comes from torchvision, or from tests/python/golden/vision_utils.json without it."""

import io

import numpy as np
import pytest

import ember
from ember.vision import utils
from torch_golden import Golden, torch

golden = Golden("vision_utils.json")

try:
    import torchvision
except ImportError:
    torchvision = None

Image = pytest.importorskip("PIL.Image")


@pytest.fixture(autouse=True)
def _case_keys(request):
    golden.start(request.node.nodeid)


def images(*shape, seed=0, low=0.0, high=1.0):
    return np.random.RandomState(seed).uniform(low, high, size=shape).astype(np.float32)


GRID_CASES = {
    "batch_of_5_nrow_2": (lambda: images(5, 3, 6, 7), dict(nrow=2)),
    "batch_of_16_default": (lambda: images(16, 3, 4, 4), {}),
    "grey_batch_padding_0": (lambda: images(3, 1, 5, 5), dict(padding=0)),
    "single_image": (lambda: images(3, 8, 9), {}),
    "single_grey_2d": (lambda: images(6, 5), {}),
    "batch_of_1": (lambda: images(1, 3, 4, 5), {}),
    "pad_value_and_padding_3": (lambda: images(4, 3, 5, 4), dict(padding=3, pad_value=0.7, nrow=3)),
    "normalize": (lambda: images(4, 3, 5, 5, low=-2, high=3), dict(normalize=True)),
    "normalize_value_range": (lambda: images(4, 3, 5, 5, low=-2, high=3), dict(normalize=True, value_range=(-1, 1))),
    "normalize_scale_each": (lambda: images(4, 3, 5, 5, low=-2, high=3) * np.arange(1, 5, dtype=np.float32)[:, None,
                                                                                                           None, None],
                             dict(normalize=True, scale_each=True, nrow=3)),
    "rgba": (lambda: images(3, 4, 5, 5), dict(nrow=2)),
}


@pytest.mark.parametrize("case", sorted(GRID_CASES))
def test_make_grid_equals_torchvisions(case):
    make, kwargs = GRID_CASES[case]
    x = make()
    ours = utils.make_grid(ember.from_numpy(x.copy()), **kwargs)
    golden.same(ours, lambda: torchvision.utils.make_grid(torch.from_numpy(x.copy()), **kwargs), atol=1e-6, rtol=1e-6)


def test_make_grid_of_a_list_and_its_errors():
    x = images(3, 3, 4, 4)
    from_list = utils.make_grid([ember.from_numpy(x[i].copy()) for i in range(3)], nrow=2)
    assert ember.equal(from_list, utils.make_grid(ember.from_numpy(x), nrow=2))
    with pytest.raises(TypeError, match="tensor or list of tensors expected"):
        utils.make_grid(x)
    with pytest.raises(TypeError, match="list containing"):
        utils.make_grid([ember.from_numpy(x[0].copy()), x[1]])
    with pytest.raises(TypeError, match="value_range has to be a tuple"):
        utils.make_grid(ember.from_numpy(x), normalize=True, value_range=[0, 1])


def test_make_grid_is_differentiable():
    x = ember.rand([3, 3, 4, 4], requires_grad=True)
    utils.make_grid(x, nrow=2, pad_value=0.5).sum().backward()
    assert ember.equal(x.grad, ember.ones_like(x))


def torchvision_file_pixels(x, kwargs, format="png"):
    def run():
        buf = io.BytesIO()
        torchvision.utils.save_image(torch.from_numpy(x.copy()), buf, format=format, **kwargs)
        return torch.from_numpy(np.asarray(Image.open(io.BytesIO(buf.getvalue()))).copy())
    return run


SAVE_CASES = {
    "rgb_grid": (lambda: images(5, 3, 6, 7), dict(nrow=3)),
    "grey_single": (lambda: images(1, 9, 11), {}),
    "out_of_range_values": (lambda: images(4, 3, 5, 5, low=-0.5, high=1.5), dict(padding=1)),
    "normalized": (lambda: images(4, 3, 5, 5, low=-2, high=3), dict(normalize=True)),
    "rgba": (lambda: images(2, 4, 6, 6), {}),
    "grey_alpha": (lambda: images(2, 6, 6), {}),
}


@pytest.mark.parametrize("case", sorted(SAVE_CASES))
def test_save_image_writes_torchvisions_pixels(case, tmp_path):
    make, kwargs = SAVE_CASES[case]
    x = make()
    path = tmp_path / "out.png"
    utils.save_image(ember.from_numpy(x.copy()), path, **kwargs)
    with Image.open(path) as im:
        assert im.format == "PNG"
        ours = np.asarray(im).copy()
    ref = golden.reference(torchvision_file_pixels(x, kwargs))
    expected = np.asarray(ref["values"], dtype=np.uint8).reshape(ref["shape"])
    np.testing.assert_array_equal(ours, expected)


@pytest.mark.parametrize("case", ["rgb_grid", "grey_single", "out_of_range_values"])
def test_save_image_as_jpeg_decodes_to_torchvisions_pixels(case, tmp_path):
    """A JPEG is lossy, but encoded with Pillow's defaults (quality 75, 4:2:0, standard tables) the file
    Pillow decodes gives the pixels of torchvision's file."""
    make, kwargs = SAVE_CASES[case]
    x = make()
    path = tmp_path / "out.jpg"
    utils.save_image(ember.from_numpy(x.copy()), path, **kwargs)
    with Image.open(path) as im:
        assert im.format == "JPEG" and im.mode == "RGB"
        ours = np.asarray(im).astype(np.int16)
    ref = golden.reference(torchvision_file_pixels(x, kwargs, "jpeg"))
    expected = np.asarray(ref["values"], dtype=np.int16).reshape(ref["shape"])
    assert ours.shape == expected.shape
    assert np.abs(ours - expected).max() <= 1, "libjpeg-turbo builds may round the last bit differently"
    buf = io.BytesIO()
    utils.save_image(ember.from_numpy(x.copy()), buf, format="JPEG", **kwargs)
    assert buf.getvalue() == path.read_bytes()


def test_save_image_to_a_file_object_and_format(tmp_path):
    x = ember.from_numpy(images(4, 3, 5, 5))
    utils.save_image(x, tmp_path / "a.png")
    buf = io.BytesIO()
    utils.save_image(x, buf, format="png")
    assert buf.getvalue() == (tmp_path / "a.png").read_bytes()
    with open(tmp_path / "b.png", "wb") as f:  # a file object's name gives the format, as in Pillow
        utils.save_image(x, f)
    assert (tmp_path / "b.png").read_bytes() == buf.getvalue()
    utils.save_image(x, str(tmp_path / "c.data"), format="PNG")
    assert (tmp_path / "c.data").read_bytes() == buf.getvalue()


def test_save_image_refuses_what_it_does_not_write(tmp_path):
    x = ember.from_numpy(images(2, 3, 4, 4))
    with pytest.raises(ValueError, match="ember writes PNG and JPEG files only, not BMP"):
        utils.save_image(x, tmp_path / "a.bmp")
    with pytest.raises(ValueError, match="not WEBP"):
        utils.save_image(x, io.BytesIO(), format="webp")
    with pytest.raises(OSError, match="cannot write mode RGBA as JPEG"):
        utils.save_image(ember.from_numpy(images(2, 4, 4, 4)), tmp_path / "a.jpg")
    with pytest.raises(ValueError, match="unknown file extension"):
        utils.save_image(x, io.BytesIO())
    with pytest.raises(ValueError, match="unknown file extension: '.xyz'"):
        utils.save_image(x, tmp_path / "a.xyz")
    with pytest.raises(TypeError, match="5 channels"):
        utils.save_image(ember.from_numpy(images(2, 5, 4, 4)), tmp_path / "a.png")
    assert not list(tmp_path.iterdir()), "nothing is written when the format or the image is refused"


def test_zz_write_goldens():
    """Writes torchvision's side of every comparison above (run last, with EMBER_WRITE_TORCH_GOLDENS=1)."""
    golden.write()
