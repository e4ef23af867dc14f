"""``ember.save`` / ``ember.load``: PyTorch's ``torch.save`` files, written and read by ember's C++
library (ember/io/pth.h) without running any pickled code.

``ember.save(obj, f)`` writes the zip format ``torch.save`` writes (since PyTorch 1.6), which
``torch.load(f, weights_only=True)`` reads: tensors (any ember dtype), dicts, OrderedDicts, lists,
tuples, int, float, bool, str, bytes, None, ``ember.Size``, dtypes and devices, nested — a model's
``state_dict()``, an optimizer's, a checkpoint dict of both. ``ember.load(f)`` reads what
``torch.save`` writes (the zip format and the legacy pre-1.6 one) into the same structures with
ember tensors.

Where ember differs from PyTorch:

- Each tensor is saved with its own storage, contiguous: two views of one storage (``t`` and
  ``t[0]``) come back from ``torch.load`` as two tensors that no longer share memory (the same
  tensor object saved twice is still saved once). ``ember.load`` of a file whose tensors share a
  storage likewise gives each its own copy.
- ``ember.load`` never executes code: it reads only what ``torch.load(weights_only=True)`` reads.
  A global outside that allow list (``os.system``, ``builtins.eval``, a class of yours) raises
  ``ember.ForbiddenGlobalError`` (a ``pickle.UnpicklingError``) naming it, and nothing is called;
  ``weights_only=False`` raises ``ember.NotImplementedError`` instead of running pickled code.
- ``map_location``: None (each tensor where it was saved: a CUDA tensor on a machine without a
  usable GPU raises ember.DeviceError, as torch raises RuntimeError), a device or its name, a dict
  of saved location → location (``{"cuda:0": "cpu"}``), or a callable ``fn(tensor, location)``
  returning the tensor to use (PyTorch passes a storage; ember passes the CPU tensor) or None for
  the default.
"""

from __future__ import annotations

import io as _io
import os
import warnings
from typing import Any, BinaryIO, Callable, Dict, Optional, Union

from . import _core
from ._core import Device, Tensor
from .errors import DeviceError, NotImplementedError as _NotImplementedError

__all__ = ["save", "load"]

FileLike = Union[str, "os.PathLike[str]", BinaryIO, _io.BytesIO]

_LEGACY_LOAD_KEYWORDS = ("checkpoint", "device", "model", "classes")


def save(obj: Any, f: FileLike, pickle_module: Any = None, pickle_protocol: int = 2,
         _use_new_zipfile_serialization: bool = True, _disable_byteorder_record: bool = False) -> None:
    """torch.save: writes ``obj`` to ``f`` (a path, written atomically, or a binary file object) in
    the zip format ``torch.load(f, weights_only=True)`` reads. A value that format cannot hold (a set,
    a lambda, a NumPy array, a class of yours) raises TypeError naming where it is in ``obj``
    (``"obj['model']['x']: set is not saveable"``) and writes nothing."""
    if pickle_module is not None:
        raise _NotImplementedError("ember.save(pickle_module=...): ember writes the pickle itself (protocol 2, "
                                   "as torch.save does)", "leave pickle_module out")
    if not _use_new_zipfile_serialization:
        raise _NotImplementedError("ember.save writes only the zip format of torch.save (PyTorch 1.6 and later)",
                                   "leave _use_new_zipfile_serialization out; every PyTorch since 1.6 reads it")
    if isinstance(f, (str, os.PathLike)):
        _core._save_file(obj, os.fspath(f))
    elif hasattr(f, "write"):
        f.write(_core._save_bytes(obj))
    else:
        raise TypeError(f"ember.save: f must be a path or a binary file object, got {type(f).__name__}")


