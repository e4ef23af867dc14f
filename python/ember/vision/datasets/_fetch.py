"""download=True for ember.vision.datasets: ember's own fetch (ember/data/fetch.h, what `ember data
fetch` runs: SHA-256 checks, a full parse, atomic writes, verified files kept), tried on each of a
dataset class's ``mirrors`` in turn as torchvision does; every failure is reported together."""

import os

from ... import errors
from ..._core import _vision_datasets as _vd


def fetch(dataset, mirrors, directory):
    """Downloads `dataset` ("mnist", "fashion-mnist", "kmnist", "cifar10", "cifar100") into
    `directory` from the first of `mirrors` (base URLs) that serves files which verify."""
    os.makedirs(directory, exist_ok=True)
    failures = []
    for mirror in mirrors:
        try:
            _vd.fetch(dataset, str(directory), str(mirror))
            return
        except (errors.IOError, errors.DataError) as e:  # unreachable, refused, or a bad file: next mirror
            failures.append(f"Tried {mirror}, got:\n{e}")
    raise RuntimeError(f"Error downloading {dataset} into {directory}:\n" + "\n".join(failures))
