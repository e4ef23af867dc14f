"""The DataLoader's worker processes (num_workers > 0): the loop each worker runs (take a batch's
indices from its index queue, load and collate the samples, send the batch back), its seeding, the
wrapper that carries a worker's exception to the main process, and how batches cross the process
boundary (ember tensors as NumPy arrays pickled through the result queue's pipe)."""

from __future__ import annotations

import os
import queue
import random
import sys
import traceback
from dataclasses import dataclass

import numpy as _np

# How often a waiting worker checks that its parent is alive, and the main process that its workers are.
STATUS_CHECK_INTERVAL = 0.2

_worker_info = None


@dataclass(frozen=True)
class WorkerInfo:
    id: int
    num_workers: int
    seed: int
    dataset: object


def get_worker_info():
    """In a DataLoader worker process: WorkerInfo(id, num_workers, seed, dataset) — the dataset is this
    worker's copy. In the main process: None."""
    return _worker_info


class ExceptionWrapper:
    """A worker's exception, re-raised in the main process with PyTorch's header and the worker's
    traceback (the exception itself may not pickle; its type and text do)."""

    def __init__(self, exc_info, where: str, detail: str = "") -> None:
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where, self.detail = where, detail

    def reraise(self):
        # PyTorch's header line as it is (programs match it), then which sample, then the traceback.
        detail = f"{self.detail}\n" if self.detail else ""
        msg = f"Caught {self.exc_type.__name__} {self.where}.\n{detail}Original {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = _KeyErrorMessage(msg)
        elif getattr(self.exc_type, "message", None):
            raise self.exc_type(message=msg)
        try:
            exception = self.exc_type(msg)
        except Exception:  # an exception type whose constructor takes other arguments
            raise RuntimeError(msg) from None
        raise exception


class _KeyErrorMessage(str):
    """KeyError prints its argument's repr; this keeps the traceback's newlines readable."""

    def __repr__(self):
        return self


class _IterableDatasetStopIteration:
    """A worker's answer when its copy of an IterableDataset is exhausted."""

    def __init__(self, worker_id: int) -> None:
        self.worker_id = worker_id


class _Payload:
    """An ember tensor on its way between processes: its values as a NumPy array (dtypes NumPy lacks,
    bfloat16, travel as float32 and are converted back)."""

    __slots__ = ("array", "dtype")

    def __init__(self, array, dtype) -> None:
        self.array, self.dtype = array, dtype


def to_transport(data):
    from ..._core import Tensor
    if isinstance(data, Tensor):
        t = data.detach()
        try:
            return _Payload(_np.ascontiguousarray(t.cpu().numpy()), None)
        except Exception:
            return _Payload(_np.ascontiguousarray(t.cpu().float().numpy()), str(t.dtype).split(".")[-1])
    if isinstance(data, dict):
        return {k: to_transport(v) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(to_transport(v) for v in data))
    if isinstance(data, (list, tuple)):
        return type(data)(to_transport(v) for v in data)
    return data


def from_transport(data):
    if isinstance(data, _Payload):
        from ... import _core
        t = _core.from_numpy(data.array)
        return t.to(data.dtype) if data.dtype is not None else t
    if isinstance(data, dict):
        return {k: from_transport(v) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(from_transport(v) for v in data))
    if isinstance(data, (list, tuple)):
        return type(data)(from_transport(v) for v in data)
    return data


def _generate_state(base_seed: int, worker_id: int):
    """NumPy's seed for a worker, PyTorch's function (torch/utils/data/_utils/worker.py, after
    NumPy's SeedSequence) so a worker's np.random draws are the ones PyTorch's worker makes."""
    INIT_A, MULT_A, INIT_B, MULT_B = 0x43b0d7e5, 0x931e8875, 0x8b51f9dd, 0x58f38ded
    MIX_MULT_L, MIX_MULT_R, XSHIFT, MASK32 = 0xca01f9dd, 0x4973f715, 4 * 8 // 2, 0xFFFFFFFF
    entropy = [worker_id, base_seed & MASK32, base_seed >> 32, 0]
    pool = [0] * 4
    hash_const_A = INIT_A

    def hash(value):
        nonlocal hash_const_A
        value = (value ^ hash_const_A) & MASK32
        hash_const_A = (hash_const_A * MULT_A) & MASK32
        value = (value * hash_const_A) & MASK32
        return (value ^ (value >> XSHIFT)) & MASK32

    def mix(x, y):
        result = ((MIX_MULT_L * x) & MASK32) - ((MIX_MULT_R * y) & MASK32)
        result &= MASK32
        return (result ^ (result >> XSHIFT)) & MASK32

    for i in range(len(pool)):
        pool[i] = hash(entropy[i])
    for i_src in range(len(pool)):
        for i_dst in range(len(pool)):
            if i_src != i_dst:
                pool[i_dst] = mix(pool[i_dst], hash(pool[i_src]))
    hash_const_B = INIT_B
    state = []
    for i_dst in range(4):
        data_val = (pool[i_dst] ^ hash_const_B) & MASK32
        hash_const_B = (hash_const_B * MULT_B) & MASK32
        data_val = (data_val * hash_const_B) & MASK32
        state.append((data_val ^ (data_val >> XSHIFT)) & MASK32)
    return state


