"""CIFAR10 and CIFAR100 as torchvision defines them, read in C++: the pickled batches torchvision
downloads (cifar-10-batches-py/, cifar-100-python/) by ember's restricted unpickler (NumPy arrays
rebuilt from their bytes, any other global refused, nothing executed), or the binary version
(cifar-10-batches-bin/, cifar-100-binary/) that `ember data fetch` and download=True produce."""

import os

import numpy as np
from PIL import Image

from ..._core import _vision_datasets as _vd
from ._fetch import fetch
from .vision import VisionDataset


class CIFAR10(VisionDataset):
    """`CIFAR-10 <https://www.cs.toronto.edu/~kriz/cifar.html>`_, torchvision's class on ember's readers.

    Args:
        root (str or ``pathlib.Path``): the folder holding ``cifar-10-batches-py`` (torchvision's
            download: ``data_batch_1..5``, ``test_batch``, ``batches.meta``) or
            ``cifar-10-batches-bin`` (the binary version: ``*.bin``, ``batches.meta.txt``); or
            either folder itself.
        train (bool, optional): the training batches when True, else the test batch.
        transform (callable, optional): takes the PIL image (RGB) and returns a transformed one.
        target_transform (callable, optional): takes the target and transforms it.
        download (bool, optional): when neither version is found, fetch the **binary** tarball
            (``cifar-10-binary.tar.gz``) with ``ember data fetch``'s SHA-256 check from ``mirrors``
            and extract it as ``root/cifar-10-batches-bin`` (not torchvision's pickled
            ``cifar-10-batches-py``); nothing is downloaded when either version is present.

    ``data`` is a NumPy uint8 array (N, 32, 32, 3), ``targets`` a list of ints, ``classes`` the
    names in the folder's meta file, ``class_to_idx`` their indices.
    """

    base_folder = "cifar-10-batches-py"
    binary_folder = "cifar-10-batches-bin"
    _fetch_name = "cifar10"
    _cifar100 = False
    mirrors = [_vd.canonical_base_url("cifar10") + "/"]
    filename = "cifar-10-binary.tar.gz"
    # A file whose presence tells the version of a folder: (python, binary).
    _probe = ("test_batch", "test_batch.bin")
    # torchvision's names for the pickled version's files (ember checks content, not MD5s: None).
    train_list = [[f"data_batch_{i}", None] for i in range(1, 6)]
    test_list = [["test_batch", None]]
    meta = {"filename": "batches.meta", "key": "label_names", "md5": None}

    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.train = train
        if download:
            self.download()
        found = self._find_folder()
        if found is None:
            raise RuntimeError(
                "Dataset not found or corrupted. You can use download=True to download it (looked for "
                f"{' and '.join(self._candidates_text())}; or run `ember data fetch {self._fetch_name} "
                f"--data-dir {self.root}`)")
        folder, python_version = found
        images, labels = _vd.load_cifar(folder, self._cifar100, bool(train), python_version)
        self.data = np.ascontiguousarray(images.transpose((0, 2, 3, 1)))  # HWC, as torchvision's
        self.targets = labels.tolist()
        self._load_meta(folder)

    def _candidates(self):
        root = os.fspath(self.root)
        return [(os.path.join(root, self.base_folder), True), (os.path.join(root, self.binary_folder), False),
                (root, True), (root, False)]

    def _candidates_text(self):
        return [os.path.join(d, self._probe[0 if py else 1]) for d, py in self._candidates()]

    def _find_folder(self):
        """(folder, is the pickled version) of the first folder holding a version's test file."""
        for d, python_version in self._candidates():
            if os.path.isfile(os.path.join(d, self._probe[0 if python_version else 1])):
                return d, python_version
        return None

    def _check_integrity(self):
        # A folder is checked whole when it is read (every batch parsed, labels checked).
        return self._find_folder() is not None

    def _load_meta(self, folder):
        self.classes = _vd.cifar_classes(folder, self._cifar100)
        self.class_to_idx = {_class: i for i, _class in enumerate(self.classes)}

    def download(self):
        """Fetches and extracts the binary tarball into ``root`` unless a version is found already."""
        if self._check_integrity():
            return
        fetch(self._fetch_name, self.mirrors, os.fspath(self.root))

    def __getitem__(self, index):
        img, target = self.data[index], self.targets[index]
        img = Image.fromarray(img)
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


class CIFAR100(CIFAR10):
    """`CIFAR-100 <https://www.cs.toronto.edu/~kriz/cifar.html>`_: as :class:`CIFAR10`, with
    ``cifar-100-python`` (``train``, ``test``, ``meta``) or ``cifar-100-binary`` (``train.bin``,
    ``test.bin``, ``fine_label_names.txt``); targets are the fine labels (100 classes), as
    torchvision's. download=True extracts the binary tarball as ``root/cifar-100-binary``."""

    base_folder = "cifar-100-python"
    binary_folder = "cifar-100-binary"
    _fetch_name = "cifar100"
    _cifar100 = True
    mirrors = [_vd.canonical_base_url("cifar100") + "/"]
    filename = "cifar-100-binary.tar.gz"
    _probe = ("test", "test.bin")
    train_list = [["train", None]]
    test_list = [["test", None]]
    meta = {"filename": "meta", "key": "fine_label_names", "md5": None}
