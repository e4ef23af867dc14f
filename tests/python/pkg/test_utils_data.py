"""ember.utils.data as torch.utils.data: datasets (map-style and iterable), samplers, default_collate
and DataLoader's batching, shuffling, drop_last and argument errors, with PyTorch's results (torch's
when importable, else tests/python/golden/torch_utils_data.json), and the worker processes: the
same batches as in process, seeding, errors, kills, timeouts, persistent workers, no leftovers."""

import gc
import os
import random
import subprocess
import sys
import time

import numpy as np
import pytest

import ember
from ember.utils.data import (BatchSampler, ChainDataset, ConcatDataset, DataLoader, Dataset, RandomSampler,
                              SequentialSampler, StackDataset, Subset, TensorDataset, WeightedRandomSampler,
                              default_collate, default_convert, get_worker_info, random_split)
from ember.utils.data.distributed import DistributedSampler
from torch_golden import Golden, torch
import utils_data_helpers
from utils_data_helpers import Draws, Failing, KilledAt, Numbered, Range, SizedRange, SlowAt, Tagged, WorkerPids

golden = Golden("torch_utils_data.json")


@pytest.fixture(autouse=True)
def _case_keys(request):
    golden.start(request.node.nodeid)


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
    with pytest.raises(ValueError, match="prefetch_factor option could only be specified in multiprocessing"):
        DataLoader(ds, prefetch_factor=2)
    with pytest.raises(ValueError, match="expected unspecified shuffle option"):
        DataLoader(SizedRange(4), shuffle=True)
    with pytest.raises(ValueError, match="multiprocessing_context option should specify a valid start method"):
        DataLoader(ds, num_workers=1, multiprocessing_context="thread")


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


# ---- PyTorch's results for the same loaders (torch when importable, else the golden file) ----

def _summary(loader):
    """Each batch's shapes, dtypes and values, as plain lists (ember's or torch's)."""
    out = []
    for x, y in loader:
        out.append([list(x.shape), str(x.dtype).split(".")[-1], x.reshape(-1).tolist(), y.tolist()])
    return out


def _torch_data():
    import torch.utils.data as tud
    return tud


def test_sequential_batches_len_and_collate_as_pytorchs():
    for kwargs in ({"batch_size": 3}, {"batch_size": 3, "drop_last": True}, {"batch_size": 7}):
        mine = DataLoader(Numbered(10), **kwargs)
        ref = golden.reference(lambda: [len(_torch_data().DataLoader(Numbered(10), **kwargs)),
                                        _summary(_torch_data().DataLoader(Numbered(10), **kwargs))])["value"]
        assert [len(mine), _summary(mine)] == ref
    assert list(SequentialSampler(range(5))) == golden.reference(
        lambda: list(_torch_data().SequentialSampler(range(5))))["value"]
    got = default_convert({"a": np.arange(3), "b": (np.float32(2.5), "s")})
    assert got["a"].tolist() == [0, 1, 2] and got["b"][0].item() == 2.5 and got["b"][1] == "s"
    ref = golden.reference(lambda: str(type(_torch_data().default_convert((np.arange(2), 1)))))["value"]
    assert str(type(default_convert((np.arange(2), 1)))) == ref


