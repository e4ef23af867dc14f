"""The DataLoader's worker processes (num_workers > 0): the loop each worker runs (take a batch's
indices from its index queue, load and collate the samples, send the batch back), its seeding, the
wrapper that carries a worker's exception to the main process, and how batches cross the process
boundary: a tensor of 64 KiB or more as a file in /dev/shm that the main process maps and unlinks
(only its name goes through the result queue's pipe), smaller ones and everything else pickled."""

from __future__ import annotations

import glob
import itertools
import mmap
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
    """An ember tensor on its way between processes: its values as a NumPy array, or, in shared
    memory, the name of the /dev/shm file holding them (``array`` None until the main process maps
    it); dtypes NumPy lacks (bfloat16) travel as float32 and are converted back."""

    __slots__ = ("array", "dtype", "shm_name", "shape", "np_dtype")

    def __init__(self, array, dtype, shm_name=None, shape=None, np_dtype=None) -> None:
        self.array, self.dtype = array, dtype
        self.shm_name, self.shape, self.np_dtype = shm_name, shape, np_dtype


# Shared memory for batches: PyTorch's workers hand tensors over in shared memory too; a pickle of a
# 38 MB batch through the pipe costs the main process ~40 ms (unpickling, reading the pipe), a
# mapped file well under one.
SHM_DIR = "/dev/shm"
SHM_MIN_BYTES = 1 << 16
_SHM_PREFIX = "ember-dataloader-"
_shm_counter = itertools.count()
_shm_failed = False  # this worker's /dev/shm refused a write (full or absent): the pipe from then on
_shm_note = None  # the warning about it, sent with the next batch and warned in the main process


class Noted:
    """A worker's answer with a warning for the main process to issue (where the program's warning
    filters, and pytest.warns, see it; a worker's own warnings.warn would go to its stderr, or
    nowhere under an inherited catch_warnings)."""

    __slots__ = ("data", "message")

    def __init__(self, data, message) -> None:
        self.data, self.message = data, message


def shm_prefix(iterator_id: int) -> str | None:
    """The file-name prefix of one DataLoader iterator's shared batches (its process id and a number
    of its own), or None when /dev/shm is not a writable directory (batches then go by the pipe)."""
    if not (os.path.isdir(SHM_DIR) and os.access(SHM_DIR, os.W_OK)):
        return None
    return f"{_SHM_PREFIX}{os.getpid()}-{iterator_id}-"


def remove_shared_files(prefix: str) -> None:
    """Unlinks what one iterator's workers wrote and the main process never took (the batches in
    flight when it stopped)."""
    for path in glob.glob(os.path.join(SHM_DIR, glob.escape(prefix) + "*")):
        try:
            os.unlink(path)
        except OSError:
            pass


def remove_stale_shared_files() -> None:
    """Unlinks the shared batches of DataLoaders whose process is gone (killed before it could clean up)."""
    for path in glob.glob(os.path.join(SHM_DIR, _SHM_PREFIX + "*")):
        try:
            pid = int(os.path.basename(path)[len(_SHM_PREFIX):].split("-", 1)[0])
            os.kill(pid, 0)
        except ProcessLookupError:
            try:
                os.unlink(path)
            except OSError:
                pass
        except (ValueError, OSError):
            pass


def _write_shared(array, prefix):
    """The name of a new /dev/shm file holding ``array``'s bytes, or None (the caller pickles it) when
    the write fails: a full /dev/shm (a container's 64 MB default) is an error from write(), never
    the SIGBUS a mapped page would give, and a warning says once where batches go instead."""
    global _shm_failed, _shm_note
    name = f"{prefix}{os.getpid()}-{next(_shm_counter)}"
    path = os.path.join(SHM_DIR, name)
    fd = None
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        view = memoryview(array).cast("B")
        written = 0
        while written < len(view):
            written += os.write(fd, view[written:])
    except OSError as e:
        if fd is not None:
            os.close(fd)
            os.unlink(path)
        _shm_failed = True
        _shm_note = (f"DataLoader worker: writing a batch to shared memory ({SHM_DIR}) failed ({e}); this worker's "
                     f"batches go through a pipe from now on, which is slower. A container's {SHM_DIR} is often "
                     f"64 MB: docker run --shm-size=2g (or --ipc=host) gives it more.")
        return None
    os.close(fd)
    return name


def to_transport(data, prefix=None):
    """``data`` with each ember tensor as a _Payload: in a /dev/shm file when ``prefix`` is given and
    it is SHM_MIN_BYTES or more, else as a NumPy array for the pickle."""
    from ..._core import Tensor
    if isinstance(data, Tensor):
        t = data.detach()
        try:
            array, dtype = _np.ascontiguousarray(t.cpu().numpy()), None
        except Exception:
            array, dtype = _np.ascontiguousarray(t.cpu().float().numpy()), str(t.dtype).split(".")[-1]
        if prefix is not None and not _shm_failed and array.nbytes >= SHM_MIN_BYTES:
            name = _write_shared(array, prefix)
            if name is not None:
                return _Payload(None, dtype, name, array.shape, array.dtype.str)
        return _Payload(array, dtype)
    if isinstance(data, dict):
        return {k: to_transport(v, prefix) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(to_transport(v, prefix) for v in data))
    if isinstance(data, (list, tuple)):
        return type(data)(to_transport(v, prefix) for v in data)
    return data


def from_transport(data):
    """``data`` with each _Payload (shared ones taken by take_shared first) as an ember tensor: the
    NumPy array's memory, mapped or unpickled, without a copy."""
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


def take_shared(data):
    """In the main process, as a batch arrives: each shared payload's file mapped and unlinked at once,
    so nothing is left in /dev/shm whatever becomes of the batch (kept for later, dropped as a
    stale epoch's); the mapping lives as long as the tensor made from it."""
    if isinstance(data, _Payload):
        if data.shm_name is not None and data.array is None:
            path = os.path.join(SHM_DIR, data.shm_name)
            fd = os.open(path, os.O_RDWR)
            try:
                os.unlink(path)
                nbytes = os.fstat(fd).st_size
                mapped = mmap.mmap(fd, nbytes, flags=mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0))
            finally:
                os.close(fd)
            data.array = _np.frombuffer(mapped, dtype=_np.dtype(data.np_dtype)).reshape(data.shape)
        return data
    if isinstance(data, dict):
        for v in data.values():
            take_shared(v)
    elif isinstance(data, (list, tuple)):
        for v in data:
            take_shared(v)
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
                init_fn, worker_id, num_workers, shm_prefix=None):
    """One worker process: seed, run worker_init_fn, then answer (epoch, task, index) messages with
    (epoch, task, batch) until it reads None, done_event is set (the None may never arrive when the
    main process's iterator is collected with its queues) or its parent is gone."""
    global _worker_info, _shm_note
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
                    data = to_transport(data, shm_prefix)
                    if _shm_note is not None:
                        data, _shm_note = Noted(data, _shm_note), None
                except Exception:
                    data = ExceptionWrapper(sys.exc_info(), f"in DataLoader worker process {worker_id}")
            result_queue.put((epoch, task_idx, data))
            del data
    except KeyboardInterrupt:
        pass
    result_queue.cancel_join_thread()  # leave at once when told to stop, whether or not the main reads
    result_queue.close()
