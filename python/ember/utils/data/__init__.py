"""ember.utils.data, as torch.utils.data: map-style and iterable datasets (Dataset, IterableDataset,
TensorDataset, Subset, ConcatDataset, ChainDataset, StackDataset, random_split), the samplers
(DistributedSampler in .distributed), default_collate/default_convert and a DataLoader that loads in
the calling process (num_workers=0) or in worker processes as PyTorch's (num_workers > 0). Batches are
stacked by the C++ ops (ember.stack); only the indexing of a user's Dataset is Python, as in PyTorch."""

from ._worker import WorkerInfo, get_worker_info
from .dataloader import DataLoader, default_collate, default_convert
from .dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset, Subset, TensorDataset,
                      random_split)
from .distributed import DistributedSampler
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler,
                      WeightedRandomSampler)

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info", "WorkerInfo", "Dataset",
           "IterableDataset", "TensorDataset", "Subset", "ConcatDataset", "ChainDataset", "StackDataset",
           "random_split", "Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler", "DistributedSampler"]
