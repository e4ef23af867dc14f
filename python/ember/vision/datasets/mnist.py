"""MNIST, FashionMNIST and KMNIST as torchvision defines them, read by ember's C++ IDX reader
(ember/data/readers.h: plain or gzip, headers and counts checked) and downloaded by ember's fetch."""

import os

import numpy as np
from PIL import Image

from ... import from_numpy
from ..._core import _vision_datasets as _vd
from ._fetch import fetch
from .vision import VisionDataset


class MNIST(VisionDataset):
    """`MNIST <http://yann.lecun.com/exdb/mnist/>`_, torchvision's class on ember's IDX reader.

    Args:
        root (str or ``pathlib.Path``): where ``MNIST/raw/train-images-idx3-ubyte`` (and the other
            three files, plain or ``.gz``) are, torchvision's layout; or a folder that holds the four
            files itself (``ember data fetch``'s folder, Debian's ``/usr/share/datasets/fashion-mnist``).
        train (bool, optional): the training files (``train-*``) when True, else ``t10k-*``.
        transform (callable, optional): takes the PIL image (mode "L") and returns a transformed one.
        target_transform (callable, optional): takes the target and transforms it.
        download (bool, optional): when the files are not found, fetch them into ``root/MNIST/raw``
            (as ``.gz``) with ``ember data fetch``'s SHA-256 checks from ``mirrors``; nothing is
            downloaded when they are present.

    ``data`` is a uint8 ember Tensor (N, 28, 28), ``targets`` an int64 ember Tensor (N,). The legacy
    ``MNIST/processed/*.pt`` files of old torchvision versions are not read.
    """

    _fetch_name = "mnist"
    mirrors = [_vd.canonical_base_url("mnist") + "/"]
    resources = [
        ("train-images-idx3-ubyte.gz", None),
        ("train-labels-idx1-ubyte.gz", None),
        ("t10k-images-idx3-ubyte.gz", None),
        ("t10k-labels-idx1-ubyte.gz", None),
    ]
    classes = [
        "0 - zero", "1 - one", "2 - two", "3 - three", "4 - four",
        "5 - five", "6 - six", "7 - seven", "8 - eight", "9 - nine",
    ]

    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.train = train
        if download:
            self.download()
        files = self._find_files()
        if files is None:
            raise RuntimeError("Dataset not found. You can use download=True to download it" + self._where_looked())
        images, labels = _vd.load_idx_pair(files[0], files[1], len(self.classes))
        self.data = from_numpy(images)
        self.targets = from_numpy(labels)

    # -- files --------------------------------------------------------------------------------------

    def _split_bases(self):
        split = "train" if self.train else "t10k"
        return (f"{split}-images-idx3-ubyte", f"{split}-labels-idx1-ubyte")

    def _search_dirs(self):
        # torchvision's layout first, then ember's (the folder that holds the files).
        return [self.raw_folder, os.fspath(self.root)]

    def _find_files(self):
        """(images, labels) paths of this split: plain (as torchvision leaves them) before .gz, both
        from the same folder; None when no searched folder has both."""
        for d in self._search_dirs():
            found = []
            for base in self._split_bases():
                path = next((p for p in (os.path.join(d, base), os.path.join(d, base + ".gz")) if os.path.isfile(p)),
                            None)
                found.append(path)
            if all(found):
                return tuple(found)
        return None

    def _where_looked(self):
        images, labels = self._split_bases()
        dirs = " and in ".join(self._search_dirs())
        hint = f" ({images}[.gz] and {labels}[.gz] were looked for in {dirs}"
        if self._fetch_name in ("mnist", "fashion-mnist"):
            hint += f"; or run `ember data fetch {self._fetch_name} --data-dir {self.raw_folder}`"
        return hint + ")"

    def _check_exists(self):
        """All four files (both splits) in one searched folder, as torchvision's check."""
        return any(all(os.path.isfile(os.path.join(d, name[:-3])) or os.path.isfile(os.path.join(d, name))
                       for name, _ in self.resources) for d in self._search_dirs())

    def download(self):
        """Fetches the four files into ``raw_folder`` unless they are all found already."""
        if self._check_exists():
            return
        fetch(self._fetch_name, self.mirrors, self.raw_folder)

    # -- torchvision's attributes -------------------------------------------------------------------

    @property
    def raw_folder(self):
        return os.path.join(self.root, self.__class__.__name__, "raw")

    @property
    def processed_folder(self):
        return os.path.join(self.root, self.__class__.__name__, "processed")

    @property
    def class_to_idx(self):
        return {_class: i for i, _class in enumerate(self.classes)}

    def __getitem__(self, index):
        img, target = self.data[index], int(self.targets[index])
        # A PIL image, as torchvision's datasets return (mode "L": a 2-D uint8 array).
        img = Image.fromarray(np.ascontiguousarray(img.numpy()))
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def __len__(self):
        return len(self.data)

    def extra_repr(self):
        split = "Train" if self.train is True else "Test"
        return f"Split: {split}"


class FashionMNIST(MNIST):
    """`Fashion-MNIST <https://github.com/zalandoresearch/fashion-mnist>`_: as :class:`MNIST`, in
    ``root/FashionMNIST/raw`` (or a folder holding the files, such as Debian's
    ``/usr/share/datasets/fashion-mnist``)."""

    _fetch_name = "fashion-mnist"
    mirrors = [_vd.canonical_base_url("fashion-mnist") + "/"]
    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]


class KMNIST(MNIST):
    """`Kuzushiji-MNIST <https://github.com/rois-codh/kmnist>`_: as :class:`MNIST`, in
    ``root/KMNIST/raw``. Downloads are checked against TensorFlow Datasets' published SHA-256 of the
    files (there is no `ember data fetch kmnist`: KMNIST is not one of `ember train`'s datasets)."""

    _fetch_name = "kmnist"
    mirrors = [_vd.canonical_base_url("kmnist") + "/"]
    classes = ["o", "ki", "su", "tsu", "na", "ha", "ma", "ya", "re", "wo"]
