"""ember.utils.data as torch.utils.data (issue 47's first slice): datasets, samplers, default_collate
and DataLoader's batching, shuffling, drop_last and argument errors, with PyTorch's results (the
expected values below are what torch 2.15 gives for the same calls)."""

import numpy as np
import pytest

import ember
from ember.utils.data import (BatchSampler, ConcatDataset, DataLoader, Dataset, RandomSampler, SequentialSampler,
                              Subset, TensorDataset, default_collate, random_split)


def test_tensor_dataset_and_loader_batches():
    x = ember.arange(10.0).reshape(10, 1)
    y = ember.arange(10)
    ds = TensorDataset(x, y)
    assert len(ds) == 10
    a, b = ds[3]
    assert a.tolist() == [3.0] and b.item() == 3
    loader = DataLoader(ds, batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and len(batches) == 3
    assert [list(bx.shape) for bx, _ in batches] == [[4, 1], [4, 1], [2, 1]]
    assert batches[2][1].tolist() == [8, 9] and batches[0][1].dtype == ember.int64
    assert len(DataLoader(ds, batch_size=4, drop_last=True)) == 2
    assert [len(bx) for bx, _ in DataLoader(ds, batch_size=4, drop_last=True)] == [4, 4]


def test_shuffle_is_a_permutation_seeded_by_manual_seed():
    ds = TensorDataset(ember.arange(20))
    ember.manual_seed(3)
    first = [int(v) for (b,) in DataLoader(ds, batch_size=5, shuffle=True) for v in b.tolist()]
    ember.manual_seed(3)
    again = [int(v) for (b,) in DataLoader(ds, batch_size=5, shuffle=True) for v in b.tolist()]
    assert sorted(first) == list(range(20)) and first == again and first != list(range(20))


class Squares(Dataset):
    """A user's map-style dataset returning (NumPy image, int label, dict)."""

    def __len__(self):
        return 5

    def __getitem__(self, i):
        return np.full((2, 2), i, np.float32), i, {"name": f"s{i}", "w": float(i) / 2}


def test_default_collate_as_pytorchs():
    img, label, meta = next(iter(DataLoader(Squares(), batch_size=3)))
    assert list(img.shape) == [3, 2, 2] and img.dtype == ember.float32
    assert label.tolist() == [0, 1, 2] and label.dtype == ember.int64
    assert meta["name"] == ["s0", "s1", "s2"] and meta["w"].dtype == ember.float64
    batch = default_collate([(ember.ones(2), 1), (ember.zeros(2), 0)])
    assert isinstance(batch, list)  # PyTorch collates a tuple sample into a list
    assert batch[0].tolist() == [[1.0, 1.0], [0.0, 0.0]]
    assert default_collate([True, False]).dtype == ember.bool
    with pytest.raises(TypeError, match="found object"):
        default_collate([object(), object()])


def test_batch_size_none_gives_samples_and_a_custom_collate():
    loader = DataLoader(Squares(), batch_size=None)
    assert len(loader) == 5 and list(next(iter(loader))[0].shape) == [2, 2]
    loader = DataLoader(Squares(), batch_size=2, collate_fn=lambda b: [s[1] for s in b])
    assert list(loader) == [[0, 1], [2, 3], [4]]


def test_subset_concat_and_random_split():
    ds = TensorDataset(ember.arange(10))
    sub = Subset(ds, [9, 0, 4])
    assert [int(sub[i][0].item()) for i in range(3)] == [9, 0, 4]
    both = ConcatDataset([sub, ds])
    assert len(both) == 13 and int(both[3][0].item()) == 0 and int(both[-1][0].item()) == 9
    ember.manual_seed(0)
    a, b = random_split(ds, [7, 3])
    assert len(a) == 7 and len(b) == 3 and sorted(a.indices + b.indices) == list(range(10))
    parts = random_split(ds, [0.5, 0.3, 0.2])
    assert [len(p) for p in parts] == [5, 3, 2]
    with pytest.raises(ValueError, match="Sum of input lengths does not equal"):
        random_split(ds, [4, 4])


def test_samplers():
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3]
    assert sorted(RandomSampler(range(6))) == list(range(6))
    assert len(list(RandomSampler(range(6), replacement=True, num_samples=20))) == 20
    assert list(BatchSampler(SequentialSampler(range(7)), 3, False)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(BatchSampler(SequentialSampler(range(7)), 3, True)) == [[0, 1, 2], [3, 4, 5]]


def test_bad_arguments_raise_pytorchs_errors():
    ds = TensorDataset(ember.arange(4))
    with pytest.raises(ValueError, match="batch_size should be a positive integer value"):
        DataLoader(ds, batch_size=0)
    with pytest.raises(ValueError, match="sampler option is mutually exclusive with shuffle"):
        DataLoader(ds, sampler=SequentialSampler(ds), shuffle=True)
    with pytest.raises(ValueError, match="num_workers option should be non-negative"):
        DataLoader(ds, num_workers=-1)
    with pytest.raises(ValueError, match="Size mismatch between tensors"):
        TensorDataset(ember.zeros(3), ember.zeros(4))
    with pytest.raises(TypeError, match="TensorDataset takes tensors"):
        TensorDataset(np.zeros(3))
    with pytest.warns(UserWarning, match="loads in the calling process"):
        assert len(list(DataLoader(ds, batch_size=2, num_workers=2))) == 2


def test_a_training_loop_over_a_dataloader():
    ember.manual_seed(0)
    x = ember.randn(64, 8)
    y = (x[:, 0] > 0).long()
    model = ember.nn.Linear(8, 2)
    opt = ember.optim.SGD(model.parameters(), lr=0.5)
    loader = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True)
    for _ in range(20):
        for xb, yb in loader:
            opt.zero_grad()
            ember.nn.functional.cross_entropy(model(xb), yb).backward()
            opt.step()
    assert (model(x).argmax(1) == y).float().mean().item() > 0.9
