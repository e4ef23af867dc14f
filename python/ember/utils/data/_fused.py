"""The DataLoader's C++ path for torchvision's built-in datasets: MNIST/FashionMNIST/KMNIST,
CIFAR10/100 and ImageFolder/DatasetFolder (with the default PIL loader) of ember.vision.datasets
whose transform is a Compose of built-in steps that
ember.vision.transforms.batch_plan fuses (ToTensor, Normalize, RandomCrop with padding,
RandomHorizontalFlip, RandomErasing, ...). Each batch is one C++ call over the dataset's uint8 array:
the GIL released, the samples spread over ember's threads, no PIL image made, no worker process,
no pickling. An ImageFolder's files are decoded in that call too, by ember's decoders (Pillow's
pixels; its transform must end in a fixed size: RandomResizedCrop, or Resize + CenterCrop). The
batches equal what the Python path gives for deterministic transforms; random
steps draw from (the epoch's base seed, the epoch, the sample's index) through Philox instead of
ember's global generator, so they are reproducible under ember.manual_seed but not the same draws
the Python path would make.

Taken only when nothing a user wrote would be skipped: the default collate_fn, auto-batching, no
target_transform, no worker_init_fn, and the dataset's own __getitem__ (a subclass overriding it
gets the Python path)."""

from __future__ import annotations

import collections as _collections
import concurrent.futures as _futures
import os as _os
import sys

import numpy as _np

from ... import _core
from ... import errors as _errors


# ImageFolder batches decoded ahead of the caller: two in flight keep every core busy across a batch's
# last pictures (one thread idles while the other finishes) and the caller's turn between batches.
_PREFETCH = 2


def fused_batches(loader, base_seed: int, epoch: int):
    """An iterator over this epoch's batches computed in C++, or None when the loader does not
    qualify (then the caller takes the Python path)."""
    from .dataloader import default_collate  # noqa: PLC0415 (the module imports this one)
    vd = sys.modules.get("ember.vision.datasets")  # only a dataset of ember.vision's can qualify
    if vd is None or loader._iterable or not loader._auto_collation or loader.collate_fn is not default_collate:
        return None
    if loader.worker_init_fn is not None:
        return None
    ds = loader.dataset
    getitem = getattr(type(ds), "__getitem__", None)
    if getitem is vd.DatasetFolder.__getitem__:
        return _folder_batches(loader, ds, vd, base_seed, epoch)
    if getitem is not vd.MNIST.__getitem__ and getitem is not vd.CIFAR10.__getitem__:
        return None
    if getattr(ds, "transform", None) is None or getattr(ds, "target_transform", None) is not None:
        return None
    images = _np.asarray(ds.data)
    if images.dtype != _np.uint8 or images.ndim not in (3, 4) or not images.flags.c_contiguous:
        return None
    n, h, w = images.shape[:3]
    c = 1 if images.ndim == 3 else images.shape[3]
    from ember.vision.transforms import batch_plan  # noqa: PLC0415 (ember.vision loads on first use)
    plan = batch_plan(ds.transform, c, h, w)
    if plan is None:
        return None
    targets = _np.asarray(ds.targets, dtype=_np.int64)
    if targets.shape != (n,):
        return None
    return _FusedIterator(loader, plan, images, targets, base_seed, epoch)


def _folder_batches(loader, ds, vd, base_seed: int, epoch: int):
    """The C++ path for an ImageFolder/DatasetFolder whose loader is the module's PIL loader (a
    user's loader may read anything, so it keeps the Python path)."""
    if getattr(ds, "loader", None) not in (vd.default_loader, vd.pil_loader):
        return None
    if getattr(ds, "transform", None) is None or getattr(ds, "target_transform", None) is not None:
        return None
    from ember.vision.transforms import batch_plan  # noqa: PLC0415 (ember.vision loads on first use)
    plan = batch_plan(ds.transform)  # for pictures of any size: None unless it ends in a fixed size
    if plan is None:
        return None
    paths = [_os.fspath(s[0]) for s in ds.samples]
    # PIL reads formats ember's decoders do not (TIFF, ...): such a folder keeps the Python path.
    readable = tuple(_core._vision.picture_extensions())
    if not all(str(p).lower().endswith(readable) for p in paths):
        return None
    # The targets __getitem__ returns: samples' (ds.targets is a copy a user may not keep in step).
    try:
        targets = _np.asarray([s[1] for s in ds.samples], dtype=_np.int64)
    except (TypeError, ValueError, OverflowError):
        return None
    return _FusedIterator(loader, plan, None, targets, base_seed, epoch, paths=paths)


def _unreadable(error):
    """A picture the C++ decoders refuse, raised as PIL's loader would: an OSError subclass
    (PIL.UnidentifiedImageError, what Image.open raises for bytes it cannot read) whose message
    names the file. ember.IOError (a file that cannot be opened) is an OSError already."""
    from PIL import UnidentifiedImageError  # noqa: PLC0415 (Pillow is a dependency of ember.vision)
    return UnidentifiedImageError(str(error))


class _FusedIterator:
    """One epoch of batches: the batch sampler's index lists, each turned into [images, targets] by
    one C++ call (a batch of 64 Fashion-MNIST images costs tens of microseconds, so no prefetching
    thread is needed to keep a training step fed; an ImageFolder's batch, files to decode, is
    prefetched two batches ahead on threads)."""

    def __init__(self, loader, plan, images, targets, seed: int, epoch: int, paths=None) -> None:
        self._length = len(loader)
        self._sampler_iter = iter(loader._index_sampler)
        self._plan, self._images, self._targets, self._paths = plan, images, targets, paths
        self._seed, self._epoch = int(seed) & ((1 << 64) - 1), int(epoch)
        # Picture files take ~50-100 ms a batch to decode: the next batches are decoded on threads (the
        # C++ call releases the GIL) while the caller trains on this one, as PyTorch's workers
        # prefetch. The thread count is read here: OpenMP's is per thread.
        self._pool, self._pending = None, _collections.deque()
        if paths is not None:
            self._pool = _futures.ThreadPoolExecutor(_PREFETCH, thread_name_prefix="ember-folder-loader")
            self._threads = _core.get_num_threads()
            for _ in range(_PREFETCH):
                self._submit()

    def __iter__(self):
        return self

    def __len__(self):
        return self._length

    def __next__(self):
        if self._paths is not None:
            return self._next_files()
        index = _np.asarray(next(self._sampler_iter), dtype=_np.int64)
        rows = index.tolist()
        batch = self._plan._plan.run(self._images, rows, self._seed, self._epoch, True)
        return [batch, _core.from_numpy(_np.ascontiguousarray(self._targets[index]))]

    def _submit(self) -> None:
        """Queues the next batch's indices and the future of its tensor (nothing at the epoch's end)."""
        try:
            index = _np.asarray(next(self._sampler_iter), dtype=_np.int64)
        except StopIteration:
            return
        rows = index.tolist()
        paths = [self._paths[i] for i in rows]
        future = self._pool.submit(self._plan._plan.run_files, paths, rows, self._seed, self._epoch, self._threads)
        self._pending.append((index, future))

    def _next_files(self):
        if not self._pending:
            self._pool.shutdown(wait=False)
            raise StopIteration
        index, future = self._pending.popleft()
        try:
            batch = future.result()
        except BaseException as e:
            for _, f in self._pending:
                f.cancel()
            self._pending.clear()
            self._pool.shutdown(wait=False)
            if isinstance(e, _errors.DataError):
                raise _unreadable(e) from e
            raise
        self._submit()
        return [batch, _core.from_numpy(_np.ascontiguousarray(self._targets[index]))]
