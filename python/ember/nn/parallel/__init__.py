"""``ember.nn.parallel``: DistributedDataParallel (torch.nn.parallel's data-parallel wrapper)."""

from .distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
