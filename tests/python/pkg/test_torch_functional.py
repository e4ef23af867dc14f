"""ember.nn.functional against torch.nn.functional (issue 46): every function's values, shape and dtype,
and the gradients of its floating inputs (float64, through backward of a weighted sum), compared with
PyTorch's; the argument conversions (int-or-tuple, padding="same", reduction=, inplace=), the
deprecated size_average/reduce, bad input (the error type PyTorch raises and a piece of ember's
message) and the NotImplementedError of a name ember lacks. PyTorch's side comes from torch, or
from tests/python/golden/torch_functional.json without it (torch_golden.py)."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from torch_golden import Golden, torch

golden = Golden("torch_functional.json")


@pytest.fixture(autouse=True)
def _case_keys(request):
    golden.start(request.node.nodeid)


def rnd(*shape, seed=0, scale=1.0):
    return np.random.RandomState(seed).uniform(-1, 1, size=shape) * scale


def ints(high, *shape, seed=0):
    return np.random.RandomState(seed).randint(0, high, size=shape).astype(np.int64)


def prob(*shape, seed=0):
    return np.random.RandomState(seed).uniform(0.05, 0.95, size=shape)


class Leaf:
    """An input of a case: a float64 tensor that requires grad (grad=True) or a constant."""

    def __init__(self, values, grad=True):
        self.values = np.asarray(values)
        self.grad = grad and self.values.dtype.kind == "f"

    def make(self, lib):
        if self.values.dtype.kind == "f":
            return lib.tensor(self.values, dtype=lib.float64, requires_grad=self.grad)
        return lib.tensor(self.values, dtype=lib.int64)


def C(values):
    return Leaf(values, grad=False)


def run(lib, fn, leaves):
    """fn's outputs with lib (ember or torch), then the gradients of every leaf that requires grad of
    sum(out * w) for a fixed w (so every output element's gradient counts)."""
    xs = [leaf.make(lib) for leaf in leaves]
    outs = fn(lib, lib.nn.functional, *xs)
    outs = list(outs) if isinstance(outs, tuple) else [outs]
    results = [o.detach() if hasattr(o, "detach") else o for o in outs]
    out = outs[0]
    if out.requires_grad:
        w = lib.tensor(np.random.RandomState(7).uniform(0.5, 1.5, size=tuple(out.shape)), dtype=out.dtype)
        (out * w).sum().backward()
        results += [x.grad for x, leaf in zip(xs, leaves) if leaf.grad]
    return results


def check(fn, *leaves, atol=1e-9, rtol=1e-7):
    mine = run(ember, fn, leaves)
    cache = {}

    def theirs(i):
        if "r" not in cache:
            cache["r"] = run(torch, fn, leaves)
        return cache["r"][i]

    for i, e in enumerate(mine):
        golden.same(e, lambda i=i: theirs(i), atol=atol, rtol=rtol)


X = rnd(2, 3, 4, seed=1, scale=2.5)
ACTIVATIONS = {
    "relu": lambda lib, F, x: F.relu(x),
    "relu6": lambda lib, F, x: F.relu6(x * 4),
    "leaky_relu": lambda lib, F, x: F.leaky_relu(x, 0.2),
    "elu": lambda lib, F, x: F.elu(x, alpha=0.5),
    "selu": lambda lib, F, x: F.selu(x),
    "celu": lambda lib, F, x: F.celu(x, 0.7),
    "gelu": lambda lib, F, x: F.gelu(x),
    "gelu_tanh": lambda lib, F, x: F.gelu(x, approximate="tanh"),
    "silu": lambda lib, F, x: F.silu(x),
    "mish": lambda lib, F, x: F.mish(x),
    "hardswish": lambda lib, F, x: F.hardswish(x * 1.7),
    "hardsigmoid": lambda lib, F, x: F.hardsigmoid(x * 1.7),
    "hardtanh": lambda lib, F, x: F.hardtanh(x, -0.5, 1.2),
    "sigmoid": lambda lib, F, x: F.sigmoid(x),
    "tanh": lambda lib, F, x: F.tanh(x),
    "softmax": lambda lib, F, x: F.softmax(x, dim=1),
    "softmax_last": lambda lib, F, x: F.softmax(x, -1),
    "log_softmax": lambda lib, F, x: F.log_softmax(x, dim=2),
    "softmin": lambda lib, F, x: F.softmin(x, dim=0),
    "softplus": lambda lib, F, x: F.softplus(x, beta=2, threshold=1.5),
    "logsigmoid": lambda lib, F, x: F.logsigmoid(x),
    "softsign": lambda lib, F, x: F.softsign(x),
    "glu": lambda lib, F, x: F.glu(x),
    "glu_dim1": lambda lib, F, x: F.glu(lib.cat([x, x * 0.5], 1), 1),
}


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activation(name):
    check(ACTIVATIONS[name], Leaf(X))


def test_softmax_dtype_and_implicit_dim():
    check(lambda lib, F, x: F.softmax(x, dim=1, dtype=lib.float32), Leaf(X), atol=1e-6, rtol=1e-5)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        e = F.softmax(ember.tensor(rnd(2, 3)))  # 2-D: dim 1, as PyTorch
    np.testing.assert_allclose(e.sum(1).numpy(), [1, 1], rtol=1e-6)


def test_prelu():
    check(lambda lib, F, x, w: F.prelu(x, w), Leaf(rnd(2, 3, 4)), Leaf([0.25, -0.1, 0.5]))


LAYERS = {
    "linear": (lambda lib, F, x, w, b: F.linear(x, w, b), [rnd(3, 4), rnd(5, 4, seed=2), rnd(5, seed=3)]),
    "linear_nobias": (lambda lib, F, x, w: F.linear(x, w), [rnd(2, 3, 4), rnd(5, 4, seed=2)]),
    "conv2d": (lambda lib, F, x, w, b: F.conv2d(x, w, b), [rnd(2, 3, 7, 7), rnd(4, 3, 3, 3, seed=2), rnd(4, seed=3)]),
    "conv2d_stride_pad": (lambda lib, F, x, w, b: F.conv2d(x, w, b, stride=2, padding=1),
                          [rnd(2, 3, 7, 7), rnd(4, 3, 3, 3, seed=2), rnd(4, seed=3)]),
    "conv2d_tuples": (lambda lib, F, x, w: F.conv2d(x, w, None, (2, 1), (0, 2), (1, 2)),
                      [rnd(2, 3, 7, 7), rnd(4, 3, 3, 2, seed=2)]),
    "conv2d_groups": (lambda lib, F, x, w, b: F.conv2d(x, w, b, padding=1, groups=2),
                      [rnd(2, 4, 6, 6), rnd(6, 2, 3, 3, seed=2), rnd(6, seed=3)]),
    "conv2d_same_even_kernel": (lambda lib, F, x, w, b: F.conv2d(x, w, b, padding="same"),
                                [rnd(2, 3, 6, 5), rnd(4, 3, 4, 2, seed=2), rnd(4, seed=3)]),
    "conv2d_same_dilated": (lambda lib, F, x, w: F.conv2d(x, w, padding="same", dilation=2),
                            [rnd(1, 2, 7, 7), rnd(3, 2, 3, 3, seed=2)]),
    "conv2d_valid": (lambda lib, F, x, w: F.conv2d(x, w, padding="valid"), [rnd(1, 2, 5, 5), rnd(3, 2, 3, 3, seed=2)]),
    "conv1d": (lambda lib, F, x, w, b: F.conv1d(x, w, b, stride=2, padding=1),
               [rnd(2, 3, 9), rnd(4, 3, 3, seed=2), rnd(4, seed=3)]),
    "conv1d_same": (lambda lib, F, x, w: F.conv1d(x, w, padding="same", dilation=2),
                    [rnd(2, 3, 9), rnd(4, 3, 4, seed=2)]),
    "conv_transpose2d": (lambda lib, F, x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1),
                         [rnd(2, 4, 5, 5), rnd(4, 3, 3, 3, seed=2), rnd(3, seed=3)]),
    "conv_transpose2d_groups": (lambda lib, F, x, w: F.conv_transpose2d(x, w, groups=2, dilation=2),
                                [rnd(2, 4, 4, 4), rnd(4, 2, 3, 3, seed=2)]),
    "conv_transpose1d": (lambda lib, F, x, w, b: F.conv_transpose1d(x, w, b, stride=2),
                         [rnd(2, 4, 6), rnd(4, 3, 3, seed=2), rnd(3, seed=3)]),
    "max_pool2d": (lambda lib, F, x: F.max_pool2d(x, 2), [rnd(2, 3, 8, 8)]),
    "max_pool2d_stride_pad": (lambda lib, F, x: F.max_pool2d(x, 3, stride=2, padding=1), [rnd(2, 3, 8, 8)]),
    "max_pool2d_ceil": (lambda lib, F, x: F.max_pool2d(x, (2, 3), ceil_mode=True), [rnd(2, 3, 7, 7)]),
    "max_pool1d": (lambda lib, F, x: F.max_pool1d(x, 3, 2), [rnd(2, 3, 9)]),
    "avg_pool2d": (lambda lib, F, x: F.avg_pool2d(x, 3, 2, 1), [rnd(2, 3, 8, 8)]),
    "avg_pool2d_exclude_pad": (lambda lib, F, x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
                               [rnd(2, 3, 8, 8)]),
    "avg_pool2d_ceil": (lambda lib, F, x: F.avg_pool2d(x, 2, ceil_mode=True), [rnd(2, 3, 7, 7)]),
    "avg_pool1d": (lambda lib, F, x: F.avg_pool1d(x, 3, 2, 1), [rnd(2, 3, 9)]),
    "adaptive_avg_pool2d": (lambda lib, F, x: F.adaptive_avg_pool2d(x, (3, 2)), [rnd(2, 3, 7, 7)]),
    "adaptive_avg_pool2d_int": (lambda lib, F, x: F.adaptive_avg_pool2d(x, 1), [rnd(2, 3, 7, 7)]),
    "adaptive_avg_pool2d_none": (lambda lib, F, x: F.adaptive_avg_pool2d(x, (None, 3)), [rnd(2, 3, 5, 7)]),
    "adaptive_avg_pool1d": (lambda lib, F, x: F.adaptive_avg_pool1d(x, 3), [rnd(2, 3, 7)]),
    "layer_norm": (lambda lib, F, x, w, b: F.layer_norm(x, (3, 4), w, b), [rnd(2, 3, 4), rnd(3, 4, seed=2),
                                                                          rnd(3, 4, seed=3)]),
    "layer_norm_plain": (lambda lib, F, x: F.layer_norm(x, (4,), eps=1e-3), [rnd(2, 3, 4)]),
    "group_norm": (lambda lib, F, x, w, b: F.group_norm(x, 3, w, b), [rnd(2, 6, 4, 4), rnd(6, seed=2),
                                                                      rnd(6, seed=3)]),
    "normalize": (lambda lib, F, x: F.normalize(x), [rnd(3, 4, 2)]),
    "normalize_p1": (lambda lib, F, x: F.normalize(x, p=1.0, dim=-1), [rnd(3, 4)]),
    "cosine_similarity": (lambda lib, F, a, b: F.cosine_similarity(a, b), [rnd(3, 4), rnd(3, 4, seed=2)]),
    "cosine_similarity_broadcast": (lambda lib, F, a, b: F.cosine_similarity(a, b, dim=-1),
                                    [rnd(3, 4), rnd(1, 4, seed=2)]),
    "pairwise_distance": (lambda lib, F, a, b: F.pairwise_distance(a, b), [rnd(3, 4), rnd(3, 4, seed=2)]),
    "pad_constant": (lambda lib, F, x: F.pad(x, (1, 2), value=0.5), [rnd(2, 3)]),
    "pad_constant_2d": (lambda lib, F, x: F.pad(x, (1, 0, 2, 1)), [rnd(1, 2, 3, 3)]),
    "pad_reflect": (lambda lib, F, x: F.pad(x, (2, 1, 1, 2), mode="reflect"), [rnd(1, 2, 4, 4)]),
    "pad_replicate": (lambda lib, F, x: F.pad(x, (2, 1, 1, 2), mode="replicate"), [rnd(1, 2, 4, 4)]),
    "pad_circular": (lambda lib, F, x: F.pad(x, (2, 1), mode="circular"), [rnd(1, 2, 4)]),
    "interpolate_nearest": (lambda lib, F, x: F.interpolate(x, scale_factor=2), [rnd(1, 2, 3, 3)]),
    "interpolate_nearest_size": (lambda lib, F, x: F.interpolate(x, size=(5, 7)), [rnd(1, 2, 3, 3)]),
    "interpolate_nearest_exact": (lambda lib, F, x: F.interpolate(x, size=5, mode="nearest-exact"),
                                  [rnd(1, 2, 3, 3)]),
    "interpolate_bilinear": (lambda lib, F, x: F.interpolate(x, scale_factor=1.5, mode="bilinear"),
                             [rnd(1, 2, 4, 4)]),
    "interpolate_bilinear_corners": (lambda lib, F, x: F.interpolate(x, size=(5, 6), mode="bilinear",
                                                                     align_corners=True), [rnd(1, 2, 3, 4)]),
    "interpolate_linear": (lambda lib, F, x: F.interpolate(x, size=7, mode="linear"), [rnd(1, 2, 4)]),
    "embedding": (lambda lib, F, i, w: F.embedding(i, w), [ints(10, 2, 3), rnd(10, 3)]),
    "embedding_padding_idx": (lambda lib, F, i, w: F.embedding(i, w, padding_idx=0),
                              [np.array([[0, 2, 0], [4, 0, 1]]), rnd(10, 3)]),
}