def _torch_range(n):
    """utils_data_helpers.Range as a torch IterableDataset (the same sharding by torch's worker info)."""
    tud = _torch_data()

    class TorchRange(tud.IterableDataset):
        def __iter__(self):
            info = tud.get_worker_info()
            if info is None:
                return iter(range(n))
            per_worker = -(-n // info.num_workers)
            return iter(range(info.id * per_worker, min(info.id * per_worker + per_worker, n)))
    return TorchRange()


# ---- iterable datasets ----

def test_iterable_dataset_in_process_and_sharded_between_workers():
    assert [b.tolist() for b in DataLoader(Range(7), batch_size=3)] == [[0, 1, 2], [3, 4, 5], [6]]
    assert [b.tolist() for b in DataLoader(Range(7), batch_size=3, drop_last=True)] == [[0, 1, 2], [3, 4, 5]]
    assert [int(b) for b in DataLoader(Range(3), batch_size=None)] == [0, 1, 2]
    with pytest.raises(TypeError):
        len(DataLoader(Range(7), batch_size=3))
    assert len(DataLoader(SizedRange(7), batch_size=3)) == 3
    batches = [b.tolist() for b in DataLoader(Range(10), batch_size=2, num_workers=2)]
    assert sorted(v for b in batches for v in b) == list(range(10))  # each sample once, thanks to the sharding
    assert batches[:2] == [[0, 1], [5, 6]]  # the workers take turns, as PyTorch's
    assert batches == golden.reference(lambda: [b.tolist() for b in _torch_data().DataLoader(
        _torch_range(10), batch_size=2, num_workers=2, multiprocessing_context="fork")])["value"]
    assert get_worker_info() is None
    persistent = DataLoader(Range(7), batch_size=2, num_workers=2, persistent_workers=True)
    assert [b.tolist() for b in persistent] == [[0, 1], [4, 5], [2, 3], [6]]
    assert [b.tolist() for b in persistent] == [[0, 1], [4, 5], [2, 3], [6]]  # each epoch iterates afresh
    chained = ChainDataset([Range(2), Range(3)])
    assert list(chained) == [0, 1, 0, 1, 2] and len(ChainDataset([SizedRange(2), SizedRange(3)])) == 5
    stacked = StackDataset(Numbered(4), TensorDataset(ember.arange(4)))
    assert len(stacked) == 4 and stacked[2][0][1] == 2 and stacked[2][1][0].item() == 2
    assert StackDataset(a=Numbered(3), b=Numbered(3))[1]["b"][1] == 1
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        StackDataset(Numbered(3), Numbered(4))


# ---- samplers ----

def test_weighted_random_sampler():
    ember.manual_seed(0)
    draws = list(WeightedRandomSampler([0.0, 1.0, 3.0, 0.0], 200))
    assert len(draws) == 200 and set(draws) == {1, 2} and draws.count(2) > draws.count(1)
    ember.manual_seed(0)
    assert list(WeightedRandomSampler(ember.tensor([0.0, 1.0, 3.0, 0.0]), 200)) == draws
    assert sorted(WeightedRandomSampler([1, 1, 1, 0.5], 4, replacement=False)) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="num_samples should be a positive integer value"):
        WeightedRandomSampler([1.0], 0)
    with pytest.raises(RuntimeError, match="without replacement"):
        WeightedRandomSampler([1.0, 0.0], 2, replacement=False)


def test_distributed_sampler_properties():
    ds = Numbered(10)
    for drop_last in (False, True):
        parts = [list(DistributedSampler(ds, num_replicas=3, rank=r, seed=5, drop_last=drop_last)) for r in range(3)]
        assert len({len(p) for p in parts}) == 1
        flat = [i for p in parts for i in p]
        if drop_last:  # 9 of the 10, each once
            assert len(flat) == 9 and len(set(flat)) == 9
        else:  # all 10, padded by repeating the first of the permutation to 12
            assert len(flat) == 12 and set(flat) == set(range(10))
            again = [list(DistributedSampler(ds, num_replicas=3, rank=r, seed=5)) for r in range(3)]
            assert again == parts  # every rank builds the same permutation from the seed
    unshuffled = [list(DistributedSampler(ds, num_replicas=4, rank=r, shuffle=False)) for r in range(4)]
    assert unshuffled == [[0, 4, 8], [1, 5, 9], [2, 6, 0], [3, 7, 1]]  # PyTorch's order without shuffling
    from_torch = golden.reference(lambda: [
        [list(_torch_data().distributed.DistributedSampler(ds, num_replicas=4, rank=r, shuffle=False,
                                                           drop_last=d)) for r in range(4)] for d in (False, True)])
    assert [unshuffled, [list(DistributedSampler(ds, num_replicas=4, rank=r, shuffle=False, drop_last=True))
                         for r in range(4)]] == from_torch["value"]
    s = DistributedSampler(ds, num_replicas=2, rank=0, seed=1)
    first = list(s)
    s.set_epoch(1)
    assert list(s) != first and len(s) == 5
    with pytest.raises(ValueError, match="Invalid rank 2"):
        DistributedSampler(ds, num_replicas=2, rank=2)
    with pytest.raises(RuntimeError, match="Requires distributed package"):
        DistributedSampler(ds)
    loader = DataLoader(ds, batch_size=2, sampler=DistributedSampler(ds, num_replicas=2, rank=1, shuffle=False))
    assert [y.tolist() for _, y in loader] == [[1, 3], [5, 7], [9]]


# ---- worker processes ----

