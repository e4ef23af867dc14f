"""ember.utils.data, as torch.utils.data (issue 47's first slice): Dataset, TensorDataset, Subset,
ConcatDataset, random_split, the samplers, default_collate and a DataLoader that runs in the calling
process (num_workers=0). Batches are stacked by the C++ ops (ember.stack); only the indexing of a
user's Dataset is Python, as it is in PyTorch."""

from .dataloader import DataLoader, default_collate
from .dataset import ConcatDataset, Dataset, Subset, TensorDataset, random_split
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler

__all__ = ["DataLoader", "default_collate", "Dataset", "TensorDataset", "Subset", "ConcatDataset", "random_split",
           "Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "BatchSampler"]