@pytest.mark.parametrize("name", list(LAYERS))
def test_layer_function(name):
    fn, inputs = LAYERS[name]
    check(fn, *[Leaf(a) for a in inputs])


def test_batch_norm_training_updates_running_stats():
    def bn(lib, F, x, w, b):
        rm = lib.tensor(rnd(3, seed=5), dtype=lib.float64)
        rv = lib.tensor(prob(3, seed=6) + 0.5, dtype=lib.float64)
        return F.batch_norm(x, rm, rv, w, b, training=True, momentum=0.3, eps=1e-3), rm, rv
    check(bn, Leaf(rnd(4, 3, 2, 2)), Leaf(prob(3)), Leaf(rnd(3, seed=2)))


def test_batch_norm_eval_and_without_running_stats():
    def bn_eval(lib, F, x, w, b):
        rm = lib.tensor(rnd(3, seed=5), dtype=lib.float64)
        rv = lib.tensor(prob(3, seed=6) + 0.5, dtype=lib.float64)
        return F.batch_norm(x, rm, rv, w, b)
    check(bn_eval, Leaf(rnd(4, 3, 5)), Leaf(prob(3)), Leaf(rnd(3, seed=2)))
    check(lambda lib, F, x: F.batch_norm(x, None, None, training=True), Leaf(rnd(4, 3)))