@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_workers_give_the_in_process_batches(context):
    ember.manual_seed(7)
    expected = _summary(DataLoader(Numbered(), batch_size=3, shuffle=True))
    ember.manual_seed(7)
    loader = DataLoader(Numbered(), batch_size=3, shuffle=True, num_workers=2, multiprocessing_context=context)
    assert len(loader) == 7 and loader.dataset.n == 20
    assert _summary(loader) == expected
    tensors = TensorDataset(ember.arange(10.0).reshape(5, 2), ember.arange(5))
    batches = list(DataLoader(tensors, batch_size=2, num_workers=2, multiprocessing_context=context))
    assert [x.tolist() for x, _ in batches] == [x.tolist() for x, _ in DataLoader(tensors, batch_size=2)]
    halves = list(DataLoader(TensorDataset(ember.arange(3.0).to(ember.bfloat16)), batch_size=2, num_workers=1,
                             multiprocessing_context=context))
    assert halves[0][0].dtype == ember.bfloat16  # a dtype NumPy lacks crosses as float32 and comes back
    assert [h[0].float().tolist() for h in halves] == [[0.0, 1.0], [2.0]]
    in_process = list(DataLoader(TensorDataset(ember.arange(3.0).to(ember.bfloat16)), batch_size=2))
    assert in_process[0][0].dtype == ember.bfloat16  # one gather per tensor, half types included
    assert [h[0].float().tolist() for h in in_process] == [[0.0, 1.0], [2.0]]
    ember.manual_seed(7)
    unordered = _summary(DataLoader(Numbered(), batch_size=3, shuffle=True, num_workers=2, in_order=False,
                                    prefetch_factor=4))
    assert sorted(map(str, unordered)) == sorted(map(str, expected))


def _shared_files():
    from ember.utils.data import _worker
    return sorted(f for f in os.listdir(_worker.SHM_DIR) if f.startswith("ember-dataloader-"))


@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="no /dev/shm")
@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_large_batches_cross_in_shared_memory_and_leave_nothing_behind(context, monkeypatch):
    from utils_data_helpers import Large
    from ember.utils.data import _worker
    expected = [(x.tolist(), h.float().tolist(), i.tolist()) for x, h, i in DataLoader(Large(), batch_size=4)]
    before = _shared_files()
    shared, take = [], _worker.take_shared

    def spy(data):
        if isinstance(data, _worker._Payload):  # called again for each element of a batch
            shared.append(data.shm_name is not None)
        return take(data)
    monkeypatch.setattr(_worker, "take_shared", spy)
    got = [(x.tolist(), h.float().tolist(), i.tolist())
           for x, h, i in DataLoader(Large(), batch_size=4, num_workers=2, multiprocessing_context=context)]
    assert got == expected
    assert shared == [True, True, False] * 3  # the two images by /dev/shm, the small labels pickled
    assert _shared_files() == before  # each file unlinked as its batch arrived
    # A batch the program keeps is the mapped memory itself: writable, and still valid after the epoch.
    x, h, _ = next(iter(DataLoader(Large(), batch_size=4, num_workers=1, multiprocessing_context=context)))
    assert h.dtype == ember.bfloat16
    x.add_(1.0)
    assert x[0, 0, 0, 1].item() == pytest.approx(1.0001)
    # An epoch left after one batch, with the others written and in flight: gone with the iterator.
    it = iter(DataLoader(Large(40), batch_size=4, num_workers=2, prefetch_factor=4, multiprocessing_context=context))
    next(it)
    time.sleep(0.5)
    del it
    gc.collect()
    assert _shared_files() == before


@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="no /dev/shm")
def test_a_full_dev_shm_falls_back_to_the_pipe_with_a_warning():
    from utils_data_helpers import Large, no_shared_memory
    expected = [x.tolist() for x, _, _ in DataLoader(Large(), batch_size=4)]
    with pytest.warns(RuntimeWarning, match=r"writing a batch to shared memory \(/dev/shm\) failed .*No space left"
                                            r".*--shm-size") as caught:
        got = [x.tolist() for x, _, _ in DataLoader(Large(), batch_size=4, num_workers=2,
                                                    worker_init_fn=no_shared_memory)]
    assert got == expected
    assert len([w for w in caught if "shared memory" in str(w.message)]) == 2  # once per worker


@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="no /dev/shm")
def test_shared_batches_of_a_dead_program_are_removed():
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(dead.stdout)
    stale = f"/dev/shm/ember-dataloader-{pid}-0-{pid + 1}-3"
    mine = f"/dev/shm/ember-dataloader-{os.getpid()}-999-1-1"
    for path in (stale, mine):
        with open(path, "wb") as f:
            f.write(b"x")
    try:
        list(DataLoader(Numbered(4), batch_size=2, num_workers=1))
        assert not os.path.exists(stale)
        assert os.path.exists(mine)  # this program's own, alive: left alone
    finally:
        for path in (stale, mine):
            if os.path.exists(path):
                os.unlink(path)


