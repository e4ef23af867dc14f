"""Samplers as torch.utils.data's: which indices, in which order, and how they group into batches."""

from __future__ import annotations

from typing import Iterator, List, Sequence

import numpy as _np

from ... import _core, _tensor


class Sampler:
    def __iter__(self) -> Iterator[int]:
        raise NotImplementedError


class SequentialSampler(Sampler):
    def __init__(self, data_source) -> None:
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """A new permutation of the dataset each epoch, from ember's generator (ember.manual_seed);
    replacement=True draws num_samples indices with replacement."""

    def __init__(self, data_source, replacement: bool = False, num_samples=None, generator=None) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        if num_samples is not None and (not isinstance(num_samples, int) or num_samples <= 0):
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        if self.replacement:
            return iter(_tensor.randint(0, n, (self.num_samples,)).tolist())
        out: List[int] = []
        while len(out) < self.num_samples:
            out.extend(_core.randperm(n).tolist())
        return iter(out[:self.num_samples])

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    def __init__(self, indices: Sequence[int], generator=None) -> None:
        self.indices = indices

    def __iter__(self):
        return (self.indices[i] for i in _core.randperm(len(self.indices)).tolist())

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """num_samples indices drawn with probabilities proportional to ``weights`` (with replacement
    by default). The draw is NumPy's (ember has no multinomial) seeded from ember's generator, so
    ember.manual_seed makes it reproducible; PyTorch's exact indices differ (its generator differs)."""

    def __init__(self, weights, num_samples: int, replacement: bool = True, generator=None) -> None:
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        w = _np.asarray(weights.tolist() if hasattr(weights, "tolist") else weights, dtype=_np.float64)
        if w.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(w.shape)}")
        if not _np.all(_np.isfinite(w)) or _np.any(w < 0) or w.sum() <= 0:
            raise RuntimeError("WeightedRandomSampler: weights must be finite, non-negative and not all zero")
        if not replacement and num_samples > int(_np.count_nonzero(w)):
            raise RuntimeError(f"WeightedRandomSampler: cannot draw {num_samples} samples without replacement from "
                               f"{int(_np.count_nonzero(w))} non-zero weights")
        self.weights, self.num_samples, self.replacement, self.generator = w, num_samples, replacement, generator

    def __iter__(self):
        rng = _np.random.default_rng(_seed_from_ember())
        return iter(rng.choice(len(self.weights), self.num_samples, replace=self.replacement,
                               p=self.weights / self.weights.sum()).tolist())

    def __len__(self) -> int:
        return self.num_samples


def _seed_from_ember() -> int:
    """A 64-bit seed drawn from ember's global generator (ember.manual_seed decides it)."""
    hi, lo = _tensor.randint(0, 2**31, (2,)).tolist()
    return (int(hi) << 31) | int(lo)


class BatchSampler(Sampler):
    def __init__(self, sampler, batch_size: int, drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self):
        batch: List[int] = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else (n + self.batch_size - 1) // self.batch_size