class _Fetcher:
    """Loads one task: a batch's indices (map-style) or a batch's worth of next() calls (iterable)."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last, worker_id) -> None:
        from .dataset import IterableDataset
        self.dataset, self.auto_collation = dataset, auto_collation
        self.collate_fn, self.drop_last = collate_fn, drop_last
        self.iterable = isinstance(dataset, IterableDataset)
        self.worker_id = worker_id
        self.restart()

    def restart(self):
        self.dataset_iter = iter(self.dataset) if self.iterable else None
        self.ended = False

    def fetch(self, index):
        """The collated batch, an _IterableDatasetStopIteration, or an ExceptionWrapper naming the sample."""
        where = f"in DataLoader worker process {self.worker_id}"
        if self.iterable:
            if self.ended:
                return _IterableDatasetStopIteration(self.worker_id)
            try:
                if self.auto_collation:
                    data = []
                    for _ in index:
                        try:
                            data.append(next(self.dataset_iter))
                        except StopIteration:
                            self.ended = True
                            break
                    if not data or (self.drop_last and len(data) < len(index)):
                        return _IterableDatasetStopIteration(self.worker_id)
                else:
                    try:
                        data = next(self.dataset_iter)
                    except StopIteration:
                        self.ended = True
                        return _IterableDatasetStopIteration(self.worker_id)
                return self.collate_fn(data)
            except Exception:
                return ExceptionWrapper(sys.exc_info(), where)
        indices = index if self.auto_collation else [index]
        samples = []
        for i in indices:
            try:
                samples.append(self.dataset[i])
            except Exception:
                return ExceptionWrapper(sys.exc_info(), where, f"It was loading the sample at index {i}.")
        try:
            return self.collate_fn(samples if self.auto_collation else samples[0])
        except Exception:
            return ExceptionWrapper(sys.exc_info(), where, f"It was collating the batch of indices {list(indices)}.")


def worker_loop(dataset, index_queue, result_queue, done_event, auto_collation, collate_fn, drop_last, base_seed,
                init_fn, worker_id, num_workers):
    """One worker process: seed, run worker_init_fn, then answer (epoch, task, index) messages with
    (epoch, task, batch) until it reads None, done_event is set (the None may never arrive when the
    main process's iterator is collected with its queues) or its parent is gone."""
    global _worker_info
    from ... import _core
    try:
        _core.set_num_threads(1)  # as PyTorch's workers: num_workers processes, one thread each
        seed = base_seed + worker_id
        random.seed(seed)
        _core.manual_seed(seed)
        _np.random.seed(_generate_state(base_seed, worker_id))
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
        init_error = None
        if init_fn is not None:
            try:
                init_fn(worker_id)
            except Exception:
                init_error = ExceptionWrapper(sys.exc_info(), f"in DataLoader worker process {worker_id}")
        fetcher = _Fetcher(dataset, auto_collation, collate_fn, drop_last, worker_id)
        parent = os.getppid()
        epoch_seen = None
        while True:
            try:
                task = index_queue.get(timeout=STATUS_CHECK_INTERVAL)
            except queue.Empty:
                if os.getppid() != parent or done_event.is_set():  # the main process died, or stopped us
                    break
                continue
            if task is None or done_event.is_set():
                break
            epoch, task_idx, index = task
            if epoch != epoch_seen:  # a new epoch of persistent workers: the iterable starts again
                if epoch_seen is not None:
                    fetcher.restart()
                epoch_seen = epoch
            if init_error is not None:
                result_queue.put((epoch, task_idx, init_error))
                continue
            data = fetcher.fetch(index)
            if not isinstance(data, (ExceptionWrapper, _IterableDatasetStopIteration)):
                try:
                    data = to_transport(data)
                except Exception:
                    data = ExceptionWrapper(sys.exc_info(), f"in DataLoader worker process {worker_id}")
            result_queue.put((epoch, task_idx, data))
            del data
    except KeyboardInterrupt:
        pass
    result_queue.cancel_join_thread()  # leave at once when told to stop, whether or not the main reads
    result_queue.close()
