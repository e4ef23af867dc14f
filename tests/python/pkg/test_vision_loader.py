"""The DataLoader's C++ path (python/ember/utils/data/_fused.py): a built-in dataset of ember.vision
with a transform batch_plan fuses is batched by one C++ call per batch. Its batches equal the Python
path's for deterministic transforms, are reproducible under ember.manual_seed for random ones, start
no worker process, and anything a user wrote (a __getitem__ override, a target_transform, a
collate_fn, a worker_init_fn, a Lambda) sends the loader back to the Python path."""

import numpy as np
import pytest

import ember
from ember.utils.data import DataLoader
from ember.utils.data._fused import _FusedIterator
from ember.vision import datasets, transforms as T
from test_vision_datasets import write_cifar_python, write_mnist

MNIST_TF = T.Compose([T.ToTensor(), T.Normalize((0.1307,), (0.3081,))])


def python_batches(ds, batch_size):
    """What the Python path gives: each item through ds[i], stacked."""
    items = [ds[i] for i in range(len(ds))]
    out = []
    for s in range(0, len(items), batch_size):
        chunk = items[s:s + batch_size]
        out.append((np.stack([np.asarray(x.numpy()) for x, _ in chunk]), [t for _, t in chunk]))
    return out


@pytest.fixture
def mnist(tmp_path):
    for folder in ("MNIST", "Doubled"):  # torchvision's raw folder is named after the class
        write_mnist(tmp_path / folder / "raw", n_train=70, n_test=9)
    return tmp_path


def test_mnist_batches_equal_the_python_paths_bit_for_bit(mnist):
    ds = datasets.MNIST(mnist, train=True, transform=MNIST_TF)
    loader = DataLoader(ds, batch_size=32, shuffle=False)
    it = iter(loader)
    assert isinstance(it, _FusedIterator) and len(it) == 3
    fused = list(it)
    ref = python_batches(ds, 32)
    assert [tuple(x.shape) for x, _ in fused] == [(32, 1, 28, 28), (32, 1, 28, 28), (6, 1, 28, 28)]
    for (x, y), (rx, ry) in zip(fused, ref):
        assert x.dtype == ember.float32 and y.dtype == ember.int64
        np.testing.assert_array_equal(x.numpy(), rx)
        assert y.numpy().tolist() == ry


def test_cifar_random_crop_flip_is_reproducible_and_differs_by_epoch(tmp_path):
    write_cifar_python(tmp_path)
    tf = T.Compose([T.RandomCrop(32, padding=4), T.RandomHorizontalFlip(), T.ToTensor(),
                    T.Normalize((0.49, 0.48, 0.45), (0.25, 0.24, 0.26))])
    ds = datasets.CIFAR10(tmp_path, train=True, transform=tf)

    def two_epochs():
        ember.manual_seed(3)
        loader = DataLoader(ds, batch_size=4, shuffle=True)
        return [[(x.numpy(), y.numpy()) for x, y in loader] for _ in range(2)]

    a, b = two_epochs(), two_epochs()
    for ea, eb in zip(a, b):
        for (xa, ya), (xb, yb) in zip(ea, eb):
            np.testing.assert_array_equal(xa, xb)
            np.testing.assert_array_equal(ya, yb)
    assert a[0][0][0].shape == (4, 3, 32, 32)
    assert not all(np.array_equal(x0, x1) for (x0, _), (x1, _) in zip(a[0], a[1]))
    # every sample is one of its image's crops: the labels follow the sampler's order
    labels = np.concatenate([y for _, y in a[0][:3]])
    assert sorted(labels.tolist()) == sorted(ds.targets)


def test_workers_are_not_started_on_the_fused_path(mnist):
    ds = datasets.MNIST(mnist, transform=MNIST_TF)
    it = iter(DataLoader(ds, batch_size=16, shuffle=True, num_workers=2))
    assert isinstance(it, _FusedIterator)
    assert sum(int(x.shape[0]) for x, _ in it) == 70


class Doubled(datasets.MNIST):
    def __getitem__(self, index):
        img, target = super().__getitem__(index)
        return img * 2, target


