"""ember.save / ember.load against PyTorch's torch.save format (python/ember/serialization.py over
ember/io/pth.h): round trips of every structure a training program saves, PyTorch's own files
(tests/fixtures/torch_save/, written by scripts/make-torch-save-fixtures.py with torch 2.x, the
legacy pre-1.6 format included) read without torch, and when torch is importable, torch.load of
ember's files. Hostile files raise the typed error and run nothing; unsaveable values say where
they are."""

from __future__ import annotations

import collections
import io
import json
import os
import pickle
import re
import struct
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:
    torch = None

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "torch_save"
EXPECTED = json.loads((FIXTURES / "expected.json").read_text())["objects"]


def values(t) -> list:
    """A tensor's elements as Python numbers (bfloat16 / float16 through float64)."""
    if t.dtype == ember.bool:
        return [bool(x) for x in np.asarray(t.to(ember.uint8)).ravel()]
    if t.dtype in (ember.bfloat16, ember.float16):
        t = t.to(ember.float64)
    return np.asarray(t).ravel().tolist()


def same(a, b) -> None:
    """a and b hold the same structure: types, keys in order, tensors' dtype, shape and values."""
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, ember.Tensor):
        assert a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape)
        assert values(a) == values(b)
        assert a.requires_grad == b.requires_grad
    elif isinstance(a, dict):
        assert list(a.keys()) == list(b.keys())
        for k in a:
            same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            same(x, y)
    else:
        assert a == b


def round_trip(obj, tmp_path: Path, name: str = "x.pt"):
    path = tmp_path / name
    ember.save(obj, path)
    return ember.load(path)


def a_state_dict():
    sd = collections.OrderedDict()
    sd["fc1.weight"] = ember.arange(12, dtype=ember.float32).reshape(3, 4) / 7
    sd["fc1.bias"] = ember.tensor([0.5, -1.0, 2.0])
    sd["bn.running_mean"] = ember.zeros(3)
    sd["bn.num_batches_tracked"] = ember.tensor(5)
    return sd


def an_optimizer_state():
    return {"state": {0: {"step": ember.tensor(3.0), "exp_avg": ember.ones(3, 4) * 0.25,
                          "exp_avg_sq": ember.full((3, 4), 0.125)},
                      1: {"step": ember.tensor(3.0), "exp_avg": ember.zeros(3), "exp_avg_sq": ember.zeros(3)}},
            "param_groups": [{"lr": 0.01, "betas": (0.9, 0.999), "eps": 1e-08, "weight_decay": 0,
                              "amsgrad": False, "maximize": False, "foreach": None, "params": [0, 1]}]}


# ---- round trips ------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "bool"])
def test_every_dtype_round_trips(tmp_path, dtype):
    dt = getattr(ember, dtype)
    t = (ember.arange(6, dtype=ember.float32).reshape(2, 3) - 2).to(dt)
    back = round_trip({"t": t, "scalar": t[1, 2], "empty": t[:0]}, tmp_path)
    same(back, {"t": t, "scalar": t[1, 2].clone(), "empty": t[:0].clone()})
    assert back["scalar"].dim() == 0 and back["empty"].shape == (0, 3)


def test_non_contiguous_tensors_are_saved_contiguous(tmp_path):
    base = ember.arange(12, dtype=ember.float32).reshape(3, 4)
    back = round_trip([base.t(), base[:, 1], base[1]], tmp_path)
    assert values(back[0]) == values(base.t().contiguous())
    assert back[0].shape == (4, 3) and back[0].is_contiguous()
    assert values(back[1]) == [1.0, 5.0, 9.0] and values(back[2]) == [4.0, 5.0, 6.0, 7.0]


def test_state_dict_optimizer_state_and_checkpoint_round_trip(tmp_path):
    sd, osd = a_state_dict(), an_optimizer_state()
    for obj in (sd, osd, {"epoch": 3, "model": sd, "optimizer": osd}):
        same(round_trip(obj, tmp_path), obj)
    sd.move_to_end("fc1.weight")  # an OrderedDict's order is its items()', not its dict's
    back = round_trip(sd, tmp_path)
    assert isinstance(back, collections.OrderedDict) and list(back) == list(sd) and list(back)[-1] == "fc1.weight"
    back = round_trip(osd, tmp_path)
    assert type(back["param_groups"][0]["betas"]) is tuple and list(back["state"]) == [0, 1]


def test_plain_values_nest(tmp_path):
    obj = {"none": None, "t": True, "f": False, "int": -7, "big": 2**40, "float": 0.1, "str": "héllo",
           "bytes": b"\x00\xff\x80ab", "list": [1, [2, [3, (4, 5)]]], "empty": {}, "empty_list": [], "empty_tuple": (),
           "size": ember.Size([2, 3]), "dtype": ember.bfloat16, "device": ember.device("cpu"), 7: "int key",
           ("a", 1): "tuple key"}
    back = round_trip(obj, tmp_path)
    same(back, obj)
    assert isinstance(back["size"], ember.Size) and back["dtype"] is ember.bfloat16 and back["device"] == ember.device("cpu")


