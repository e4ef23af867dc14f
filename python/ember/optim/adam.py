"""ember.optim.Adam and AdamW: torch.optim.Adam / AdamW (amsgrad, maximize, L2 or decoupled weight
decay) on ember's fused update (ember._core.optim.adam_step, one call per parameter group)."""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Tuple

from .. import _core
from .optimizer import Optimizer

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    """Adam, as torch.optim.Adam; state: ``step`` (a 0-d float32 tensor), ``exp_avg``, ``exp_avg_sq``,
    ``max_exp_avg_sq`` (amsgrad). decoupled_weight_decay=True is AdamW. foreach / fused / capturable /
    differentiable are accepted and ignored (ember.optim's module docstring)."""

    def __init__(self, params, lr: float = 1e-3, betas: Tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *, foreach: Optional[bool] = None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False,
                 fused: Optional[bool] = None, decoupled_weight_decay: bool = False) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def __setstate__(self, state: Dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("amsgrad", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("capturable", False)
            group.setdefault("differentiable", False)
            group.setdefault("fused", None)
            group.setdefault("decoupled_weight_decay", isinstance(self, AdamW))

    def step(self, closure: Optional[Callable[[], float]] = None):
        """One update of every parameter with a gradient; returns closure()'s loss when given one."""
        return self._run_step(closure, self._update_group)

    def _update_group(self, group: Dict[str, Any]) -> None:
        from .. import zeros_like

        params, grads = self._with_grads(group)
        if not params:
            return
        amsgrad = bool(group["amsgrad"])
        exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps = [], [], [], []
        for p in params:
            state = self.state[p]
            if len(state) == 0:
                state["step"] = self._new_step()
                state["exp_avg"] = zeros_like(p)
                state["exp_avg_sq"] = zeros_like(p)
                if amsgrad:
                    state["max_exp_avg_sq"] = zeros_like(p)
            exp_avgs.append(state["exp_avg"])
            exp_avg_sqs.append(state["exp_avg_sq"])
            if amsgrad:
                max_exp_avg_sqs.append(state["max_exp_avg_sq"])
            steps.append(state["step"])
        beta1, beta2 = group["betas"]
        _core.optim.adam_step(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, lr=float(group["lr"]),
                              beta1=float(beta1), beta2=float(beta2), eps=float(group["eps"]),
                              weight_decay=float(group["weight_decay"]), amsgrad=amsgrad,
                              maximize=bool(group["maximize"]), decoupled=bool(group["decoupled_weight_decay"]))


class AdamW(Adam):
    """AdamW (decoupled weight decay, default 1e-2), as torch.optim.AdamW: Adam with
    decoupled_weight_decay=True."""

    def __init__(self, params, lr: float = 1e-3, betas: Tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False,
                 foreach: Optional[bool] = None, capturable: bool = False, differentiable: bool = False,
                 fused: Optional[bool] = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)