def test_one_hot():
    check(lambda lib, F, t: F.one_hot(t), C(np.array([[0, 3], [2, 1]])))
    check(lambda lib, F, t: F.one_hot(t, num_classes=6), C(np.array([0, 3, 5])))


LOSSES = {
    "cross_entropy": (lambda lib, F, x, t: F.cross_entropy(x, t), [rnd(4, 5), ints(5, 4)]),
    "cross_entropy_sum": (lambda lib, F, x, t: F.cross_entropy(x, t, reduction="sum"), [rnd(4, 5), ints(5, 4)]),
    "cross_entropy_none": (lambda lib, F, x, t: F.cross_entropy(x, t, reduction="none"), [rnd(4, 5), ints(5, 4)]),
    "cross_entropy_weight_ignore": (
        lambda lib, F, x, t, w: F.cross_entropy(x, t, weight=w, ignore_index=2),
        [rnd(6, 5), np.array([0, 2, 4, 1, 2, 3]), C(prob(5, seed=4))]),
    "cross_entropy_smoothing": (lambda lib, F, x, t, w: F.cross_entropy(x, t, w, label_smoothing=0.1),
                                [rnd(4, 5), ints(5, 4), C(prob(5, seed=4))]),
    "cross_entropy_probabilities": (lambda lib, F, x, t: F.cross_entropy(x, F.softmax(t, 1)),
                                    [rnd(4, 5), C(rnd(4, 5, seed=3))]),
    "cross_entropy_spatial": (lambda lib, F, x, t: F.cross_entropy(x, t), [rnd(2, 4, 3, 3), ints(4, 2, 3, 3)]),
    "nll_loss": (lambda lib, F, x, t: F.nll_loss(F.log_softmax(x, 1), t), [rnd(4, 5), ints(5, 4)]),
    "nll_loss_weight_none": (lambda lib, F, x, t, w: F.nll_loss(F.log_softmax(x, 1), t, w, reduction="none"),
                             [rnd(4, 5), ints(5, 4), C(prob(5, seed=4))]),
    "mse_loss": (lambda lib, F, x, t: F.mse_loss(x, t), [rnd(3, 4), C(rnd(3, 4, seed=2))]),
    "mse_loss_sum": (lambda lib, F, x, t: F.mse_loss(x, t, reduction="sum"), [rnd(3, 4), rnd(3, 4, seed=2)]),
    "l1_loss": (lambda lib, F, x, t: F.l1_loss(x, t), [rnd(3, 4), C(rnd(3, 4, seed=2))]),
    "smooth_l1_loss": (lambda lib, F, x, t: F.smooth_l1_loss(x, t, beta=0.5), [rnd(3, 4), C(rnd(3, 4, seed=2))]),
    "huber_loss": (lambda lib, F, x, t: F.huber_loss(x, t, reduction="none", delta=0.7),
                   [rnd(3, 4, scale=2), C(rnd(3, 4, seed=2))]),
    "binary_cross_entropy": (lambda lib, F, x, t, w: F.binary_cross_entropy(x.sigmoid(), t, w),
                             [rnd(3, 4), C(prob(3, 4, seed=2)), C(prob(4, seed=3))]),
    "binary_cross_entropy_with_logits": (
        lambda lib, F, x, t, pw: F.binary_cross_entropy_with_logits(x, t, pos_weight=pw),
        [rnd(3, 4, scale=3), C(prob(3, 4, seed=2)), C(prob(4, seed=3) * 3)]),
    "kl_div_batchmean": (lambda lib, F, x, t: F.kl_div(F.log_softmax(x, 1), F.softmax(t, 1), reduction="batchmean"),
                         [rnd(3, 4), C(rnd(3, 4, seed=2))]),
    "kl_div_log_target": (lambda lib, F, x, t: F.kl_div(x, t, reduction="sum", log_target=True),
                          [rnd(3, 4), C(rnd(3, 4, seed=2))]),
}


