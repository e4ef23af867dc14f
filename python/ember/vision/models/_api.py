"""torchvision's weights API on ember: ``Weights`` (url, transforms, meta), ``WeightsEnum`` (the
``ResNet18_Weights.IMAGENET1K_V1`` members, made from _weights_table's data), and the one rule for
where a builder's ``weights=`` comes from: a member's file (torchvision's file name, looked up in
torch hub's cache and ember's; never downloaded) or a path to a torch.save file."""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import Enum
from functools import partial
from pathlib import Path
from typing import Any, Callable, Dict, Optional

from ._meta import _IMAGENET_CATEGORIES
from ._presets import ImageClassification
from ._weights_table import TABLE

__all__ = ["Weights", "WeightsEnum", "get_model", "get_model_builder", "get_model_weights", "get_weight",
           "list_models", "weights_search_dirs"]


@dataclass
class Weights:
    """A file of pre-trained weights: where torchvision downloads it from, the preset that prepares
    inputs for it (``transforms()``), and its meta (categories, num_params, metrics ...)."""

    url: str
    transforms: Callable
    meta: Dict[str, Any]


class WeightsEnum(Enum):
    """torchvision's weights enums: ``ResNet18_Weights.IMAGENET1K_V1.url``, ``.meta``, ``.transforms()``,
    ``ResNet18_Weights.DEFAULT``, ``ResNet18_Weights.verify("IMAGENET1K_V1")``."""

    @classmethod
    def verify(cls, obj: Any) -> Any:
        if obj is not None:
            if type(obj) is str:
                name = obj.replace(cls.__name__ + ".", "")
                if name not in cls.__members__:
                    raise ValueError(f"{cls.__name__} has no member {obj!r}; its members are "
                                     f"{', '.join(cls.__members__)} (or pass a path to a .pth file)")
                obj = cls[name]
            elif not isinstance(obj, cls):
                raise TypeError(f"Invalid Weight class provided; expected {cls.__name__} but received "
                                f"{obj.__class__.__name__}.")
        return obj

    def get_state_dict(self, *args: Any, **kwargs: Any) -> Dict[str, Any]:
        """The member's file read from the local caches (``weights_search_dirs()``): ember never
        downloads it, and says where to put it when it is missing."""
        return _read_state_dict(find_weights_file(self))

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}.{self._name_}"

    @property
    def url(self) -> str:
        return self.value.url

    @property
    def transforms(self) -> Callable:
        return self.value.transforms

    @property
    def meta(self) -> Dict[str, Any]:
        return self.value.meta


def _weights_from_table(entry: dict) -> Weights:
    kw = dict(entry["transforms"])
    if kw.pop("preset") != "ImageClassification":
        raise AssertionError("only ImageClassification presets are in the table")
    meta = dict(entry["meta"])
    if meta.get("categories") == "_IMAGENET_CATEGORIES":
        meta["categories"] = _IMAGENET_CATEGORIES
    return Weights(url=entry["url"], transforms=partial(ImageClassification, **kw), meta=meta)


def _make_enum(name: str) -> type:
    """The enum class ``name`` (torchvision's) from the table: its members, then DEFAULT as an alias."""
    entry = TABLE[name]
    members = {m: _weights_from_table(e) for m, e in entry["members"].items()}
    members["DEFAULT"] = members[entry["default"]]  # equal value: Enum makes DEFAULT an alias
    return WeightsEnum(name, members, module=f"{__package__}")


def torch_home() -> Path:
    """torch.hub's folder, as torch computes it: $TORCH_HOME, else $XDG_CACHE_HOME/torch, else ~/.cache/torch."""
    return Path(os.path.expanduser(os.getenv("TORCH_HOME", os.path.join(os.getenv("XDG_CACHE_HOME", "~/.cache"),
                                                                        "torch"))))


def weights_search_dirs() -> list:
    """Where a weights member's file is looked for, in order: torch hub's checkpoints folder (where
    torchvision caches its downloads), then ember's ($XDG_CACHE_HOME or ~/.cache)/ember/models."""
    ember_cache = Path(os.path.expanduser(os.getenv("XDG_CACHE_HOME", "~/.cache"))) / "ember" / "models"
    return [torch_home() / "hub" / "checkpoints", ember_cache]


def find_weights_file(weights: WeightsEnum) -> Path:
    file_name = os.path.basename(weights.url)
    dirs = weights_search_dirs()
    for d in dirs:
        if (d / file_name).is_file():
            return d / file_name
    raise FileNotFoundError(
        f"{weights!r}: the weights file {file_name} is not in {' or '.join(str(d) for d in dirs)}. ember does not "
        f"download it: fetch {weights.url} and put it in {dirs[0]} (where torchvision keeps it), e.g.\n"
        f"  mkdir -p {dirs[0]} && curl -L -o {dirs[0] / file_name} {weights.url}")