def test_worker_seeds_as_pytorchs():
    loader = DataLoader(Draws(4), batch_size=None, num_workers=2, generator=123)
    first = list(loader)
    assert [d["id"] for d in first] == [0, 1, 0, 1]
    base = first[0]["seed"]
    assert first[1]["seed"] == base + 1
    for d in first[:2]:
        assert d["random"] == random.Random(d["seed"]).random()
        ember.manual_seed(d["seed"])
        assert d["ember"] == ember.rand(1).item()
    from ember.utils.data._worker import _generate_state
    np.random.seed(_generate_state(base, 0))
    assert first[0]["numpy"] == np.random.rand()
    if torch is not None:
        from torch.utils.data._utils.worker import _generate_state as torchs
        assert _generate_state(base, 1) == torchs(base, 1)
    assert [d["seed"] for d in DataLoader(Draws(4), batch_size=None, num_workers=2, generator=123)] == \
        [d["seed"] for d in first]  # the same generator seed, the same worker seeds


def test_worker_error_names_the_worker_and_the_index():
    loader = DataLoader(Failing(7), batch_size=1, num_workers=2)
    with pytest.raises(ValueError) as caught:
        list(loader)
    text = str(caught.value)
    assert text.startswith("Caught ValueError in DataLoader worker process 1.\nIt was loading the sample at index 7.\n")
    assert "index 7" in text and "sample 7 is broken" in text
    with pytest.raises(KeyError, match="Caught KeyError in DataLoader worker process 1"):
        list(DataLoader(Failing(2, KeyError), batch_size=2, num_workers=2))


def test_a_killed_worker_is_an_error_not_a_hang():
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid \d+\) is killed by signal: Killed"):
        list(DataLoader(KilledAt(5), batch_size=2, num_workers=2))
    assert time.monotonic() - start < 4


def test_timeout():
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="DataLoader timed out after 0.5 seconds"):
        list(DataLoader(SlowAt(0, 3.0), batch_size=2, num_workers=1, timeout=0.5))
    assert time.monotonic() - start < 2.5
    with pytest.raises(ValueError, match="timeout option should be non-negative"):
        DataLoader(Numbered(), timeout=-1)


def _gone(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_persistent_workers_are_reused_and_nothing_is_left_behind():
    loader = DataLoader(WorkerPids(8), batch_size=2, num_workers=2, persistent_workers=True)
    first = [pids.tolist() for _, pids in loader]
    it = iter(loader)
    next(it)  # an epoch left unfinished: the next one starts over on the same workers
    second = [(i.tolist(), pids.tolist()) for i, pids in loader]
    assert {p for b in first for p in b} == {p for _, b in second for p in b}
    assert [i for i, _ in second] == [[0, 1], [2, 3], [4, 5], [6, 7]]
    workers = {p for b in first for p in b}
    assert len(workers) == 2 and os.getpid() not in workers
    del it, loader
    gc.collect()
    assert all(_gone(p) for p in workers)

    it = iter(DataLoader(WorkerPids(8), batch_size=2, num_workers=2))
    next(it)
    pids = [w.pid for w in it._workers]
    del it
    gc.collect()
    assert all(_gone(p) for p in pids)
    finished = iter(DataLoader(WorkerPids(4), batch_size=2, num_workers=2))
    list(finished)  # the end of a non-persistent epoch stops its workers at once
    assert all(not w.is_alive() for w in finished._workers)


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_worker_init_fn_runs_in_each_worker(context):
    loader = DataLoader(Tagged(4), batch_size=None, num_workers=2, worker_init_fn=utils_data_helpers.tag_worker,
                        multiprocessing_context=context)
    assert [(i, tag) for i, tag in loader] == [(0, 100), (1, 101), (2, 100), (3, 101)]
    with pytest.raises(OSError, match="Caught OSError in DataLoader worker process 0"):
        list(DataLoader(Numbered(4), num_workers=1, worker_init_fn=utils_data_helpers.failing_init))


_EXIT_SCRIPT = """
import os, signal, sys
sys.path.insert(0, {here!r})
from ember.utils.data import DataLoader
from utils_data_helpers import WorkerPids
loader = DataLoader(WorkerPids(8), batch_size=2, num_workers=2, persistent_workers=True)
print(sorted({{p for _, pids in loader for p in pids.tolist()}}), flush=True)
it = iter(loader); next(it)  # workers busy with the next epoch when the program ends
if sys.argv[1] == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize("how", ["exit", "kill"])
def test_workers_end_with_the_program(how):
    """No orphans: workers end when the program exits, and when it is killed (they watch their parent)."""
    script = _EXIT_SCRIPT.format(here=os.path.dirname(os.path.abspath(__file__)))
    done = subprocess.run([sys.executable, "-c", script, how], capture_output=True, text=True, timeout=20)
    assert done.returncode == (0 if how == "exit" else -9), done.stderr
    pids = [int(p) for p in done.stdout.strip().strip("[]").split(",")]
    deadline = time.monotonic() + 3
    while not all(_gone(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(_gone(p) for p in pids)


def test_write_goldens():  # last: after every test that records a value
    golden.write()
