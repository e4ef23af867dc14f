"""ember.optim: torch.optim's optimizers and schedulers (``from ember import optim``,
``optim.SGD(model.parameters(), lr=0.1, momentum=0.9)``, ``ember.optim.lr_scheduler.StepLR``).

Python keeps PyTorch's object model — ``param_groups`` dicts with every hyper-parameter (read at each
step: a change by you or a scheduler takes effect at the next step), ``state`` keyed by parameter
with PyTorch's keys, ``state_dict()`` in PyTorch's format — and each step() runs ember's C++ update
once per parameter group (the fused kernels of the library's optimizers, the GIL released).

Differences from PyTorch: ``foreach=``, ``fused=``, ``capturable=`` and ``differentiable=`` are
accepted and stored in the groups but change nothing (ember's update is always its fused kernel where
the layout allows, else its reference path of tensor ops; no graph capture, no differentiable steps).
Sparse gradients and complex parameters are not supported.
"""

from . import lr_scheduler
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "Adagrad", "Adadelta", "RMSprop", "lr_scheduler"]