def _read_state_dict(path) -> Dict[str, Any]:
    from ... import load  # the restricted unpickler of src/io: zip and legacy torch.save files

    obj = load(os.fspath(path), map_location="cpu", weights_only=True)
    if not isinstance(obj, dict):
        raise ValueError(f"{path}: expected a state dict (a mapping of names to tensors), found {type(obj).__name__}")
    return obj


def resolve_weights(enum_cls: type, weights: Any, kwargs: Optional[dict] = None) -> Any:
    """A builder's ``weights=``: None, a member of ``enum_cls`` (or its name, 'IMAGENET1K_V1', 'DEFAULT',
    'ResNet18_Weights.DEFAULT'), or a path to a torch.save file of a state dict (os.PathLike, or a
    string that names no member). Returns None, the member, or the Path. torchvision's deprecated
    ``pretrained=True`` in kwargs means DEFAULT, with torchvision's warning."""
    if kwargs is not None and "pretrained" in kwargs:
        import warnings

        pretrained = kwargs.pop("pretrained")
        if weights is None and pretrained:
            warnings.warn(f"The parameter 'pretrained' is deprecated, please use 'weights' instead; "
                          f"pretrained=True means weights={enum_cls.__name__}.DEFAULT", UserWarning, stacklevel=4)
            weights = enum_cls.DEFAULT
    if weights is None:
        return weights
    if isinstance(weights, enum_cls):
        find_weights_file(weights)  # a missing file is said before the model is built
        return weights
    if isinstance(weights, (str, os.PathLike)):
        name = os.fspath(weights)
        if isinstance(weights, str) and name.replace(enum_cls.__name__ + ".", "") in enum_cls.__members__:
            return resolve_weights(enum_cls, enum_cls.verify(name))
        path = Path(name)
        if path.is_file():
            return path
        raise FileNotFoundError(f"weights={name!r} is neither a {enum_cls.__name__} member "
                                f"({', '.join(enum_cls.__members__)}) nor an existing file")
    return enum_cls.verify(weights)  # a wrong enum type: torchvision's TypeError


def load_weights(model, weights: Any) -> None:
    """Loads resolve_weights's result into model (strict: missing or unexpected keys are an error)."""
    state = _read_state_dict(weights) if isinstance(weights, Path) else weights.get_state_dict()
    try:
        model.load_state_dict(state)
    except RuntimeError as e:
        where = weights if isinstance(weights, Path) else f"{weights!r} ({find_weights_file(weights)})"
        raise RuntimeError(f"the weights {where} do not fit {type(model).__name__}: {e}") from e


def num_classes_for(weights: Any, kwargs: dict) -> None:
    """torchvision's _ovewrite_named_param for num_classes: a member's categories fix the class count."""
    if isinstance(weights, WeightsEnum) and weights.meta.get("categories") is not None:
        n = len(weights.meta["categories"])
        if kwargs.get("num_classes", n) != n:
            raise ValueError(f"The parameter 'num_classes' expected value {n} but got {kwargs['num_classes']} "
                             "instead.")
        kwargs["num_classes"] = n


BUILTIN_MODELS: Dict[str, Callable] = {}


def register_model(fn: Callable) -> Callable:
    BUILTIN_MODELS[fn.__name__] = fn
    return fn


def list_models(module=None, include=None, exclude=None) -> list:
    import fnmatch

    names = sorted(n for n, f in BUILTIN_MODELS.items() if module is None or f.__module__.startswith(module.__name__))
    if include:
        pats = [include] if isinstance(include, str) else include
        names = [n for n in names if any(fnmatch.fnmatch(n, p) for p in pats)]
    if exclude:
        pats = [exclude] if isinstance(exclude, str) else exclude
        names = [n for n in names if not any(fnmatch.fnmatch(n, p) for p in pats)]
    return names


def get_model_builder(name: str) -> Callable:
    name = name.lower()
    if name not in BUILTIN_MODELS:
        raise ValueError(f"Unknown model {name}; ember.vision.models has {', '.join(sorted(BUILTIN_MODELS))}")
    return BUILTIN_MODELS[name]


def get_model(name: str, **config: Any):
    return get_model_builder(name)(**config)


def get_model_weights(name) -> type:
    fn = get_model_builder(name) if isinstance(name, str) else name
    return fn._weights_enum


def get_weight(name: str) -> WeightsEnum:
    try:
        enum_name, value_name = name.split(".")
    except ValueError:
        raise ValueError(f"Invalid weight name provided: '{name}'.") from None
    for fn in BUILTIN_MODELS.values():
        if fn._weights_enum.__name__ == enum_name:
            return fn._weights_enum[value_name]
    raise ValueError(f"The weight enum '{enum_name}' for the specific method couldn't be retrieved.")
