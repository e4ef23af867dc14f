"""``ember.autograd.gradcheck``: the analytical gradients of a function (its backward, through the
engine) against central finite differences, as torch.autograd.gradcheck (float64 inputs expected)."""

from __future__ import annotations

import warnings

import numpy as _np

from .. import _core
from .._core import Tensor
from .grad_mode import no_grad

__all__ = ["gradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """The analytical and numerical Jacobians differ (PyTorch's class of the same name)."""


def _outputs(func, inputs):
    out = func(*inputs)
    return (out,) if isinstance(out, Tensor) else tuple(o for o in out if isinstance(o, Tensor))


def gradcheck(func, inputs, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, nondet_tol: float = 0.0, check_undefined_grad: bool = True,
              check_grad_dtypes: bool = False, check_batched_grad: bool = False, fast_mode: bool = False,
              **unused) -> bool:
    """True when every output's Jacobian with respect to every input that requires grad matches its
    central-difference estimate ``(f(x + eps) - f(x - eps)) / (2 eps)`` within ``atol + rtol *
    |numerical|``; otherwise GradcheckError (or False with raise_exception=False). Inputs should be
    float64 CPU tensors."""
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    diff = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not diff:
        raise ValueError("gradcheck expects at least one input tensor to require gradient")
    for i in diff:
        if inputs[i].dtype != _core.float64:
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating point. "
                          "This check will likely fail if all the inputs are not of double precision "
                          "floating point.", stacklevel=2)
    outputs = _outputs(func, inputs)
    for o_index, out in enumerate(outputs):
        if not out.requires_grad:
            continue
        n_out = out.numel()
        analytical = [_np.zeros((inputs[i].numel(), n_out)) for i in diff]
        for j in range(n_out):
            seed = _core.zeros(*out.shape, dtype=out.dtype)
            seed.view(-1)[j] = 1.0
            grads = _core._autograd.grad([out], [inputs[i] for i in diff], [seed], True)
            for k, g in enumerate(grads):
                analytical[k][:, j] = g.detach().double().reshape(-1).numpy()
        for k, i in enumerate(diff):
            x = inputs[i]
            data = x.detach().numpy().reshape(-1)  # the same memory: perturbed in place, then restored
            numerical = _np.zeros((x.numel(), n_out))
            for e in range(x.numel()):
                orig = data[e]
                with no_grad():
                    data[e] = orig + eps
                    plus = _outputs(func, inputs)[o_index].double().reshape(-1).numpy().copy()
                    data[e] = orig - eps
                    minus = _outputs(func, inputs)[o_index].double().reshape(-1).numpy().copy()
                data[e] = orig
                numerical[e] = (plus - minus) / (2 * eps)
            if not _np.allclose(analytical[k], numerical, rtol=rtol, atol=atol):
                if not raise_exception:
                    return False
                raise GradcheckError(f"Jacobian mismatch for output {o_index} with respect to input {i},\n"
                                     f"numerical:{numerical}\nanalytical:{analytical[k]}\n")
    return True
