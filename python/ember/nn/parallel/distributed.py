"""``DistributedDataParallel``: torch.nn.parallel.DistributedDataParallel over ember's process group.
At construction every rank takes rank 0's parameters and buffers; each backward after a forward
through the wrapper averages the gradients over the ranks in buckets, launched while backward runs
(the C++ GradBucketer that ``ember train --nproc-per-node`` uses: one bucketing rule)."""

from __future__ import annotations

from contextlib import contextmanager

from ... import _core
from ...autograd import is_grad_enabled
from ..modules.module import Module

__all__ = ["DistributedDataParallel"]

# PyTorch's dist._DEFAULT_FIRST_BUCKET_BYTES: a small first bucket so communication starts early.
_FIRST_BUCKET_BYTES = 1024 * 1024


class DistributedDataParallel(Module):
    """Wraps ``module`` (``.module``); its state_dict keys carry the ``module.`` prefix, as PyTorch's.

    ``device_ids``/``output_device``: accepted for PyTorch's signature (the module stays where it
    is; its inputs must be on its device). ``broadcast_buffers``: rank 0's buffers are copied to
    every rank at each forward. ``bucket_cap_mb``: the bucket size (25 MiB). Parameters a forward did
    not use contribute zero gradients, with or without ``find_unused_parameters``."""

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0,
                 broadcast_buffers: bool = True, process_group=None, bucket_cap_mb: float | None = None,
                 find_unused_parameters: bool = False, check_reduction: bool = False,
                 gradient_as_bucket_view: bool = False, static_graph: bool = False, **kwargs) -> None:
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel wraps an ember.nn.Module, got {type(module).__name__}")
        from ... import distributed as dist
        if process_group is not None:
            dist._check_group(process_group)
        if not dist.is_initialized():
            raise _value_error("DistributedDataParallel needs the default process group: call "
                               "ember.distributed.init_process_group() first")
        if bucket_cap_mb is None:
            bucket_cap_mb = 25
        if bucket_cap_mb <= 0:
            raise ValueError(f"bucket_cap_mb must be positive, got {bucket_cap_mb}")
        self.module = module
        self.device_ids = device_ids
        self.output_device = output_device
        self.broadcast_buffers = bool(broadcast_buffers)
        self.find_unused_parameters = bool(find_unused_parameters)
        self.require_backward_grad_sync = True
        params = [p for p in module.parameters() if p.requires_grad]
        self._buffers_to_sync = list(module.buffers())
        # Rank 0's start, so every rank begins from the same weights.
        _core._dist.broadcast_tensors([p.detach() for p in module.parameters()] + self._buffers_to_sync, 0)
        self.reducer = _core._dist.Reducer(params, min(_FIRST_BUCKET_BYTES, int(bucket_cap_mb * 1024 * 1024)),
                                           int(bucket_cap_mb * 1024 * 1024))

    def forward(self, *inputs, **kwargs):
        if self.broadcast_buffers and self._buffers_to_sync:
            _core._dist.broadcast_tensors(self._buffers_to_sync, 0)
        if is_grad_enabled() and self.require_backward_grad_sync:
            _core._dist.arm(self.reducer)  # the next backward averages this module's gradients
        else:
            _core._dist.disarm(self.reducer)
        return self.module(*inputs, **kwargs)

    @contextmanager
    def no_sync(self):
        """Backward inside accumulates gradients locally; the first synchronised backward after it
        averages the accumulated sums (gradient accumulation without communication)."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old


def _value_error(message: str):
    from ...errors import ValueError as EmberValueError
    return EmberValueError(message)
