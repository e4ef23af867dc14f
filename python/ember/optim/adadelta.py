"""ember.optim.Adadelta: torch.optim.Adadelta (rho, eps, weight decay, maximize) on ember's fused
update (ember._core.optim.adadelta_step, one call per parameter group)."""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional

from .. import _core
from .optimizer import Optimizer

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """Adadelta, as torch.optim.Adadelta; state: ``step`` (a 0-d float32 tensor), ``square_avg``,
    ``acc_delta``. foreach / capturable / differentiable are accepted and ignored."""

    def __init__(self, params, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6, weight_decay: float = 0,
                 foreach: Optional[bool] = None, *, capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize, capturable=capturable,
                        foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state: Dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
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
        square_avgs, acc_deltas, steps = [], [], []
        for p in params:
            state = self.state[p]
            if len(state) == 0:
                state["step"] = self._new_step()
                state["square_avg"] = zeros_like(p)
                state["acc_delta"] = zeros_like(p)
            square_avgs.append(state["square_avg"])
            acc_deltas.append(state["acc_delta"])
            steps.append(state["step"])
        _core.optim.adadelta_step(params, grads, square_avgs, acc_deltas, steps, lr=float(group["lr"]),
                                  rho=float(group["rho"]), eps=float(group["eps"]),
                                  weight_decay=float(group["weight_decay"]), maximize=bool(group["maximize"]))
