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
