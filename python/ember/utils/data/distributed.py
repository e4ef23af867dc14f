"""DistributedSampler as torch.utils.data.distributed's: each of num_replicas processes (ranks) gets
its own 1/num_replicas of the dataset, padded by repetition (or trimmed with drop_last) so every rank
sees the same number of samples, reshuffled per epoch by set_epoch."""

from __future__ import annotations

import math

import numpy as _np

from .sampler import Sampler


def _world():
    """(world size, rank) of ember.distributed's process group; PyTorch's error when there is none."""
    try:
        from ... import distributed as dist
        if dist.is_available() and dist.is_initialized():
            return dist.get_world_size(), dist.get_rank()
    except (ImportError, AttributeError):
        pass
    raise RuntimeError("Requires distributed package to be available (ember.distributed.init_process_group first, "
                       "or pass num_replicas= and rank=)")


class DistributedSampler(Sampler):
    """DistributedSampler(dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False).

    The shuffled order is a permutation seeded by seed + epoch, the same on every rank, from NumPy's
    PCG64 (numpy.random.default_rng(seed + epoch).permutation): PyTorch's torch.Generator/randperm
    give another permutation for the same seed, so the indices are not PyTorch's, but the properties
    are: the ranks' indices are disjoint and cover the dataset, the shortfall is padded with the first
    indices of the permutation (drop_last=True trims the tail instead), rank r takes every
    num_replicas-th index starting at r, and set_epoch(e) changes the order."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle: bool = True, seed: int = 0,
                 drop_last: bool = False) -> None:
        if num_replicas is None or rank is None:
            world, me = _world()
            num_replicas = world if num_replicas is None else num_replicas
            rank = me if rank is None else rank
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.epoch, self.drop_last, self.shuffle, self.seed = 0, drop_last, shuffle, seed
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            indices = _np.random.default_rng(self.seed + self.epoch).permutation(n).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[:self.total_size]
        assert len(indices) == self.total_size
        indices = indices[self.rank:self.total_size:self.num_replicas]
        assert len(indices) == self.num_samples
        return iter(indices)

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """The epoch whose order the next iteration gives (call it before each epoch when shuffling)."""
        self.epoch = epoch
