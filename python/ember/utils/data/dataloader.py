"""DataLoader as torch.utils.data's: batches of a dataset's samples, shuffled or not, collated into
tensors (default_collate: numbers, NumPy arrays and tensors stacked by ember.stack, tuples/lists/dicts
element-wise, strings kept as lists), loaded in the calling process (num_workers=0) or by worker
processes (num_workers > 0, as PyTorch's: fork/spawn/forkserver, prefetching, persistent workers,
worker errors and deaths reported in the main process)."""

from __future__ import annotations

import collections.abc
import itertools
import multiprocessing as _mp
import numbers
import queue
import signal
import warnings
import weakref

import numpy as _np

from ... import _core
from ..._core import Tensor
from . import _worker
from ._fused import fused_batches
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, _seed_from_ember


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


def default_convert(data):
    """Each NumPy array (not of strings or objects) in ``data`` as a tensor, containers converted
    element-wise, anything else as it is: the collate_fn PyTorch uses when batch_size is None."""
    if isinstance(data, _np.ndarray) and data.dtype.kind not in "SaUO":
        return _core.from_numpy(_np.ascontiguousarray(data))
    if isinstance(data, _np.generic) and data.dtype.kind not in "SaUO":
        return _core.from_numpy(_np.asarray(data))
    if isinstance(data, collections.abc.Mapping):
        return {k: default_convert(v) for k, v in data.items()} if isinstance(data, dict) \
            else type(data)({k: default_convert(v) for k, v in data.items()})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]  # PyTorch's rule: a tuple comes back as a list
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return [default_convert(d) for d in data]
    return data


class _InfiniteConstantSampler(Sampler):
    """The index sampler of an IterableDataset: None forever (each worker's fetcher calls next())."""

    def __iter__(self):
        while True:
            yield None


