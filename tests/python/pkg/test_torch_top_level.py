"""The rest of PyTorch's top level on ember (issue 46, "Devices and the rest of the top level"):
ember.accelerator, ember.backends.cudnn / mps, ember.version, ember.cuda's seeding and memory,
ember.autocast, the module __getattr__ that names a PyTorch function ember lacks, and autograd's
allow_unused and in-place rules, each compared with torch where it is importable."""

from __future__ import annotations

import collections
import re
import warnings

import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")
no_gpu = pytest.mark.skipif(ember.cuda.is_available(), reason="checks the answers of a machine without a usable GPU")


# ---- devices, backends, version -------------------------------------------------------------------

def test_accelerator():
    assert ember.accelerator.is_available() == ember.cuda.is_available()
    acc = ember.accelerator.current_accelerator()
    if ember.cuda.is_available():
        assert acc.type == "cuda" and ember.accelerator.device_count() >= 1
    else:
        assert acc is None  # as torch 2.6+ answers without an accelerator


@no_gpu
def test_cudnn_without_a_gpu():
    assert ember.backends.cudnn.version() is None
    assert ember.backends.cudnn.is_available() is False


@pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a usable GPU")
def test_cudnn_with_a_gpu():
    v = ember.backends.cudnn.version()
    assert v is None or (isinstance(v, int) and v >= 8000)


def test_cudnn_switches_and_mps():
    cudnn = ember.backends.cudnn
    assert cudnn.enabled is True and cudnn.benchmark is False and cudnn.deterministic is False
    cudnn.benchmark = True
    try:
        assert ember.backends.cudnn.benchmark is True
    finally:
        cudnn.benchmark = False
    assert ember.backends.mps.is_available() is False and ember.backends.mps.is_built() is False


def test_version():
    assert ember.version.__version__ == ember.__version__
    cuda = ember.version.cuda
    assert cuda is None or re.fullmatch(r"\d+\.\d+", cuda), cuda
    assert ember.version.hip is None


def test_cuda_seeding_and_memory():
    ember.cuda.manual_seed_all(7)
    a = ember.rand(3)
    ember.manual_seed(7)
    assert np.array_equal(np.asarray(a), np.asarray(ember.rand(3)))
    assert isinstance(ember.cuda.memory_allocated(), int)
    ember.cuda.reset_peak_memory_stats()
    assert ember.cuda.memory_reserved() >= ember.cuda.memory_allocated()
    if not ember.cuda.is_available():
        assert ember.cuda.memory_allocated() == 0 and ember.cuda.max_memory_allocated() == 0
        assert ember.cuda.memory_reserved() == 0 and ember.cuda.is_bf16_supported() is False


def test_the_mnist_examples_top_level_calls(tmp_path):
    """pytorch/examples mnist/main.py's top level, with `import ember as torch`."""
    import ember as torch_

    use_accel = torch_.accelerator.is_available()
    torch_.manual_seed(1)
    device = torch_.accelerator.current_accelerator() if use_accel else torch_.device("cpu")
    weights = torch_.randn(4, 3, device=device)
    with torch_.no_grad():
        out = (torch_.ones(2, 4, device=device) @ weights).argmax(dim=1, keepdim=True)
    assert out.shape == (2, 1)
    state = collections.OrderedDict(fc1=weights, bias=torch_.zeros(3))
    torch_.save(state, tmp_path / "mnist_cnn.pt")
    back = torch_.load(tmp_path / "mnist_cnn.pt", map_location="cpu")
    assert list(back) == ["fc1", "bias"] and np.array_equal(np.asarray(back["fc1"]), np.asarray(weights.cpu()))


# ---- autocast ---------------------------------------------------------------------------------------

def test_autocast_context_and_decorator():
    assert not ember.is_autocast_enabled("cpu")
    with ember.autocast("cpu"):
        assert ember.is_autocast_enabled("cpu") and ember.get_autocast_dtype("cpu") is ember.bfloat16
        with ember.autocast("cpu", enabled=False):
            assert not ember.is_autocast_enabled("cpu")
        assert ember.is_autocast_enabled("cpu")
    assert not ember.is_autocast_enabled("cpu")

    @ember.autocast("cpu", dtype=ember.bfloat16)
    def inside():
        return ember.is_autocast_enabled("cpu")

    assert inside() and not ember.is_autocast_enabled("cpu")


def test_autocast_lowers_matmul_to_bfloat16_on_the_cpu():
    ember.manual_seed(0)
    x, w = ember.randn(8, 16), ember.randn(16, 4)
    with ember.autocast("cpu", dtype=ember.bfloat16):
        y = ember.matmul(x, w)
    assert y.dtype == ember.float32  # accumulated and returned in float32
    rounded = ember.matmul(x.bfloat16().float(), w.bfloat16().float())
    np.testing.assert_allclose(np.asarray(y), np.asarray(rounded), rtol=1e-5, atol=1e-5)
    assert not np.array_equal(np.asarray(y), np.asarray(ember.matmul(x, w)))


def test_autocast_refusals():
    with pytest.raises(NotImplementedError):
        with ember.autocast("cpu", dtype=ember.float16):
            pass
    assert not ember.is_autocast_enabled("cpu")
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'xpu'"):
        ember.autocast("xpu")
    if not ember.cuda.is_available():
        with pytest.warns(UserWarning, match="CUDA is not available. Disabling"):
            ac = ember.autocast("cuda")
        with ac:
            assert not ember.is_autocast_enabled("cuda")


# ---- names PyTorch has and ember lacks --------------------------------------------------------------

