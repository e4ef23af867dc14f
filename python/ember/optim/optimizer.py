"""ember.optim.Optimizer: torch.optim.Optimizer's object model in Python — ``param_groups`` (a list of
dicts carrying every hyper-parameter, read at each step, so users and schedulers may change them),
``state`` (a dict keyed by parameter, PyTorch's keys), ``zero_grad``, ``step`` hooks and
``state_dict``/``load_state_dict`` in PyTorch's exact format. The updates themselves are C++
(ember._core.optim, one call per parameter group on the library's fused kernels).

Where ember differs: ``foreach=``, ``fused=``, ``capturable=`` and ``differentiable=`` are accepted
(and kept in the groups, so state dicts match PyTorch's) but change nothing — every step runs ember's
fused kernel for contiguous float32/float64 parameters and its reference path otherwise.
"""

from __future__ import annotations

import warnings
from collections import OrderedDict, defaultdict
from copy import deepcopy
from itertools import chain
from typing import Any, Callable, Dict, Iterable, List, Optional

from .. import _core
from .._core import Tensor

__all__ = ["Optimizer", "required"]


class _RequiredParameter:
    """Singleton class representing a required parameter for an Optimizer."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()


class _RemovableHandle:
    """What register_*_hook returns: ``handle.remove()`` takes the hook out again."""

    _next_id = 0

    def __init__(self, hooks: "OrderedDict[int, Callable]") -> None:
        self._hooks = hooks
        self.id = _RemovableHandle._next_id
        _RemovableHandle._next_id += 1

    def remove(self) -> None:
        self._hooks.pop(self.id, None)


def _typename(obj: Any) -> str:
    if isinstance(obj, Tensor):
        return "ember.Tensor"
    return type(obj).__module__ + "." + type(obj).__qualname__ if type(obj).__module__ != "builtins" else type(obj).__qualname__


def _as_ember_tensor(value: Any) -> Any:
    """A tensor of another framework (torch's, from a torch.optim state dict) as an ember tensor, copied
    through DLPack; anything else unchanged."""
    if isinstance(value, Tensor) or not hasattr(value, "__dlpack__"):
        return value
    from .. import from_dlpack

    return from_dlpack(value.detach() if hasattr(value, "detach") else value).clone()


def _wrap_step(step: Callable) -> Callable:
    """A subclass's step() with the optimizer's step pre- and post-hooks around it (PyTorch's
    register_step_pre_hook / register_step_post_hook and their global forms)."""

    def step_with_hooks(self, *args, **kwargs):
        for hook in chain(_global_step_pre_hooks.values(), self._optimizer_step_pre_hooks.values()):
            result = hook(self, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError(
                        f"{hook} must return None or a tuple of (new_args, new_kwargs), but got {result}.")
                args, kwargs = result
        out = step(self, *args, **kwargs)
        for hook in chain(self._optimizer_step_post_hooks.values(), _global_step_post_hooks.values()):
            hook(self, args, kwargs)
        return out

    step_with_hooks.__wrapped__ = step
    step_with_hooks.__doc__ = step.__doc__
    step_with_hooks.__name__ = step.__name__
    return step_with_hooks


_global_step_pre_hooks: "OrderedDict[int, Callable]" = OrderedDict()
_global_step_post_hooks: "OrderedDict[int, Callable]" = OrderedDict()


def register_optimizer_step_pre_hook(hook: Callable) -> _RemovableHandle:
    """A hook run before every optimizer's step: hook(optimizer, args, kwargs) -> None or (args, kwargs)."""
    handle = _RemovableHandle(_global_step_pre_hooks)
    _global_step_pre_hooks[handle.id] = hook
    return handle


def register_optimizer_step_post_hook(hook: Callable) -> _RemovableHandle:
    """A hook run after every optimizer's step: hook(optimizer, args, kwargs) -> None."""
    handle = _RemovableHandle(_global_step_post_hooks)
    _global_step_post_hooks[handle.id] = hook
    return handle


class Optimizer:
    """Base class for all optimizers, as torch.optim.Optimizer.

    params: an iterable of tensors (``model.parameters()``, a generator is fine), of dicts (parameter
    groups: ``{"params": [...], "lr": 0.1}``; unset options take ``defaults``), or of (name, tensor)
    pairs. defaults: the options of every group that does not set them.
    """

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if "step" in cls.__dict__ and not hasattr(cls.__dict__["step"], "__wrapped__"):
            cls.step = _wrap_step(cls.__dict__["step"])

    def __init__(self, params: Iterable, defaults: Dict[str, Any]) -> None:
        self.defaults = defaults
        self._optimizer_step_pre_hooks: "OrderedDict[int, Callable]" = OrderedDict()
        self._optimizer_step_post_hooks: "OrderedDict[int, Callable]" = OrderedDict()
        self._optimizer_state_dict_pre_hooks: "OrderedDict[int, Callable]" = OrderedDict()
        self._optimizer_state_dict_post_hooks: "OrderedDict[int, Callable]" = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks: "OrderedDict[int, Callable]" = OrderedDict()
        self._optimizer_load_state_dict_post_hooks: "OrderedDict[int, Callable]" = OrderedDict()
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            "but got " + _typename(params))
        if isinstance(params, set):
            warnings.warn("optimizer parameters need to be organized in ordered collections, but the ordering of "
                          "tensors in sets will change between runs. Please use a list instead. This will be an "
                          "error in a future release.", FutureWarning, stacklevel=2)
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: List[Dict[str, Any]] = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    def __getstate__(self) -> Dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)
        for name in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks", "_optimizer_state_dict_pre_hooks",
                     "_optimizer_state_dict_post_hooks", "_optimizer_load_state_dict_pre_hooks",
                     "_optimizer_load_state_dict_post_hooks"):
            self.__dict__.setdefault(name, OrderedDict())

    def __repr__(self) -> str:
        format_string = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            format_string += "\n"
            format_string += f"Parameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    format_string += f"    {key}: {group[key]}\n"
        format_string += ")"
        return format_string

    # ---- groups ------------------------------------------------------------------------------------
    def add_param_group(self, param_group: Dict[str, Any]) -> None:
        """Adds a group (a dict with "params" and any options) to param_groups, with PyTorch's checks."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering of "
                            "tensors in sets will change between runs. Please use a list instead.")
        else:
            param_group["params"] = list(params)

        tensors, names = [], []
        for param in param_group["params"]:
            if isinstance(param, tuple):
                names.append(param[0])
                tensors.append(param[1])
            else:
                tensors.append(param)
        param_group["params"] = tensors
        if names:
            if len(names) == len(tensors):
                param_group["param_names"] = names
            else:
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")

        for param in param_group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is " + _typename(param))
            if not self.defaults.get("differentiable", None) and not param.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")

        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)

        params = param_group["params"]
        if len(params) != len({id(p) for p in params}):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will cause "
                          "an error; see github.com/pytorch/pytorch/issues/40967 for more information", stacklevel=3)

        seen = set()
        for group in self.param_groups:
            seen.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {which} to the optimizer")
        if not seen.isdisjoint(id(p) for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    # ---- gradients and steps -----------------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Resets every parameter's .grad: to None (the default), else to zeros in place."""
        for group in self.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if g.requires_grad:
                        g.requires_grad_(False)
                    g.zero_()

    def step(self, closure: Optional[Callable[[], float]] = None):
        """One update of every parameter that has a gradient (each optimizer defines it)."""
        raise NotImplementedError

    def _run_step(self, closure: Optional[Callable], update_group: Callable[[Dict[str, Any]], None]):
        """step()'s frame: the closure with gradients on, then each group's update with them off."""
        from .. import enable_grad, no_grad

        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                update_group(group)
        return loss

    @staticmethod
    def _with_grads(group: Dict[str, Any]):
        """The group's parameters that have a gradient, and those gradients (PyTorch skips the others)."""
        params, grads = [], []
        for p in group["params"]:
            g = p.grad
            if g is not None:
                params.append(p)
                grads.append(g)
        return params, grads

    @staticmethod
    def _new_step() -> Tensor:
        """state["step"] as PyTorch 2.x keeps it: a 0-d float32 tensor on the CPU."""
        from .. import tensor

        return tensor(0.0)

    # ---- hooks -------------------------------------------------------------------------------------
    def register_step_pre_hook(self, hook: Callable) -> _RemovableHandle:
        """hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs), run before each step()."""
        handle = _RemovableHandle(self._optimizer_step_pre_hooks)
        self._optimizer_step_pre_hooks[handle.id] = hook
        return handle

    def register_step_post_hook(self, hook: Callable) -> _RemovableHandle:
        """hook(optimizer, args, kwargs) -> None, run after each step()."""
        handle = _RemovableHandle(self._optimizer_step_post_hooks)
        self._optimizer_step_post_hooks[handle.id] = hook
        return handle

    def register_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> _RemovableHandle:
        return self._register(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> _RemovableHandle:
        return self._register(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> _RemovableHandle:
        return self._register(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> _RemovableHandle:
        return self._register(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    @staticmethod
    def _register(hooks: "OrderedDict[int, Callable]", hook: Callable, prepend: bool) -> _RemovableHandle:
        handle = _RemovableHandle(hooks)
        hooks[handle.id] = hook
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    # ---- state dicts -------------------------------------------------------------------------------
    def state_dict(self) -> Dict[str, Any]:
        """{"state": {index: {...}}, "param_groups": [{..., "params": [indices]}]}: PyTorch's format, the
        parameters numbered in the order of the groups. The tensors are the live state, as PyTorch's."""
        for hook in self._optimizer_state_dict_pre_hooks.values():
            hook(self)
        mapping: Dict[int, int] = {}
        start = 0

        def pack_group(group: Dict[str, Any]) -> Dict[str, Any]:
            nonlocal start
            packed = {k: v for k, v in group.items() if k != "params"}
            mapping.update({id(p): i for i, p in enumerate(group["params"], start) if id(p) not in mapping})
            packed["params"] = [mapping[id(p)] for p in group["params"]]
            start += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {(mapping[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        state_dict = {"state": packed_state, "param_groups": param_groups}
        for hook in self._optimizer_state_dict_post_hooks.values():
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Loads a state_dict() of this optimizer's kind, ember's or torch.optim's (a torch tensor in it is
        copied into an ember tensor through DLPack). Buffers take each parameter's dtype and device;
        "step" is kept as saved, as PyTorch keeps it."""
        state_dict = state_dict.copy()
        for hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))

        def cast(param: Tensor, value: Any, key: Optional[str] = None) -> Any:
            value = _as_ember_tensor(value)
            if isinstance(value, Tensor):
                if key == "step":
                    return value
                if param.is_floating_point():
                    return value.to(dtype=param.dtype, device=param.device)
                return value.to(device=param.device)
            if isinstance(value, dict):
                return {k: cast(param, v, key=k) for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return type(value)(cast(param, v) for v in value)
            return value

        state: defaultdict = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = cast(param, v)
            else:
                state[k] = v

        def update_group(group: Dict[str, Any], new_group: Dict[str, Any]) -> Dict[str, Any]:
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        self.__setstate__({"state": state, "param_groups": [update_group(g, ng) for g, ng in zip(groups, saved_groups)]})
        for hook in self._optimizer_load_state_dict_post_hooks.values():
            hook(self)