class DataLoader:
    """Batches of ``dataset``: DataLoader(dataset, batch_size=1, shuffle=None, sampler=None,
    batch_sampler=None, num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
    worker_init_fn=None, multiprocessing_context=None, generator=None, *, prefetch_factor=None,
    persistent_workers=False, pin_memory_device="", in_order=True), PyTorch's arguments.

    num_workers > 0 starts that many worker processes as PyTorch does (multiprocessing_context
    "fork" by default on Linux, "spawn" or "forkserver" on request; spawn needs a picklable dataset
    defined in an importable module). Each worker loads whole batches; a batch's ember tensors cross
    back as NumPy arrays pickled through the result queue's pipe (one copy; no shared-memory
    segments to leak when a worker is killed). Each epoch draws a base seed from ember's generator
    (or from ``generator``: an int, or an object with initial_seed(), giving base seeds of its own),
    and worker w seeds ember, ``random`` and NumPy with base_seed + w as PyTorch's workers do. The
    batches' order is the sampler's, the same as num_workers=0 for the same seed (in_order=False
    gives batches as they are ready). pin_memory is accepted (ember's host-to-GPU copies stage
    through pinned memory of their own). A dataset whose items are tensors of one shape (a
    TensorDataset) is indexed a batch at a time in C++ when loaded in process."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True) -> None:
        if not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                             "to enable multiprocessing, otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        if prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle not in (False, None):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                 f"shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got "
                                 f"sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler option, but got "
                                 f"batch_sampler={batch_sampler}")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                                 "and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if sampler is None:
            if self._iterable:
                sampler = _InfiniteConstantSampler()
            else:
                sampler = RandomSampler(dataset) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.dataset, self.batch_size, self.drop_last = dataset, batch_size, drop_last
        self.sampler, self.batch_sampler = sampler, batch_sampler
        self.num_workers, self.pin_memory, self.timeout = num_workers, pin_memory, timeout
        self.pin_memory_device, self.in_order = pin_memory_device, in_order
        self.worker_init_fn, self.prefetch_factor, self.persistent_workers = worker_init_fn, prefetch_factor, \
            persistent_workers
        self.multiprocessing_context = _mp_context(multiprocessing_context) if num_workers > 0 else \
            multiprocessing_context
        self.generator = generator
        self._epochs = 0
        self.collate_fn = collate_fn if collate_fn is not None else (
            default_collate if batch_sampler is not None else default_convert)
        self._tensor_batches = collate_fn is None and _is_tensor_dataset(dataset)
        self._persistent_iterator = None

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def _next_base_seed(self) -> int:
        """This epoch's base seed for the workers, drawn before the sampler runs in every mode so the
        sampler's draws (and so the batches' order) are the same whatever num_workers is."""
        self._epochs += 1
        if self.generator is None:
            return _seed_from_ember()
        seed = self.generator.initial_seed() if hasattr(self.generator, "initial_seed") else int(self.generator)
        return int(_np.random.default_rng([seed, self._epochs]).integers(0, 2**62))

    def __iter__(self):
        return self._batch_iterator()

    # ---- THE PLACE WHERE A LOADER'S BATCH ITERATOR IS CHOSEN ----
    def _batch_iterator(self):
        """The iterator giving this loader's batches for one epoch: in C++ for a built-in dataset of
        ember.vision with a transform batch_plan fuses (_fused.py says when; worker processes are not
        started then, whatever num_workers says: the C++ pass runs on ember's threads), else in this
        process (num_workers=0) or by worker processes (reused across epochs when
        persistent_workers=True)."""
        base_seed = self._next_base_seed()
        fused = fused_batches(self, base_seed, self._epochs)
        if fused is not None:
            return fused
        if self.num_workers == 0:
            return _InProcessIterator(self)
        if self.persistent_workers:
            if self._persistent_iterator is None or self._persistent_iterator._shutdown:
                self._persistent_iterator = _WorkerIterator(self, base_seed)
            else:
                self._persistent_iterator._reset()
            return self._persistent_iterator
        return _WorkerIterator(self, base_seed)

    def __len__(self) -> int:
        if self._iterable:
            length = len(self.dataset)  # TypeError when the IterableDataset has no __len__, as PyTorch's
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else -(-length // self.batch_size)
            return length
        return len(self._index_sampler)


def _mp_context(context):
    """The multiprocessing context the workers start in: PyTorch's default (the platform's, fork on
    Linux) or the one named."""
    if context is None:
        return _mp.get_context()
    if isinstance(context, str):
        if context not in _mp.get_all_start_methods():
            raise ValueError(f"multiprocessing_context option should specify a valid start method in "
                             f"{_mp.get_all_start_methods()!r}, but got multiprocessing_context={context!r}")
        return _mp.get_context(context)
    if not isinstance(context, _mp.context.BaseContext):
        raise TypeError(f"multiprocessing_context option should be a valid context object or a string specifying "
                        f"the start method, but got multiprocessing_context={context}")
    return context


class _InProcessIterator:
    """num_workers=0: the samples loaded and collated in the calling process."""

    def __init__(self, loader: DataLoader) -> None:
        self._loader = loader
        self._sampler_iter = iter(loader._index_sampler)
        self._dataset_iter = iter(loader.dataset) if loader._iterable else None
        self._ended = False

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._loader)

    def __next__(self):
        loader = self._loader
        index = next(self._sampler_iter)
        if loader._iterable:
            if self._ended:
                raise StopIteration
            if not loader._auto_collation:
                return loader.collate_fn(next(self._dataset_iter))
            data = list(itertools.islice(self._dataset_iter, len(index)))
            if len(data) < len(index):
                self._ended = True
            if not data or (loader.drop_last and len(data) < len(index)):
                raise StopIteration
            return loader.collate_fn(data)
        if not loader._auto_collation:
            return loader.collate_fn(loader.dataset[index])
        if loader._tensor_batches:
            rows = _core.from_numpy(_np.asarray(index, dtype=_np.int64))
            return [t.index_select(0, rows) for t in loader.dataset.tensors]
        return loader.collate_fn([loader.dataset[i] for i in index])


_iterator_ids = itertools.count()  # names each worker iterator's shared-memory files apart


class _WorkerIterator:
    """num_workers > 0: worker processes load batches; this process hands out indices (prefetch_factor
    batches per worker in flight), puts the answers back in the sampler's order, and turns a worker's
    exception, death or silence (timeout) into an exception here. The workers stop when the epoch
    ends (unless persistent), when this iterator is collected, or when the program exits."""

    def __init__(self, loader: DataLoader, base_seed: int) -> None:
        # No reference back to the loader: a persistent loader holds this iterator, and a cycle would
        # leave its shutdown to the garbage collector, after the queues it needs are finalized.
        self._loader_ref = weakref.ref(loader)
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        self._prefetch = loader.prefetch_factor
        self._timeout = loader.timeout
        self._in_order = loader.in_order
        self._persistent = loader.persistent_workers
        self._shutdown = False
        ctx = loader.multiprocessing_context
        _worker.remove_stale_shared_files()
        self._shm_prefix = _worker.shm_prefix(next(_iterator_ids))
        self._result_queue = ctx.Queue()
        self._done_event = ctx.Event()
        self._index_queues, self._workers = [], []
        for worker_id in range(self._num_workers):
            index_queue = ctx.Queue()
            index_queue.cancel_join_thread()
            w = ctx.Process(target=_worker.worker_loop, daemon=True,
                            args=(loader.dataset, index_queue, self._result_queue, self._done_event,
                                  loader._auto_collation,
                                  loader.collate_fn, loader.drop_last, base_seed, loader.worker_init_fn, worker_id,
                                  self._num_workers, self._shm_prefix))
            w.start()
            self._index_queues.append(index_queue)
            self._workers.append(w)
        self._epoch = 0
        self._reset(first=True)

    def _reset(self, first: bool = False) -> None:
        """A new epoch over the same workers: answers still in flight from the last one are dropped."""
        if not first:
            self._epoch += 1
        self._sampler_iter = iter(self._index_sampler)
        self._send_idx = self._rcvd_idx = 0
        self._task_info = {}
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._worker_cycle = itertools.cycle(range(self._num_workers))
        for _ in range(self._prefetch * self._num_workers):
            self._try_put_index()

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._loader_ref())

    def _try_put_index(self) -> None:
        if self._tasks_outstanding >= self._prefetch * self._num_workers:
            return
        try:
            index = next(self._sampler_iter)
        except StopIteration:
            return
        for _ in range(self._num_workers):  # the next worker still running (an iterable's may have ended)
            worker_id = next(self._worker_cycle)
            if self._workers_status[worker_id]:
                break
        else:
            return
        self._index_queues[worker_id].put((self._epoch, self._send_idx, index))
        self._task_info[self._send_idx] = (worker_id,)
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _get_data(self):
        """The next (epoch, task, data) from any worker; checks the workers while waiting."""
        waited = 0.0
        while True:
            try:
                epoch, idx, data = self._result_queue.get(timeout=_worker.STATUS_CHECK_INTERVAL)
                if isinstance(data, _worker.Noted):
                    warnings.warn(data.message, RuntimeWarning, stacklevel=4)
                    data = data.data
                return epoch, idx, _worker.take_shared(data)
            except queue.Empty:
                waited += _worker.STATUS_CHECK_INTERVAL
                self._check_workers()
                if self._timeout > 0 and waited >= self._timeout:
                    self._shutdown_workers()
                    raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds") from None

    def _check_workers(self) -> None:
        for w in self._workers:
            code = w.exitcode
            if code is None or (code == 0 and self._shutdown):
                continue
            self._shutdown_workers()
            if code < 0:
                try:
                    name = signal.strsignal(-code) or f"signal {-code}"
                except ValueError:
                    name = f"signal {-code}"
                raise RuntimeError(f"DataLoader worker (pid {w.pid}) is killed by signal: {name}. ")
            raise RuntimeError(f"DataLoader worker (pid {w.pid}) exited unexpectedly with exit code {code}. "
                               f"Details are lost due to multiprocessing.")

    def __next__(self):
        while True:
            # Skip the tasks given to workers whose iterable has ended, and those answered out of order.
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info is not None and (len(info) == 2 or self._workers_status[info[0]]):
                    break
                self._task_info.pop(self._rcvd_idx, None)
                self._rcvd_idx += 1
            else:
                if not self._persistent:
                    self._shutdown_workers()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:
                data = self._task_info.pop(self._rcvd_idx)[1]
                self._rcvd_idx += 1
                return self._process(data)
            if self._shutdown:
                raise RuntimeError("this DataLoader iterator's workers have stopped (after an error or a timeout); "
                                   "start a new epoch with iter(loader)")
            epoch, idx, data = self._get_data()
            if epoch != self._epoch:
                continue  # the answer to a task of an epoch left unfinished
            self._tasks_outstanding -= 1
            if isinstance(data, _worker._IterableDatasetStopIteration):
                self._workers_status[data.worker_id] = False
                self._try_put_index()
                continue
            if idx != self._rcvd_idx:
                if self._in_order:
                    self._task_info[idx] += (data,)
                    continue
                del self._task_info[idx]
                return self._process(data)
            del self._task_info[idx]
            self._rcvd_idx += 1
            return self._process(data)

    def _process(self, data):
        self._try_put_index()
        if isinstance(data, _worker.ExceptionWrapper):
            data.reraise()
        return _worker.from_transport(data)

    def _shutdown_workers(self) -> None:
        """Tell every worker to stop, wait a moment, then terminate the ones still running."""
        if self._shutdown:
            return
        self._shutdown = True
        self._done_event.set()
        for q in self._index_queues:
            try:
                q.put(None)
            except (OSError, ValueError):
                pass
        for w in self._workers:
            w.join(timeout=1.0)
            if w.is_alive():
                w.terminate()
                w.join(timeout=1.0)
        for q in self._index_queues + [self._result_queue]:
            q.cancel_join_thread()
            q.close()
        if getattr(self, "_shm_prefix", None) is not None:  # batches written but never taken
            _worker.remove_shared_files(self._shm_prefix)

    def __del__(self):
        try:
            self._shutdown_workers()
        except Exception:
            pass


def _is_tensor_dataset(dataset) -> bool:
    from .dataset import TensorDataset
    return type(dataset) is TensorDataset