def test_a_torch_function_ember_lacks_is_not_implemented_naming_it():
    from ember._torch_api import TORCH, TORCH_AUTOGRAD

    assert "einsum" in TORCH and not hasattr(ember, "einsum")
    with pytest.raises(NotImplementedError, match=re.escape("torch.einsum is not implemented in ember yet "
                                                            "(docs/python.md lists what is)")) as e:
        ember.einsum
    assert isinstance(e.value, AttributeError) and isinstance(e.value, ember.NotInEmberError)
    assert "gradgradcheck" in TORCH_AUTOGRAD
    with pytest.raises(NotImplementedError, match=re.escape("torch.autograd.gradgradcheck is not implemented")):
        ember.autograd.gradgradcheck


def test_other_unknown_names_stay_attribute_errors():
    for module, name in ((ember, "not_a_torch_name"), (ember.autograd, "nothing_here"), (ember, "_private")):
        with pytest.raises(AttributeError) as e:
            getattr(module, name)
        assert not isinstance(e.value, NotImplementedError)
        assert f"has no attribute '{name}'" in str(e.value)
    assert getattr(ember, "einsum", None) is None  # getattr's default and hasattr still work


# ---- autograd: allow_unused, double backward, in place ------------------------------------------------

def test_allow_unused():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = ember.tensor([3.0], requires_grad=True)
    z = (x * 2).sum()
    gx, gy = ember.autograd.grad(z, [x, y], allow_unused=True, retain_graph=True)
    assert gy is None and gx.tolist() == [2.0, 2.0]
    with pytest.raises(RuntimeError, match=re.escape("One of the differentiated Tensors appears to not have been used "
                                                     "in the graph. Set allow_unused=True if this is the desired "
                                                     "behavior.")):
        ember.autograd.grad(z, [x, y], retain_graph=True)
    gx, gy = ember.autograd.grad(z, [x, y], materialize_grads=True)
    assert gy.tolist() == [0.0]
    if torch is not None:
        tx, ty = torch.tensor([1.0, 2.0], requires_grad=True), torch.tensor([3.0], requires_grad=True)
        assert torch.autograd.grad((tx * 2).sum(), [tx, ty], allow_unused=True)[1] is None


def test_create_graph_is_still_refused():
    x = ember.tensor(2.0, requires_grad=True)
    with pytest.raises(NotImplementedError, match="create_graph=True"):
        ember.autograd.grad(x ** 3, x, create_graph=True)


def torch_or(formula, torch_fn):
    return torch_fn() if torch is not None else formula


@pytest.mark.parametrize("case", ["add_", "mul_", "iadd", "itruediv", "sub_alpha", "pow_", "clamp_", "relu_",
                                  "masked_fill_", "zero_", "fill_", "copy_"])
def test_in_place_on_a_non_leaf_records_it(case):
    def run(lib, x0):
        x = lib.tensor(x0, requires_grad=True)
        src = lib.tensor([5.0, 6.0, 7.0], requires_grad=True)
        y = x * 2
        if case == "add_":
            y.add_(1)
        elif case == "mul_":
            y.mul_(x)
        elif case == "iadd":
            y += x
        elif case == "itruediv":
            y /= 4
        elif case == "sub_alpha":
            y.sub_(x, alpha=3)
        elif case == "pow_":
            y.pow_(2)
        elif case == "clamp_":
            y.clamp_(min=-1.0, max=3.0)
        elif case == "relu_":
            y.relu_()
        elif case == "masked_fill_":
            y.masked_fill_(lib.tensor([True, False, False]), 9.0)
        elif case == "zero_":
            y.zero_()
        elif case == "fill_":
            y.fill_(2.5)
        elif case == "copy_":
            y.copy_(src)
        assert y.requires_grad and not y.is_leaf
        (y * lib.tensor([1.0, 2.0, 3.0])).sum().backward()
        return y.detach().tolist(), x.grad.tolist(), None if src.grad is None else src.grad.tolist()

    got = run(ember, [-1.0, 0.5, 2.0])
    if torch is not None:
        assert got == run(torch, [-1.0, 0.5, 2.0])
    else:  # the formula for the first case at least
        if case == "add_":
            assert got == ([-1.0, 2.0, 5.0], [2.0, 4.0, 6.0], None)


def test_in_place_on_a_leaf_that_requires_grad_is_pytorchs_error():
    x = ember.ones(3, requires_grad=True)
    for op in (lambda: x.add_(1), lambda: x.mul_(2), lambda: x.zero_(), lambda: x.clamp_(0, 1)):
        with pytest.raises(RuntimeError, match=re.escape("a leaf Variable that requires grad is being used in an "
                                                         "in-place operation.")):
            op()
    with pytest.raises(RuntimeError, match="a leaf Variable"):
        x += 1
    with ember.no_grad():
        x.add_(1)
    assert x.tolist() == [2.0, 2.0, 2.0]


def test_in_place_through_a_view_is_refused_rather_than_wrong():
    x = ember.ones(2, 3, requires_grad=True)
    y = x * 2
    row = y[0]
    with pytest.raises(RuntimeError, match="shares its memory with another tensor"):
        row.mul_(3)
    with pytest.raises(RuntimeError, match="shares its memory with another tensor"):
        y.mul_(3)  # while the view is alive


def test_in_place_on_a_tensor_saved_for_backward_fails_as_in_pytorch():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError):  # ember refuses at the in-place op; PyTorch at backward
        y = x.exp()
        y.add_(1)
        y.sum().backward()