@pytest.mark.parametrize("name", list(LOSSES))
def test_loss(name):
    fn, inputs = LOSSES[name]
    check(fn, *[a if isinstance(a, Leaf) else Leaf(a) for a in inputs])


def test_float32_conv_and_loss():
    """The float32 path the layers run on (oneDNN on the CPU), within float32 tolerance."""
    def net(lib, F, x, w, b):
        x32, w32, b32 = x.float(), w.float(), b.float()
        y = F.max_pool2d(F.relu(F.conv2d(x32, w32, b32, padding=1)), 2)
        return F.cross_entropy(y.flatten(1), lib.tensor([1, 3]))
    check(net, Leaf(rnd(2, 3, 6, 6)), Leaf(rnd(4, 3, 3, 3, seed=2)), Leaf(rnd(4, seed=3)), atol=2e-6, rtol=1e-5)


def test_legacy_size_average_and_reduce():
    x, t = ember.tensor(rnd(3, 4)), ember.tensor(rnd(3, 4, seed=2))
    with pytest.warns(UserWarning, match="reduction='sum'"):
        s = F.mse_loss(x, t, size_average=False)
    assert s.item() == pytest.approx(F.mse_loss(x, t, reduction="sum").item())
    with pytest.warns(UserWarning, match="reduction='none'"):
        assert F.l1_loss(x, t, reduce=False).shape == (3, 4)