def _placer(map_location: Any) -> Callable[[Tensor, str], Tensor]:
    """place(tensor, saved_location): the tensor on the device map_location picks."""

    def default(t: Tensor, location: str) -> Tensor:
        d = Device(location)
        if d.type == "cuda" and not _core.cuda.is_available():
            raise DeviceError(
                f"Attempting to deserialize object on a CUDA device ({location}) but ember.cuda.is_available() is "
                f"False: {_core.cuda.unavailable_reason()}",
                "on a CPU-only machine, use ember.load with map_location='cpu' (or ember.device('cpu')) to map "
                "the tensors to the CPU")
        return t if d.type == "cpu" else t.to(d)

    if map_location is None:
        return default
    if isinstance(map_location, (str, Device)):
        target = Device(map_location) if isinstance(map_location, str) else map_location
        return lambda t, location: default(t, str(target))
    if isinstance(map_location, dict):
        return lambda t, location: default(t, str(map_location.get(location, location)))
    if callable(map_location):
        def call(t: Tensor, location: str) -> Tensor:
            r = map_location(t, location)
            if r is None:
                return default(t, location)
            if not isinstance(r, Tensor):
                raise TypeError(f"map_location returned {type(r).__name__}: ember passes the loaded CPU tensor and "
                                "takes back a tensor (or None for the saved location)")
            return r
        return call
    raise TypeError(f"map_location must be None, a device, a str, a dict or a callable, got {type(map_location).__name__}")


def _is_torch_file(path: str) -> bool:
    with open(path, "rb") as fh:
        return _core._pth_sniff(fh.read(64))


def load(f: FileLike, map_location: Any = None, pickle_module: Any = None, *, weights_only: Optional[bool] = True,
         mmap: Optional[bool] = None, **legacy: Any) -> Any:
    """torch.load: the object a ``torch.save`` file holds (the zip format or the legacy pre-1.6
    stream), with ember tensors placed by ``map_location``; read as ``torch.load(f,
    weights_only=True)`` reads it, never running pickled code (module docstring).

    Given a run directory of ``ember train`` / ``ember.fit``, or one of its checkpoints, this still
    returns the run's Model, with a DeprecationWarning: that is ``ember.load_run`` now (which also
    takes the keywords checkpoint=, device=, model=, classes=)."""
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        if legacy or os.path.isdir(path) or (os.path.isfile(path) and not _is_torch_file(path)):
            return _load_run_deprecated(path, legacy, map_location)
    if weights_only is False:
        raise _NotImplementedError(
            "ember.load(weights_only=False): ember never runs code from a pickle, so it reads only what "
            "torch.load(weights_only=True) reads",
            "drop weights_only=False: state dicts, optimizer states and checkpoints of tensors, numbers, strings, "
            "lists and dicts load as they are; save other objects as those in PyTorch first")
    if pickle_module is not None:
        raise _NotImplementedError("ember.load(pickle_module=...): ember reads the pickle itself",
                                   "leave pickle_module out")
    place = _placer(map_location)
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        if not os.path.exists(path):
            raise FileNotFoundError(2, "No such file or directory", path)
        return _core._load_file(path, place)
    if hasattr(f, "read"):
        name = getattr(f, "name", None)
        return _core._load_bytes(f.read(), str(name) if isinstance(name, str) else "<file object>", place)
    raise TypeError(f"ember.load: f must be a path or a binary file object, got {type(f).__name__}")


def _load_run_deprecated(path: str, legacy: Dict[str, Any], map_location: Any) -> Any:
    from ._model import load_run

    unknown = sorted(set(legacy) - set(_LEGACY_LOAD_KEYWORDS))
    if unknown:
        raise TypeError(f"ember.load_run() got unexpected keyword arguments {unknown}")
    if map_location is not None and "checkpoint" not in legacy and isinstance(map_location, str):
        legacy["checkpoint"] = map_location  # the old signature's second positional argument
    warnings.warn("ember.load(run) of a run directory or its checkpoint is deprecated: use ember.load_run(run); "
                  "ember.load reads torch.save files, as torch.load does", DeprecationWarning, stacklevel=3)
    return load_run(path, **legacy)