def test_a_value_reached_twice_comes_back_as_one_object(tmp_path):
    shared, t = {"w": ember.ones(2)}, ember.zeros(3)
    cyclic = [1]
    cyclic.append(cyclic)
    back = round_trip({"a": shared, "b": shared, "t1": t, "t2": t, "cyclic": cyclic}, tmp_path)
    assert back["a"] is back["b"] and back["t1"] is back["t2"]
    assert back["cyclic"][1] is back["cyclic"]


def test_requires_grad_is_kept(tmp_path):
    w = ember.ones(2, 2).requires_grad_()
    back = round_trip({"w": w, "d": w.detach()}, tmp_path)
    assert back["w"].requires_grad and back["w"].is_leaf and not back["d"].requires_grad


def test_file_objects_and_path_objects(tmp_path):
    buf = io.BytesIO()
    ember.save(a_state_dict(), buf)
    buf.seek(0)
    same(ember.load(buf), a_state_dict())
    ember.save([1, 2], str(tmp_path / "s.pt"))
    assert ember.load(str(tmp_path / "s.pt")) == [1, 2]
    assert zipfile.is_zipfile(tmp_path / "s.pt")


def test_saving_to_a_path_is_atomic(tmp_path):
    path = tmp_path / "ck.pt"
    ember.save({"epoch": 1}, path)
    with pytest.raises(TypeError):
        ember.save({"epoch": 2, "bad": {1, 2}}, path)
    assert ember.load(path) == {"epoch": 1}  # the refused save left the old file whole
    assert [p.name for p in tmp_path.iterdir()] == ["ck.pt"]


# ---- what cannot be saved ---------------------------------------------------------------------------

@pytest.mark.parametrize("value, where, type_name", [
    ({"model": {"x": {1, 2}}}, "obj['model']['x']", "set"),
    ({"fn": lambda x: x}, "obj['fn']", "function"),
    ([1, [2, np.zeros(2)]], "obj[1][1]", "ndarray"),
    ({"k": frozenset()}, "obj['k']", "frozenset"),
])
def test_unsaveable_values_name_their_place(tmp_path, value, where, type_name):
    with pytest.raises(TypeError, match="^" + re.escape(f"{where}: {type_name} is not saveable")):
        ember.save(value, tmp_path / "x.pt")
    assert not (tmp_path / "x.pt").exists()


def test_a_tuple_that_contains_itself_is_refused(tmp_path):
    inner = []
    t = (inner,)
    inner.append(t)
    with pytest.raises(ValueError, match="contains itself"):
        ember.save(t, tmp_path / "x.pt")


def test_save_options_torch_has_and_ember_does_not(tmp_path):
    with pytest.raises(NotImplementedError, match="only the zip format"):
        ember.save({}, tmp_path / "x.pt", _use_new_zipfile_serialization=False)
    with pytest.raises(NotImplementedError, match="never runs code"):
        ember.load(FIXTURES / "state_dict.pt", weights_only=False)


# ---- PyTorch's files, read without torch -------------------------------------------------------------

def check_expected(v, e) -> None:
    """v (what ember.load returned) holds what expected.json describes (written from torch's objects)."""
    if isinstance(e, dict) and e.get("tensor"):
        assert isinstance(v, ember.Tensor)
        assert str(v.dtype) == f"ember.{e['dtype']}" and list(v.shape) == e["shape"]
        assert values(v) == e["values"] and v.requires_grad == e["requires_grad"]
    elif isinstance(e, dict) and ("dict" in e or "ordered" in e):
        assert type(v) is (dict if "dict" in e else collections.OrderedDict)
        items = e.get("dict", e.get("ordered"))
        assert len(v) == len(items)
        for (k, x), (ek, ex) in zip(v.items(), items):
            check_expected(k, ek)
            check_expected(x, ex)
    elif isinstance(e, dict) and "tuple" in e:
        assert type(v) is tuple and len(v) == len(e["tuple"])
        for x, ex in zip(v, e["tuple"]):
            check_expected(x, ex)
    elif isinstance(e, dict) and "size" in e:
        assert isinstance(v, ember.Size) and list(v) == e["size"]
    elif isinstance(e, dict) and "dtype_value" in e:
        assert v is getattr(ember, e["dtype_value"])
    elif isinstance(e, dict) and "device" in e:
        assert v == ember.device(e["device"])
    elif isinstance(e, dict) and "bytes" in e:
        assert v == bytes(e["bytes"])
    elif isinstance(e, list):
        assert type(v) is list and len(v) == len(e)
        for x, ex in zip(v, e):
            check_expected(x, ex)
    else:
        assert type(v) is type(e) and v == e, (v, e)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_reads_what_torch_save_wrote(name):
    check_expected(ember.load(FIXTURES / f"{name}.pt"), EXPECTED[name])