def test_inplace_modifies_the_input():
    x = ember.tensor([-1.0, 2.0, -3.0])
    y = F.relu(x, inplace=True)
    assert y is x and x.tolist() == [0.0, 2.0, 0.0]
    x = ember.tensor([-1.0, 7.0])
    assert F.relu6(x, inplace=True) is x and x.tolist() == [0.0, 6.0]
    x = ember.tensor([-1.0, 2.0])
    F.leaky_relu_(x, 0.5)
    assert x.tolist() == [-0.5, 2.0]
    x = ember.ones(100)
    F.dropout(x, 0.5, training=True, inplace=True)
    assert set(x.tolist()) <= {0.0, 2.0} and 0.0 in x.tolist()


def test_inplace_on_a_tensor_that_requires_grad_gives_pytorch_gradients():
    """nn.ReLU(inplace=True) inside a model: ember returns the result instead of writing into the
    activation (no in-place history), with PyTorch's values and gradients."""
    check(lambda lib, F, x: F.relu(x * 2, inplace=True) + F.silu(x * 1, inplace=True), Leaf(X))


def test_dropout_statistics():
    ember.manual_seed(0)
    x = ember.ones(200, 100)
    y = F.dropout(x, p=0.3)
    kept = (y != 0).float().mean().item()
    assert abs(kept - 0.7) < 0.01
    np.testing.assert_allclose(np.unique(y.numpy()), [0.0, 1 / 0.7], rtol=1e-6)
    assert F.dropout(x, 0.3, training=False).equal(x)
    y2 = F.dropout2d(ember.ones(20, 50, 3, 3), 0.5)
    per_channel = y2.numpy().reshape(20, 50, 9)
    assert np.all((per_channel == per_channel[..., :1]))  # whole channels kept or zeroed
    assert F.dropout1d(ember.ones(4, 8, 5), 0.5).shape == (4, 8, 5)


