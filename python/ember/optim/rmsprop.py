"""ember.optim.RMSprop: torch.optim.RMSprop (alpha, eps, momentum, centered, weight decay, maximize)
on ember's fused update (ember._core.optim.rmsprop_step, one call per parameter group)."""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional

from .. import _core
from .optimizer import Optimizer

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """RMSprop, as torch.optim.RMSprop; state: ``step`` (a 0-d float32 tensor), ``square_avg``,
    ``momentum_buffer`` (momentum > 0), ``grad_avg`` (centered). foreach / capturable /
    differentiable are accepted and ignored."""

    def __init__(self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8, weight_decay: float = 0,
                 momentum: float = 0, centered: bool = False, capturable: bool = False,
                 foreach: Optional[bool] = None, maximize: bool = False, differentiable: bool = False) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered, weight_decay=weight_decay,
                        capturable=capturable, foreach=foreach, maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state: Dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("momentum", 0)
            group.setdefault("centered", False)
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("capturable", False)

    def step(self, closure: Optional[Callable[[], float]] = None):
        """One update of every parameter with a gradient; returns closure()'s loss when given one."""
        return self._run_step(closure, self._update_group)

    def _update_group(self, group: Dict[str, Any]) -> None:
        from .. import zeros_like

        params, grads = self._with_grads(group)
        if not params:
            return
        momentum, centered = float(group["momentum"]), bool(group["centered"])
        square_avgs, grad_avgs, buffers, steps = [], [], [], []
        for p in params:
            state = self.state[p]
            if len(state) == 0:
                state["step"] = self._new_step()
                state["square_avg"] = zeros_like(p)
                if momentum > 0:
                    state["momentum_buffer"] = zeros_like(p)
                if centered:
                    state["grad_avg"] = zeros_like(p)
            square_avgs.append(state["square_avg"])
            steps.append(state["step"])
            if momentum > 0:
                buffers.append(state["momentum_buffer"])
            if centered:
                grad_avgs.append(state["grad_avg"])
        _core.optim.rmsprop_step(params, grads, square_avgs, grad_avgs, buffers, steps, lr=float(group["lr"]),
                                 alpha=float(group["alpha"]), eps=float(group["eps"]),
                                 weight_decay=float(group["weight_decay"]), momentum=momentum, centered=centered,
                                 maximize=bool(group["maximize"]))
