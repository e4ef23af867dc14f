"""ember from Python: check the machine, train a run exactly as ``ember train`` does, look at its
metrics, predict with it, and hand its weights to PyTorch without a copy.

>>> import ember
>>> ember.doctor()["verdict"]                       # the doctor's JSON report, as a dict
>>> run = ember.fit(model="lenet5", epochs=3, seed=0, on_epoch_end=print)
>>> run.test_accuracy, run.run_dir
>>> model = ember.load_run(run.run_dir)
>>> model.predict("shirt.png").top(3)
>>> torch.from_dlpack(model.state_dict()["fc1.weight"])   # the same memory, no copy

docs/python.md walks through it.
"""

from __future__ import annotations

import json as _json
import os as _os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Union

from . import _core
from . import errors
from ._core import Device, Tensor, from_dlpack, from_numpy
from ._model import Model, Prediction, load_run
from .serialization import load, save
from . import accelerator, backends, version
from .amp import autocast, get_autocast_dtype, is_autocast_enabled
from .errors import *  # noqa: F401,F403 - ember.ShapeError, ember.SettingError, ...
from . import _tensor, cuda, autograd
from ._tensor import *  # noqa: F401,F403 - tensor, as_tensor, randint, ..., Size
from ._torch_names import *  # noqa: F401,F403 - PyTorch's top-level names (zeros, exp, float32, no_grad, ...)
from ._torch_names import __all__ as _torch_all
# ember.nn (issue 46): torch.nn's Module, layers, functional, init and utils
from . import nn
from . import utils  # ember.utils.data: torch.utils.data's datasets, samplers and DataLoader
from . import optim  # ember.optim, ember.optim.lr_scheduler: torch.optim's API on the library's updates
from . import distributed  # ember.distributed: torch.distributed's process group (Gloo/NCCL) and collectives

__version__ = _core.__version__

# `from ember import *` brings ember's names and error classes, but never one that would shadow a
# built-in (ember.ValueError, IndexError, NotImplementedError, IOError stay reachable as ember.X and
# derive from the built-ins, so `except ValueError:` still catches both).
import builtins as _builtins

__all__ = [
    "Device", "Tensor", "cuda", "from_dlpack", "from_numpy", "doctor", "fit", "FitResult", "load", "Model",
    "Prediction", "errors", "autograd",
    "load_run", "save",
    "accelerator", "backends", "version", "autocast", "get_autocast_dtype", "is_autocast_enabled",
] + ["nn", "optim", "utils"] + [_n for _n in errors.__all__ if not hasattr(_builtins, _n)] + [_n for _n in _torch_all if not hasattr(_builtins, _n)]
__all__ += ["distributed"]  # ember.distributed (issue 47)


def doctor(audit_python: bool = True, pythons: Optional[List[str]] = None, python_timeout: int = 60) -> Dict[str, Any]:
    """The report of ``ember doctor --json`` as a dict (schema in docs/doctor.md): the same checks,
    from the same library call, as the command.

    ``report["verdict"]`` says whether training can run and where (``"training_device"``), and
    ``report["verdict"]["first_fix"]`` what to do first ("" when nothing blocks training);
    ``report["checks"]`` lists every check with its level, message and fix. The interpreter this runs
    in (``sys.executable``) is audited besides $VIRTUAL_ENV, $CONDA_PREFIX and python3 on PATH, so an
    unactivated venv's frameworks are checked too. audit_python=False skips asking the interpreters
    for their frameworks (the slow part: each is started once); ``pythons`` names the interpreters to
    ask instead (like ``ember doctor --python``).
    """
    return _json.loads(_core._doctor_json(audit_python, list(pythons or []), python_timeout))


@dataclass
class FitResult:
    """What ember.fit returns: how the run ended, its per-epoch metrics and where it lives."""

    status: str                  # "completed" or "early_stopped" ("interrupted" for stop_after_steps; other ends raise)
    run_dir: Path                # runs/<name>: config.json, metrics.jsonl, checkpoints/
    history: List[Dict[str, Any]]  # one dict per epoch of this call, as on_epoch_end received them
    # The final evaluation on the test set of the model ember.load_run(run_dir) gives: the weights of
    # the epoch model selection chose (evaluated_epoch), evaluated as `ember eval` does.
    test_accuracy: Optional[float]
    test_loss: Optional[float]
    best_epoch: int              # the epoch model selection chose (1-based)
    best_test_acc: Optional[float]  # that epoch's test accuracy, as measured after it during training
    selected_on: str             # "val" or "test"
    epoch: int                   # epochs completed
    step: int                    # optimizer steps completed
    wall_seconds: float
    device: str
    device_why: str
    precision: str
    message: str = ""
    config: Dict[str, Any] = field(default_factory=dict)  # config.json
    evaluated_epoch: int = 0     # whose weights test_accuracy measured (the best epoch's)
    last_epoch_test_acc: Optional[float] = None  # the last epoch's test accuracy, when it is another epoch