def test_bad_input_errors():
    x = ember.randn(2, 3, 5, 5)
    with pytest.raises(RuntimeError, match="conv2d"):
        F.conv2d(x, ember.randn(4, 2, 3, 3))  # 2 input channels for 3
    with pytest.raises(RuntimeError, match="linear|matmul|shape"):
        F.linear(ember.randn(2, 3), ember.randn(4, 5))
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        F.mse_loss(x, x, reduction="avg")
    with pytest.raises(ValueError, match="dropout probability"):
        F.dropout(x, 1.5)
    with pytest.raises(ValueError, match="stride"):
        F.conv2d(x, ember.randn(4, 3, 3, 3), stride=(1, 2, 3))
    with pytest.raises(IndexError):
        F.embedding(ember.tensor([0, 10]), ember.randn(10, 3))
    with pytest.raises(TypeError):
        F.relu([1.0, 2.0])
    with pytest.raises(RuntimeError):
        F.cross_entropy(ember.randn(4, 5), ember.tensor([0, 1, 2]))  # 3 targets for 4 samples


def test_what_ember_lacks_raises_not_implemented_naming_it():
    with pytest.raises(NotImplementedError, match="torch.nn.functional.conv3d is not implemented in ember"):
        F.conv3d
    with pytest.raises(NotImplementedError, match="return_indices"):
        F.max_pool2d(ember.randn(1, 1, 4, 4), 2, return_indices=True)
    with pytest.raises(AttributeError):
        F.no_such_function_anywhere


def test_zz_write_goldens():
    """Writes PyTorch's side of every comparison above (run last, with EMBER_WRITE_TORCH_GOLDENS=1)."""
    golden.write()