def test_the_checkpoint_shares_its_state_dict_as_torch_saved_it():
    ck = ember.load(FIXTURES / "checkpoint.pt")
    assert ck["model"]["0.weight"].shape == (3, 4) and ck["optimizer"]["param_groups"][0]["lr"] == 0.01


def test_map_location(tmp_path):
    path = FIXTURES / "state_dict.pt"
    for where in ("cpu", ember.device("cpu"), {"cpu": "cpu"}):
        assert ember.load(path, map_location=where)["0.weight"].device == ember.device("cpu")
    seen = []
    sd = ember.load(path, map_location=lambda t, location: seen.append(location))
    assert seen == ["cpu"] * len(sd)
    with pytest.raises(TypeError, match="map_location"):
        ember.load(path, map_location=3)


@pytest.mark.skipif(ember.cuda.is_available(), reason="needs a machine without a usable GPU")
def test_cuda_tensors_without_a_gpu_say_map_location(tmp_path):
    path = tmp_path / "cuda.pt"
    path.write_bytes(zip_with_pickle(tensor_pickle(b"cuda:0", offset=0), {"0": struct.pack("<4f", 1, 2, 3, 4)}))
    with pytest.raises(ember.DeviceError, match="map_location"):
        ember.load(path)
    assert ember.load(path, map_location="cpu").device == ember.device("cpu")
    assert ember.load(path, map_location={"cuda:0": "cpu"}).device == ember.device("cpu")


# ---- hostile and damaged files ----------------------------------------------------------------------

def zip_with_pickle(data_pkl: bytes, storages: dict = None) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", data_pkl)
        for key, data in (storages or {}).items():
            z.writestr(f"archive/data/{key}", data)
        z.writestr("archive/version", "3\n")
    return buf.getvalue()