def fit(*, on_epoch_end: Optional[Callable[[Dict[str, Any]], None]] = None,
        on_step: Optional[Callable[[Dict[str, Any]], None]] = None,
        resume: Union[str, "_os.PathLike[str]", None] = None,
        config: Union[str, "_os.PathLike[str]", None] = None,
        **settings: Any) -> FitResult:
    """Train a run with ``ember train``'s settings: the same names (``batch_size`` for
    ``--batch-size``), defaults, checks and messages, and the same run bit for bit for the same
    seed. Returns when the run ends (FitResult).

    on_epoch_end(logs): after each epoch, with its metrics (epoch, train_loss, train_acc, val_loss,
    val_acc, test_loss, test_acc, lr, samples_per_s, seconds; None where not measured).
    on_step(logs): after each optimizer step (step, epoch, step_in_epoch, steps_per_epoch).
    An exception raised by a callback stops the run at the next step with a checkpoint, then is raised
    again; Ctrl-C (SIGINT) does the same and raises KeyboardInterrupt. Both resume with
    ``ember.fit(resume=run_dir)``.
    resume: a run directory (or one of its manifests) to continue; config: a TOML file of settings
    (``ember train --config``; keywords win over it). A bad setting raises ember.SettingError with the
    sentence the flag would print.
    verbose: what the run prints on sys.stdout, as Keras's fit(verbose=): "auto" or 1 (the default) a
    short banner, a line per epoch and a progress bar on a terminal (elsewhere, a notebook or a log,
    a progress line every 20 s); 2 the banner and a line per epoch; 0 nothing (warnings still come as
    UserWarning).
    model: a zoo name or a spec file (*.toml) as ``--model``, or a module defined in Python — an
    ember.nn.Module, or any object with ``named_parameters()``, ``__call__`` (its forward) and
    ``train(mode)``, whose parameters are ember.Tensor leaves. The run trains that object's own
    tensors in place by ``ember train``'s rules (device, precision, optimizer, checkpoints by its
    state_dict names, report); at the end it holds the selected epoch's weights, those
    ``test_accuracy`` measured (checkpoints/best.json). It takes the data's images as a float32
    (N, C, H, W) batch and gives (N, classes) logits (ember.ShapeError before anything is written
    otherwise). The run records it as "python:<class>": resume it with the class at hand,
    ``ember.fit(model=Net(), resume=run_dir)`` (`ember eval` and `ember train --resume` cannot rebuild
    it). An exception its forward raises stops the run with a checkpoint and is raised again.
    """
    module = settings.pop("model", None) if _is_module(settings.get("model")) else None
    if settings.get("model") is not None and not isinstance(settings["model"], (str, _os.PathLike)):
        raise TypeError(f"model must be a zoo name, a spec file (*.toml) or a module (an ember.nn.Module, or an "
                        f"object with named_parameters() and __call__), not {type(settings['model']).__name__}")
    values = {k: (os_fspath(v) if isinstance(v, _os.PathLike) else v) for k, v in settings.items()}
    # ember.int / ember.bool are dtypes here (PyTorch's names): the built-ins by their full name.
    if isinstance(values.get("verbose"), _builtins.int) and not isinstance(values["verbose"], _builtins.bool):
        values["verbose"] = str(values["verbose"])  # Keras's verbose=0/1/2; the setting's values are text
    r = _core._fit(_json.dumps(values), os_fspath(resume) if resume else "", os_fspath(config) if config else "",
                   on_epoch_end, on_step, module)
    return FitResult(status=r["status"], run_dir=Path(r["run_dir"]), history=list(r["history"]),
                     test_accuracy=r["test_accuracy"], test_loss=r["test_loss"], best_epoch=r["best_epoch"],
                     best_test_acc=r["best_test_acc"], selected_on=r["selected_on"], epoch=r["epoch"],
                     step=r["step"], wall_seconds=r["wall_seconds"], device=r["device"], device_why=r["device_why"],
                     precision=r["precision"], message=r["message"], config=_json.loads(r["config_json"]),
                     evaluated_epoch=r["evaluated_epoch"], last_epoch_test_acc=r["last_epoch_test_acc"])


def _is_module(obj: Any) -> bool:
    """A module defined in Python for ember.fit: parameters by name and a forward to call."""
    return obj is not None and callable(obj) and callable(getattr(obj, "named_parameters", None))


def os_fspath(p: Union[str, "_os.PathLike[str]"]) -> str:
    return str(_os.fspath(p))


def __dir__() -> List[str]:
    """What ``dir(ember)`` lists: the public names, not the typing helpers this module imports."""
    return sorted(set(__all__) | {"__version__"} | {n for n in errors.__all__} | set(_torch_all))


def __getattr__(name: str):
    """A name ember does not have: NotImplementedError naming PyTorch's function when torch has one
    by that name (ember.NotInEmberError, also an AttributeError), else AttributeError."""
    from ._torch_api import TORCH

    raise errors._missing(__name__, name, TORCH)