@pytest.mark.parametrize("case", ["override", "target_transform", "collate_fn", "worker_init_fn", "lambda"])
def test_anything_a_user_wrote_takes_the_python_path(mnist, case):
    kwargs, ds = {}, None
    if case == "override":
        ds = Doubled(mnist, transform=MNIST_TF)
    elif case == "target_transform":
        ds = datasets.MNIST(mnist, transform=MNIST_TF, target_transform=lambda t: t + 1)
    elif case == "lambda":
        ds = datasets.MNIST(mnist, transform=T.Compose([T.ToTensor(), T.Lambda(lambda x: x * 3)]))
    else:
        ds = datasets.MNIST(mnist, transform=MNIST_TF)
        kwargs = {"collate_fn": lambda b: b} if case == "collate_fn" else {"worker_init_fn": lambda w: None,
                                                                           "num_workers": 1}
    it = iter(DataLoader(ds, batch_size=8, **kwargs))
    assert not isinstance(it, _FusedIterator)
    first = next(it)
    if case == "override":
        plain = datasets.MNIST(mnist, transform=MNIST_TF)[0][0]
        np.testing.assert_array_equal(first[0].numpy()[0], 2 * plain.numpy())
    if case == "target_transform":
        assert first[1].numpy().tolist() == [int(t) + 1 for t in ds.targets[:8]]


# ImageFolder on the C++ path: the files decoded by ember's decoders (data::transform_files).
IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


@pytest.fixture
def photo_folder(tmp_path):
    """Two classes of JPEGs and PNGs of different sizes, written by PIL from a seeded pattern."""
    from PIL import Image
    rng = np.random.default_rng(5)
    sizes = [(37, 52), (60, 45), (48, 48), (33, 71), (80, 41), (45, 39), (52, 64)]
    for i, (h, w) in enumerate(sizes):
        yy, xx = np.mgrid[0:h, 0:w]
        px = np.stack([xx * 5 + i * 20, yy * 4, (xx * yy) % 256], -1) + rng.integers(0, 40, (h, w, 3))
        img = Image.fromarray((px % 256).astype(np.uint8))
        d = tmp_path / f"class{i % 2}"
        d.mkdir(exist_ok=True)
        if i % 2:
            img.save(d / f"p{i}.png")
        else:
            img.save(d / f"p{i}.jpg", quality=90)
    return tmp_path


def test_image_folder_resize_crop_batches_equal_the_python_paths_within_1_over_255(photo_folder):
    tf = T.Compose([T.Resize(40), T.CenterCrop(32), T.ToTensor(), T.Normalize(IMAGENET_MEAN, IMAGENET_STD)])
    ds = datasets.ImageFolder(photo_folder, transform=tf)
    it = iter(DataLoader(ds, batch_size=3, shuffle=False, num_workers=2))
    assert isinstance(it, _FusedIterator) and len(it) == 3
    fused = list(it)
    ref = python_batches(ds, 3)
    assert [tuple(x.shape) for x, _ in fused] == [(3, 3, 32, 32), (3, 3, 32, 32), (1, 3, 32, 32)]
    std = np.asarray(IMAGENET_STD, dtype=np.float32).reshape(1, 3, 1, 1)
    for (x, y), (rx, ry) in zip(fused, ref):
        assert x.dtype == ember.float32 and y.numpy().tolist() == ry
        # The decoders give Pillow's pixels and photo_transforms.h is Pillow's resize arithmetic, so
        # this is bit-equal here; the bound is 1/255 of a pixel because another libjpeg-turbo build
        # (Pillow's wheel bundles its own) may round an IDCT step differently.
        diff = np.abs(x.numpy() - rx) * std
        assert diff.max() <= 1 / 255 + 1e-6, diff.max()


def test_image_folder_random_resized_crop_is_reproducible_and_replayable(photo_folder):
    from PIL import Image
    tf = T.Compose([T.RandomResizedCrop(24), T.RandomHorizontalFlip(), T.ToTensor()])
    ds = datasets.ImageFolder(photo_folder, transform=tf)

    def epoch():
        ember.manual_seed(11)
        it = iter(DataLoader(ds, batch_size=4, shuffle=True))
        assert isinstance(it, _FusedIterator)
        return it, [(x.numpy(), y.numpy()) for x, y in it]

    (it_a, a), (_, b) = epoch(), epoch()
    for (xa, ya), (xb, yb) in zip(a, b):
        np.testing.assert_array_equal(xa, xb)
        np.testing.assert_array_equal(ya, yb)
    # each sample replays from the plan's parameters with functional's ops on the PIL image
    plan = T.batch_plan(tf)
    assert plan is not None and plan.for_files
    seed, ep = it_a._seed, it_a._epoch
    for i in range(len(ds)):
        img = Image.open(ds.samples[i][0]).convert("RGB")
        p = plan.params(i, seed, ep, image_size=(img.height, img.width))
        top, left, h, w = p["box"]
        want = T.functional.resized_crop(img, top, left, h, w, [24, 24])
        if p["flip"]:
            want = T.functional.hflip(want)
        got = plan.run_files([ds.samples[i][0]], [i], seed, ep).numpy()[0]
        diff = np.abs(got - np.asarray(T.functional.to_tensor(want).numpy()))
        assert diff.max() <= 1 / 255 + 1e-6, (i, diff.max())