class Reduce:
    def __init__(self, fn, args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return self.fn, self.args


def test_os_system_is_refused_by_name_and_not_run(tmp_path):
    marker = tmp_path / "ran"
    path = tmp_path / "evil.pt"
    path.write_bytes(zip_with_pickle(pickle.dumps({"x": Reduce(os.system, (f"touch {marker}",))}, protocol=2)))
    with pytest.raises(ember.ForbiddenGlobalError, match=r"os\.system|posix\.system") as e:
        ember.load(path)
    assert isinstance(e.value, pickle.UnpicklingError) and e.value.global_name in ("posix.system", "os.system")
    assert "torch.save(model.state_dict()" in e.value.hint
    assert not marker.exists()


def test_reduce_of_builtins_eval_is_refused(tmp_path):
    path = tmp_path / "eval.pt"
    path.write_bytes(zip_with_pickle(b"\x80\x02cbuiltins\neval\nX\x08\x00\x00\x00__import__('os')\x85R."))
    with pytest.raises(ember.ForbiddenGlobalError, match="builtins.eval") as e:
        ember.load(path)
    assert e.value.global_name == "builtins.eval"


def test_truncated_zip_is_a_typed_error(tmp_path):
    raw = (FIXTURES / "state_dict.pt").read_bytes()
    for cut in (10, len(raw) // 2, len(raw) - 5):
        path = tmp_path / "cut.pt"
        path.write_bytes(raw[:cut])
        with pytest.raises(ember.UnpicklingError):
            ember.load(path)


def tensor_pickle(location: bytes, offset: int) -> bytes:
    """_rebuild_tensor_v2(storage '0' of 4 floats at `location`, offset, size (4,), stride (1,))."""
    return (b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n((X\x07\x00\x00\x00storagectorch\nFloatStorage\n"
            b"X\x01\x00\x00\x000X" + struct.pack("<I", len(location)) + location + b"K\x04tQK" + bytes([offset]) +
            b"K\x04\x85K\x01\x85\x89ccollections\nOrderedDict\n)RtR.")


def test_a_tensor_past_its_storage_is_a_typed_error(tmp_path):
    path = tmp_path / "oob.pt"  # offset 2 of 4 elements: the view reads elements 2..5
    path.write_bytes(zip_with_pickle(tensor_pickle(b"cpu", offset=2), {"0": struct.pack("<4f", 1, 2, 3, 4)}))
    with pytest.raises(ember.UnpicklingError, match="reach element 5 of storage '0'"):
        ember.load(path)


def test_not_a_torch_file(tmp_path):
    path = tmp_path / "x.pt"
    path.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(ember.UnpicklingError):
        ember.load(path)
    with pytest.raises(FileNotFoundError):
        ember.load(tmp_path / "missing.pt")


# ---- PyTorch itself, when installed -----------------------------------------------------------------

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed (the fixtures cover reading its files)")


@needs_torch
def test_torch_loads_ember_files_with_weights_only(tmp_path):
    sd, osd = a_state_dict(), an_optimizer_state()
    obj = {"epoch": 3, "model": sd, "optimizer": osd, "dtypes": {d: ember.ones(2).to(getattr(ember, d)) for d in (
        "float16", "bfloat16", "bool", "uint8", "int32")}, "size": ember.Size([1, 2]), "blob": b"\xff\x00",
        "device": ember.device("cpu"), "dtype": ember.float16}
    ember.save(obj, tmp_path / "ck.pt")
    t = torch.load(tmp_path / "ck.pt", weights_only=True)
    assert list(t["model"]) == list(sd) and isinstance(t["model"], collections.OrderedDict)
    np.testing.assert_array_equal(t["model"]["fc1.weight"].numpy(), np.asarray(sd["fc1.weight"]))
    assert t["model"]["bn.num_batches_tracked"].dtype == torch.int64 and t["model"]["bn.num_batches_tracked"].dim() == 0
    assert t["optimizer"]["param_groups"][0]["betas"] == (0.9, 0.999)
    assert t["optimizer"]["state"][0]["step"].item() == 3.0
    assert t["dtypes"]["bfloat16"].dtype == torch.bfloat16 and t["dtypes"]["bool"].dtype == torch.bool
    assert t["size"] == torch.Size([1, 2]) and t["blob"] == b"\xff\x00"
    assert t["device"] == torch.device("cpu") and t["dtype"] is torch.float16


@needs_torch
def test_ember_reads_what_torch_saves_now(tmp_path):
    net = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.BatchNorm2d(2))
    torch.save({"model": net.state_dict(), "epoch": 2}, tmp_path / "t.pt")
    back = ember.load(tmp_path / "t.pt")
    for k, v in net.state_dict().items():
        assert tuple(back["model"][k].shape) == tuple(v.shape)
        np.testing.assert_array_equal(np.asarray(back["model"][k]), v.numpy())


# ---- ember.load of a run: ember.load_run now ---------------------------------------------------------

def test_loading_a_directory_that_is_not_a_run_still_goes_to_load_run_with_a_warning(tmp_path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ember.Error):
            ember.load(tmp_path)
    assert any(issubclass(w.category, DeprecationWarning) and "ember.load_run" in str(w.message) for w in caught)


# ---- a training program's checkpoint: ember.nn and ember.optim state dicts ---------------------------

def test_a_module_and_optimizer_checkpoint_round_trips_and_loads_in_torch(tmp_path):
    def build(lib):
        lib.manual_seed(0)
        return lib.nn.Sequential(lib.nn.Linear(4, 3), lib.nn.BatchNorm1d(3), lib.nn.ReLU(), lib.nn.Linear(3, 2))

    net = build(ember)
    opt = ember.optim.Adam(net.parameters(), lr=0.01)
    for _ in range(2):
        opt.zero_grad()
        net(ember.randn(5, 4)).sum().backward()
        opt.step()
    ember.save({"epoch": 2, "model": net.state_dict(), "optimizer": opt.state_dict()}, tmp_path / "ck.pt")

    back = ember.load(tmp_path / "ck.pt")
    net2 = build(ember)
    opt2 = ember.optim.Adam(net2.parameters(), lr=0.5)
    net2.load_state_dict(back["model"])
    opt2.load_state_dict(back["optimizer"])
    for (k, a), b in zip(net.state_dict().items(), net2.state_dict().values()):
        assert np.array_equal(np.asarray(a), np.asarray(b)), k
    assert opt2.param_groups[0]["lr"] == 0.01 and back["epoch"] == 2
    same(opt2.state_dict()["state"], opt.state_dict()["state"])

    if torch is not None:
        ck = torch.load(tmp_path / "ck.pt", weights_only=True)
        tnet = build(torch)
        tnet.load_state_dict(ck["model"])  # strict: PyTorch's keys, shapes and dtypes
        topt = torch.optim.Adam(tnet.parameters(), lr=0.5)
        topt.load_state_dict(ck["optimizer"])
        assert topt.param_groups[0]["lr"] == 0.01
        x = np.random.default_rng(0).standard_normal((6, 4)).astype(np.float32)
        net.eval(), tnet.eval()
        np.testing.assert_allclose(np.asarray(net(ember.from_numpy(x))), tnet(torch.from_numpy(x)).detach().numpy(),
                                   rtol=1e-5, atol=1e-6)
