"""ember.Tensor <-> NumPy and DLPack without copies: the same data pointer, dtype and strides kept,
and the source may be deleted before its views."""

import gc

import numpy as np
import pytest

import ember


def test_numpy_round_trip_shares_the_data():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = ember.from_numpy(a)
    assert t.shape == (3, 4) and t.dtype == "float32" and t.strides == (4, 1) and str(t.device) == "cpu"
    assert t.data_ptr() == a.ctypes.data
    b = np.asarray(t)
    assert b.ctypes.data == a.ctypes.data and b.dtype == np.float32
    a[1, 2] = 42.0  # one memory
    assert b[1, 2] == 42.0


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int64, np.int32, np.uint8, np.bool_])
def test_dtypes_are_kept(dtype):
    a = (np.arange(6) % 2).astype(dtype).reshape(2, 3)
    t = ember.from_numpy(a)
    assert np.asarray(t).dtype == a.dtype and np.array_equal(np.asarray(t), a)


def test_strides_of_a_view_are_kept():
    a = np.arange(24, dtype=np.float64).reshape(4, 6)
    v = a[:, 1::2].T  # a non-contiguous view: (3, 4), strides (2, 6) in elements
    t = ember.from_numpy(v)
    assert t.shape == (3, 4) and t.strides == (2, 6) and not t.is_contiguous()
    assert t.data_ptr() == v.ctypes.data
    assert np.array_equal(np.asarray(t), v)


def test_the_numpy_source_may_go_first():
    a = np.full((256, 256), 3.0, dtype=np.float32)
    ptr = a.ctypes.data
    t = ember.from_numpy(a)
    del a
    gc.collect()
    b = np.asarray(t)
    assert b.ctypes.data == ptr and float(b.sum()) == 3.0 * 256 * 256


def test_the_ember_tensor_may_go_first():
    t = ember.from_numpy(np.ones((64, 64), dtype=np.float32))
    b = np.asarray(t)  # NumPy keeps the ember.Tensor as its base
    del t
    gc.collect()
    assert float(b.sum()) == 64 * 64


def test_dlpack_round_trip_through_numpy():
    a = np.arange(10, dtype=np.int64)
    t = ember.from_dlpack(a)
    assert t.data_ptr() == a.ctypes.data
    b = np.from_dlpack(t)  # NumPy as the DLPack consumer of an ember.Tensor
    assert b.ctypes.data == a.ctypes.data and np.array_equal(b, a)
    del a, t
    gc.collect()
    assert b.tolist() == list(range(10))


def test_a_capsule_is_consumed_once():
    capsule = np.arange(3, dtype=np.float32).__dlpack__()
    ember.from_dlpack(capsule)
    with pytest.raises(ember.ValueError, match="consumed once"):
        ember.from_dlpack(capsule)


def test_refusals_are_typed():
    with pytest.raises(ember.ValueError):
        ember.from_numpy([1, 2, 3])
    with pytest.raises(ValueError):
        ember.from_dlpack(object())
    assert issubclass(ember.ShapeError, ValueError) and issubclass(ember.DTypeError, TypeError)
    assert issubclass(ember.IOError, OSError) and issubclass(ember.OutOfMemoryError, MemoryError)


def test_bfloat16_has_no_numpy_dtype():
    t = ember.from_numpy(np.ones(4, dtype=np.float32)).to("bfloat16")
    assert t.dtype == "bfloat16"
    with pytest.raises(ember.DTypeError, match="bfloat16"):
        np.asarray(t)
    assert np.asarray(t.to("float32")).tolist() == [1.0] * 4


def test_torch_round_trip():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed in this environment")
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4).t()  # strides (1, 4)
    t = ember.from_dlpack(x)
    assert t.data_ptr() == x.data_ptr() and t.strides == (1, 4) and t.shape == (4, 3)
    y = torch.from_dlpack(t)
    assert y.data_ptr() == x.data_ptr() and y.stride() == (1, 4) and torch.equal(x, y)
    del x, t
    gc.collect()
    assert y.sum().item() == 66.0
    if torch.cuda.is_available() and ember.cuda.is_available():
        g = torch.arange(6, dtype=torch.float32, device="cuda")
        e = ember.from_dlpack(g)
        assert e.device == ember.Device("cuda:0") and e.data_ptr() == g.data_ptr()
        assert torch.from_dlpack(e).data_ptr() == g.data_ptr()
