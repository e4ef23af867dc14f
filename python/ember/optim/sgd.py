"""ember.optim.SGD: torch.optim.SGD (momentum, dampening, Nesterov, weight decay, maximize) on
ember's fused update (ember._core.optim.sgd_step, one call per parameter group)."""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional

from .. import _core
from .optimizer import Optimizer

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent, as torch.optim.SGD; state: ``momentum_buffer`` (when momentum != 0).
    foreach / fused / differentiable are accepted and ignored (ember.optim's module docstring)."""

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: Optional[bool] = None, differentiable: bool = False, fused: Optional[bool] = None) -> None:
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay, nesterov=nesterov,
                        maximize=maximize, foreach=foreach, differentiable=differentiable, fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    def __setstate__(self, state: Dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("nesterov", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("differentiable", False)
            group.setdefault("fused", False)

    def step(self, closure: Optional[Callable[[], float]] = None):
        """One update of every parameter with a gradient; returns closure()'s loss when given one."""
        return self._run_step(closure, self._update_group)

    def _update_group(self, group: Dict[str, Any]) -> None:
        params, grads = self._with_grads(group)
        if not params:
            return
        momentum = float(group["momentum"])
        buffers = [self.state[p].get("momentum_buffer") for p in params] if momentum != 0 else []
        buffers = _core.optim.sgd_step(params, grads, buffers, lr=float(group["lr"]), momentum=momentum,
                                       dampening=float(group["dampening"]),
                                       weight_decay=float(group["weight_decay"]), nesterov=bool(group["nesterov"]),
                                       maximize=bool(group["maximize"]))
        if momentum != 0:
            for p, buf in zip(params, buffers):
                self.state[p]["momentum_buffer"] = buf
