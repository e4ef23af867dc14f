"""SVHN as torchvision defines it: the .mat files of http://ufldl.stanford.edu/housenumbers/, read
with scipy.io.loadmat as torchvision does (scipy is optional: ImportError naming it otherwise).
ember's fetch knows no SHA-256 for these files, so download=True is refused with the address."""

import os

import numpy as np
from PIL import Image

from .vision import VisionDataset


class SVHN(VisionDataset):
    """`SVHN <http://ufldl.stanford.edu/housenumbers/>`_ Dataset (format 2, 32x32 crops).

    Args:
        root (str or ``pathlib.Path``): the folder holding ``train_32x32.mat`` / ``test_32x32.mat``
            / ``extra_32x32.mat``.
        split (string): "train", "test" or "extra".
        transform, target_transform (callable, optional): as torchvision's.
        download (bool, optional): not supported (ember downloads only files whose SHA-256 it
            knows): an error names the file's address to download by hand.

    ``data`` is a NumPy uint8 array (N, 3, 32, 32), ``labels`` a NumPy int64 array (label 10 -> 0).
    """

    split_list = {
        "train": ["http://ufldl.stanford.edu/housenumbers/train_32x32.mat", "train_32x32.mat"],
        "test": ["http://ufldl.stanford.edu/housenumbers/test_32x32.mat", "test_32x32.mat"],
        "extra": ["http://ufldl.stanford.edu/housenumbers/extra_32x32.mat", "extra_32x32.mat"],
    }

    def __init__(self, root, split="train", transform=None, target_transform=None, download=False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        if split not in self.split_list:
            raise ValueError(f"Unknown value '{split}' for argument split. "
                             f"Valid values are {{{', '.join(repr(s) for s in self.split_list)}}}.")
        self.split = split
        self.url, self.filename = self.split_list[split]
        path = os.path.join(self.root, self.filename)
        if not os.path.isfile(path):
            if download:
                raise RuntimeError(
                    f"SVHN: ember has no SHA-256 for {self.filename}, so download=True is not supported; "
                    f"download {self.url} into {self.root} yourself")
            raise RuntimeError(f"Dataset not found or corrupted. You can use download=True to download it "
                               f"(looked for {path}; ember cannot download SVHN: get {self.url})")
        try:
            import scipy.io as sio
        except ImportError as e:
            raise ImportError("SVHN reads .mat files with scipy, which is not installed: pip install scipy") from e
        loaded_mat = sio.loadmat(path)
        self.data = loaded_mat["X"]
        # The labels are 1..10 in the file, 10 standing for the digit 0: torchvision maps 10 -> 0.
        self.labels = loaded_mat["y"].astype(np.int64).squeeze()
        np.place(self.labels, self.labels == 10, 0)
        self.data = np.transpose(self.data, (3, 2, 0, 1))

    def __getitem__(self, index):
        img, target = self.data[index], int(self.labels[index])
        img = Image.fromarray(np.transpose(img, (1, 2, 0)))
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def __len__(self):
        return len(self.data)

    def extra_repr(self):
        return "Split: {split}".format(**self.__dict__)
