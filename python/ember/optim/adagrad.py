"""ember.optim.Adagrad: torch.optim.Adagrad (lr_decay, initial_accumulator_value, eps, weight decay,
maximize) on ember's fused update (ember._core.optim.adagrad_step, one call per parameter group)."""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional

from .. import _core
from .optimizer import Optimizer

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Adagrad, as torch.optim.Adagrad; state (made at construction, as PyTorch's): ``step`` (a 0-d
    float32 tensor) and ``sum``. foreach / fused / differentiable are accepted and ignored."""

    def __init__(self, params, lr: float = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10, foreach: Optional[bool] = None, *,
                 maximize: bool = False, differentiable: bool = False, fused: Optional[bool] = None) -> None:
        from .. import full_like

        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = self._new_step()
                state["sum"] = full_like(p, float(initial_accumulator_value)).detach()

    def __setstate__(self, state: Dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("fused", None)

    def step(self, closure: Optional[Callable[[], float]] = None):
        """One update of every parameter with a gradient; returns closure()'s loss when given one."""
        return self._run_step(closure, self._update_group)

    def _update_group(self, group: Dict[str, Any]) -> None:
        params, grads = self._with_grads(group)
        if not params:
            return
        sums = [self.state[p]["sum"] for p in params]
        steps = [self.state[p]["step"] for p in params]
        _core.optim.adagrad_step(params, grads, sums, steps, lr=float(group["lr"]), lr_decay=float(group["lr_decay"]),
                                 weight_decay=float(group["weight_decay"]), eps=float(group["eps"]),
                                 maximize=bool(group["maximize"]))