def test_a_corrupt_file_is_an_oserror_naming_it(photo_folder):
    (photo_folder / "class0" / "broken.jpg").write_bytes(b"not a picture")
    tf = T.Compose([T.Resize(40), T.CenterCrop(32), T.ToTensor()])
    ds = datasets.ImageFolder(photo_folder, transform=tf)
    it = iter(DataLoader(ds, batch_size=8))
    assert isinstance(it, _FusedIterator)
    with pytest.raises(OSError, match="broken.jpg") as fused_error:
        list(it)
    from PIL import UnidentifiedImageError
    assert isinstance(fused_error.value, UnidentifiedImageError)
    with pytest.raises(OSError, match="broken.jpg"):  # what the Python path (PIL) raises
        ds.loader(ds.samples[[p for p, _ in ds.samples].index(str(photo_folder / "class0" / "broken.jpg"))][0])


@pytest.mark.parametrize("case", ["custom_loader", "resize_only", "target_transform", "tiff"])
def test_image_folder_with_what_a_user_wrote_or_a_variable_size_takes_the_python_path(photo_folder, case):
    from PIL import Image
    tf = T.Compose([T.Resize(40), T.CenterCrop(32), T.ToTensor()])
    kwargs = {}
    if case == "custom_loader":
        kwargs["loader"] = lambda path: Image.open(path).convert("RGB").rotate(90)
    elif case == "target_transform":
        kwargs["target_transform"] = lambda t: t + 10
    elif case == "tiff":  # PIL reads TIFF, ember's decoders do not
        Image.new("RGB", (50, 40), (10, 200, 30)).save(photo_folder / "class1" / "t.tiff")
    else:
        tf = T.Compose([T.Resize((32, 32)), T.Resize(30), T.ToTensor()])  # 30 x 30 only after the fixed step
    ds = datasets.ImageFolder(photo_folder, transform=tf, **kwargs)
    it = iter(DataLoader(ds, batch_size=2))
    assert not isinstance(it, _FusedIterator)
    x, y = next(it)
    if case == "custom_loader":
        np.testing.assert_array_equal(x.numpy()[0], ds[0][0].numpy())
    if case == "target_transform":
        assert y.numpy().tolist() == [ds.targets[0] + 10, ds.targets[1] + 10]
    if case == "tiff":
        assert sum(int(b[0].shape[0]) for b in DataLoader(ds, batch_size=4)) == len(ds) == 8


def test_batch_plan_for_files_needs_a_fixed_size():
    assert T.batch_plan(T.Compose([T.RandomResizedCrop(16), T.ToTensor()])).for_files
    assert T.batch_plan(T.Compose([T.Resize(20), T.CenterCrop(16), T.ToTensor()])).out_size == [16, 16]
    assert T.batch_plan(T.Compose([T.Resize((20, 18)), T.ToTensor()])).out_size == [20, 18]
    assert T.batch_plan(T.Compose([T.Resize(20), T.ToTensor()])) is None          # size depends on the picture
    assert T.batch_plan(T.Compose([T.CenterCrop(16), T.PILToTensor()])) is None   # uint8 out
    assert T.batch_plan(T.Compose([T.ToTensor()])) is None
    with pytest.raises(ValueError, match="channels must be 3"):
        T.batch_plan(T.Compose([T.RandomResizedCrop(16), T.ToTensor()]), channels=1)


def test_image_folder_epochs_abandoned_midway_and_one_thread(photo_folder):
    """The next batch is decoded ahead on a thread: leaving an epoch after one batch, or running
    with one ember thread, gives the same batches as a full pass."""
    tf = T.Compose([T.RandomResizedCrop(16), T.ToTensor()])
    ds = datasets.ImageFolder(photo_folder, transform=tf)
    ember.manual_seed(2)
    full = [x.numpy() for x, _ in DataLoader(ds, batch_size=3, shuffle=False)]
    before = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        ember.manual_seed(2)
        it = iter(DataLoader(ds, batch_size=3, shuffle=False))
        np.testing.assert_array_equal(next(it)[0].numpy(), full[0])
        del it  # abandoned with a batch in flight
    finally:
        ember.set_num_threads(before)
