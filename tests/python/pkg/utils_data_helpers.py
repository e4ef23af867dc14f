"""Datasets for test_utils_data.py's worker tests, in an importable module so that the spawn and
forkserver start methods can unpickle them in a fresh interpreter."""

import os
import random
import signal
import time

import numpy as np

import ember
from ember.utils.data import Dataset, IterableDataset, get_worker_info


class Numbered(Dataset):
    """Item i: (a 2x2 float32 array of i, i)."""

    def __init__(self, n=20):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return np.full((2, 2), i, np.float32), i


class Failing(Numbered):
    """Raises `error` (a ValueError by default) at index `bad`."""

    def __init__(self, bad, error=ValueError, n=20):
        super().__init__(n)
        self.bad, self.error = bad, error

    def __getitem__(self, i):
        if i == self.bad:
            raise self.error(f"sample {i} is broken")
        return super().__getitem__(i)


class KilledAt(Numbered):
    """The worker that loads index `at` is killed by SIGKILL, as the OS's OOM killer would."""

    def __init__(self, at, n=20):
        super().__init__(n)
        self.at = at

    def __getitem__(self, i):
        if i == self.at and get_worker_info() is not None:
            os.kill(os.getpid(), signal.SIGKILL)
        return super().__getitem__(i)


class SlowAt(Numbered):
    def __init__(self, at, seconds, n=20):
        super().__init__(n)
        self.at, self.seconds = at, seconds

    def __getitem__(self, i):
        if i == self.at:
            time.sleep(self.seconds)
        return super().__getitem__(i)


class WorkerPids(Numbered):
    """Item i: (i, the pid of the process that loaded it)."""

    def __getitem__(self, i):
        return i, os.getpid()


class Draws(Numbered):
    """Item i: the loading worker's seed and its first draws from random, NumPy and ember."""

    def __getitem__(self, i):
        info = get_worker_info()
        return {"seed": info.seed if info else -1, "id": info.id if info else -1, "random": random.random(),
                "numpy": float(np.random.rand()), "ember": ember.rand(1).item()}


class Range(IterableDataset):
    """0..n-1, split between the workers by get_worker_info() as PyTorch's docs show."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.n))
        per_worker = -(-self.n // info.num_workers)
        start = info.id * per_worker
        return iter(range(start, min(start + per_worker, self.n)))


class SizedRange(Range):
    def __len__(self):
        return self.n


TAG = None


def tag_worker(worker_id):
    """A worker_init_fn: marks the worker's process so its samples show that it ran."""
    global TAG
    TAG = 100 + worker_id


def failing_init(worker_id):
    raise OSError(f"worker {worker_id} cannot open its file")


class Tagged(Numbered):
    def __getitem__(self, i):
        return i, TAG


class Large(Dataset):
    """Item i: a (3, 64, 64) float32 image of i + its pixel numbers / 1e4 (48 KiB: a batch of 2 or
    more goes through shared memory), a bfloat16 copy of it and i."""

    def __init__(self, n=12):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        x = ember.from_numpy(np.arange(3 * 64 * 64, dtype=np.float32).reshape(3, 64, 64) / 1e4 + i)
        return x, x.to(ember.bfloat16), i


def no_shared_memory(worker_id):
    """A worker_init_fn: this worker's writes to /dev/shm fail as on a full tmpfs (ENOSPC)."""
    import errno
    import types
    from ember.utils.data import _worker

    def write(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")
    _worker.os = types.SimpleNamespace(**{k: getattr(os, k) for k in dir(os) if not k.startswith("__")})
    _worker.os.write = write
