"""DataLoader as torch.utils.data's, run in the calling process: batches of a dataset's samples,
shuffled or not, collated into tensors (default_collate: numbers, NumPy arrays and tensors stacked
by ember.stack, tuples/lists/dicts element-wise, strings kept as lists)."""

from __future__ import annotations

import collections.abc
import numbers
import warnings

import numpy as _np

from ... import _core
from ..._core import Tensor
from .sampler import BatchSampler, RandomSampler, SequentialSampler


def default_collate(batch):
    """A list of samples as one batch, as torch.utils.data.default_collate: tensors stacked along a
    new first dim, Python ints as int64, floats as float64 (PyTorch's rule), bools as bool, NumPy
    arrays and scalars as tensors, mappings and sequences collated field by field."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        return _core.stack(list(batch), 0)
    if isinstance(elem, _np.ndarray) or isinstance(elem, _np.generic):
        return _core.from_numpy(_np.ascontiguousarray(_np.stack([_np.asarray(b) for b in batch])))
    if isinstance(elem, bool):
        return _core.from_numpy(_np.array(batch, dtype=_np.bool_))
    if isinstance(elem, numbers.Integral):
        return _core.from_numpy(_np.array(batch, dtype=_np.int64))
    if isinstance(elem, numbers.Real):
        return _core.from_numpy(_np.array(batch, dtype=_np.float64))
    if isinstance(elem, (str, bytes)):
        return list(batch)
    if isinstance(elem, collections.abc.Mapping):
        return type(elem)({k: default_collate([d[k] for d in batch]) for k in elem}) if not isinstance(elem, dict) \
            else {k: default_collate([d[k] for d in batch]) for k in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # a named tuple
        return type(elem)(*(default_collate(list(samples)) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        if any(len(b) != len(elem) for b in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        return [default_collate(list(samples)) for samples in zip(*batch)]  # a list for tuples too, as PyTorch
    raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
                    f"found {type(elem).__name__}")


class DataLoader:
    """Batches of ``dataset``: DataLoader(dataset, batch_size=1, shuffle=False, sampler=None,
    batch_sampler=None, num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, ...).

    ember runs the loading in the calling process: num_workers > 0 is accepted and loads in this
    process too (with a UserWarning saying so); pin_memory is accepted (ember's host-to-GPU copies stage
    through pinned memory of their own). A dataset whose items are tensors of one shape (a
    TensorDataset) is indexed a batch at a time in C++ (one gather per tensor, not one per sample)."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True) -> None:
        if not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                                 "and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        if num_workers > 0:
            warnings.warn(f"DataLoader(num_workers={num_workers}): ember loads in the calling process (no worker "
                          f"processes yet); the batches are the same", UserWarning, stacklevel=2)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if sampler is None:
            sampler = RandomSampler(dataset) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.dataset, self.batch_size, self.drop_last = dataset, batch_size, drop_last
        self.sampler, self.batch_sampler = sampler, batch_sampler
        self.num_workers, self.pin_memory, self.timeout = num_workers, pin_memory, timeout
        self.collate_fn = collate_fn if collate_fn is not None else (
            default_collate if batch_sampler is not None else (lambda x: x))
        self._tensor_batches = collate_fn is None and _is_tensor_dataset(dataset)

    def __iter__(self):
        if self.batch_sampler is None:
            for idx in self.sampler:
                yield self.collate_fn(self.dataset[idx])
            return
        for indices in self.batch_sampler:
            if self._tensor_batches:
                index = _core.from_numpy(_np.asarray(indices, dtype=_np.int64))
                yield [t.index_select(0, index) for t in self.dataset.tensors]
            else:
                yield self.collate_fn([self.dataset[i] for i in indices])

    def __len__(self) -> int:
        return len(self.batch_sampler) if self.batch_sampler is not None else len(self.sampler)


def _is_tensor_dataset(dataset) -> bool:
    from .dataset import TensorDataset
    return type(dataset) is TensorDataset
