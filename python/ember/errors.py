"""ember's typed errors as Python exceptions.

Each C++ error type of ember (include/ember/core/error.h and the layers' own) arrives as the class of
the same name here, derived from ember.Error and from the built-in exception a Python user would
catch for it: ``ember.ShapeError`` is a ``ValueError``, ``ember.IOError`` an ``OSError``,
``ember.OutOfMemoryError`` a ``MemoryError``. ``ember.ValueError``, ``ember.IndexError`` and
``ember.NotImplementedError`` keep ember's names and derive from the built-ins of those names, so
``except ValueError`` catches them. Every one carries ``hint``: one line saying how to fix it
("" when there is nothing the user can do), the line the CLI prints after ``hint:``.
"""

import builtins as _builtins
import pickle as _pickle

__all__ = [
    "Error", "ShapeError", "DTypeError", "DeviceError", "ValueError", "IndexError", "AutogradError", "DataError",
    "IOError", "FormatError", "CudaError", "OutOfMemoryError", "NotImplementedError", "NotInEmberError", "InternalError",
    "SettingError", "SpecError", "ResourceError", "RunDirInUse", "DistError", "PeerFailureError",
    "DistTimeoutError", "UnpicklingError",
    "ForbiddenGlobalError",
]


class Error(RuntimeError):
    """Any error ember raises; ``hint`` says how to fix it ("" when nothing can be done)."""

    def __init__(self, message: str = "", hint: str = "") -> None:
        super().__init__(message)
        self.hint = hint

    def __str__(self) -> str:
        text = super().__str__()
        return f"{text}\n  hint: {self.hint}" if self.hint else text


class ShapeError(Error, _builtins.ValueError):
    """Shapes or ranks that do not fit together."""


class DTypeError(Error, _builtins.TypeError):
    """A dtype the operation does not accept (or one NumPy has no type for, such as bfloat16)."""


class DeviceError(Error):
    """Tensors on different devices, a device that does not exist, a GPU required but unusable."""


class ValueError(Error, _builtins.ValueError):  # noqa: A001 - ember's name, a ValueError
    """An argument out of its range."""


class IndexError(Error, _builtins.IndexError):  # noqa: A001
    """An index or dimension out of range."""


class AutogradError(Error):
    """Backward through a freed graph, or of a non-scalar without a gradient."""


class DataError(Error, _builtins.ValueError):
    """A dataset file that is not what it claims to be."""


class IOError(Error, _builtins.OSError):  # noqa: A001
    """A file that cannot be opened, read or written."""


class FormatError(Error, _builtins.ValueError):
    """A checkpoint, weights or config file that is malformed."""


class CudaError(Error):
    """A CUDA, cuBLAS or cuDNN call that failed."""


class OutOfMemoryError(Error, _builtins.MemoryError):
    """Host or device memory ran out."""


class NotImplementedError(Error, _builtins.NotImplementedError):  # noqa: A001
    """An operation without a kernel for this device or dtype."""


class NotInEmberError(NotImplementedError, _builtins.AttributeError):
    """A PyTorch name ember does not have yet (``ember.nn.LSTM``): a NotImplementedError saying so,
    and an AttributeError, so that ``hasattr(ember.nn, "LSTM")`` is False and a program that probes
    for a feature before using it takes its other branch, as it would on an older PyTorch."""


class InternalError(Error):
    """A bug in ember: please report it."""


class SettingError(ValueError):
    """A training setting refused as its ``ember train`` flag would be (the same sentence)."""


class SpecError(FormatError):
    """A model spec file that cannot build a model."""


class ResourceError(Error):
    """The process cannot start the threads asked for."""


class RunDirInUse(Error):
    """Another live process owns the run directory."""


class DistError(Error):
    """A data-parallel job's failure (a rank that differs, a timeout, a peer that died)."""


class PeerFailureError(DistError):
    """A peer process died or closed its connections during a collective. ``rank`` and ``host`` name
    the peer when the message does (None otherwise)."""

    def __init__(self, message: str = "", hint: str = "") -> None:
        super().__init__(message, hint)
        import re
        # "...failed: rank 1 (host h, pid 12) has died..." or "rank 0 (the rendezvous store's host h)"
        found = re.search(r"failed: rank (\d+) \((?:host |the rendezvous store's host )([^,)\s]+)", message)
        self.rank = int(found.group(1)) if found else None
        self.host = found.group(2) if found else None


class DistTimeoutError(DistError, _builtins.TimeoutError):
    """A collective or the rendezvous did not finish within the group's timeout."""


class UnpicklingError(FormatError, _pickle.UnpicklingError):
    """A torch.save file ember.load cannot read: a damaged archive or pickle, a tensor that does not
    fit its storage. A ``pickle.UnpicklingError``, as torch.load raises."""


class ForbiddenGlobalError(UnpicklingError):
    """A torch.save file whose pickle names a global outside torch.load(weights_only=True)'s allow
    list (``os.system``, ``builtins.eval``): refused as soon as it is read, nothing called.
    ``global_name`` is the global ("os.system")."""

    global_name: str = ""


def _missing(module: str, name: str, known) -> _builtins.AttributeError:
    """What a module's __getattr__ raises for `name`: NotInEmberError when PyTorch's `module` has that
    callable (`known`, python/ember/_torch_api.py), else AttributeError."""
    torch_module = "torch" + module[len("ember"):]
    if name in known:
        return NotInEmberError(f"{torch_module}.{name} is not implemented in ember yet (docs/python.md lists what is)",
                               "write it with the tensor operations ember has, or run this part in PyTorch "
                               "(ember.Tensor and torch tensors share memory through DLPack)")
    return _builtins.AttributeError(f"module '{module}' has no attribute '{name}'")
