"""ember.nn against torch.nn (issue 46): each layer given the same weights as PyTorch's agrees on the
forward, the input's gradient and every parameter's gradient; Module's registration, state_dict keys
and order, load_state_dict (strict and not, PyTorch's messages), hooks, train/eval, to(), zero_grad,
apply and the printed repr are PyTorch's; init's fills have the distributions PyTorch's have;
clip_grad_norm_ / clip_grad_value_ give PyTorch's norms and gradients; and a Python-defined CNN and
PyTorch's same class, given the same state_dict, agree on the forward and every gradient. PyTorch's
side comes from torch, or from tests/python/golden/torch_nn.json without it (torch_golden.py)."""

import math
from collections import OrderedDict

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from torch_golden import Golden, torch

golden = Golden("torch_nn.json")


@pytest.fixture(autouse=True)
def _case_keys(request):
    golden.start(request.node.nodeid)


def rnd(*shape, seed=0, scale=1.0):
    return np.random.RandomState(seed).uniform(-1, 1, size=shape) * scale


def numpy_state(module_state, seed=10):
    """Deterministic values for every entry of a state_dict (the same for ember's and torch's module):
    float entries drawn, running_var kept positive, integer entries kept."""
    out = OrderedDict()
    for i, (k, v) in enumerate(module_state.items()):
        shape = tuple(v.shape)
        if not v.is_floating_point():
            out[k] = np.asarray(v.numpy() if hasattr(v, "numpy") else v)
        elif k.endswith("running_var") or k == "weight":  # positive: a variance, a loss's class weights
            out[k] = np.random.RandomState(seed + i).uniform(0.5, 1.5, size=shape)
        else:
            out[k] = np.random.RandomState(seed + i).uniform(-0.5, 0.5, size=shape)
    return out


def load_numpy(lib, module, arrays, dtype):
    state = OrderedDict()
    for k, a in arrays.items():
        t = lib.tensor(a)
        state[k] = t.to(dtype) if a.dtype.kind == "f" else t
    module.load_state_dict(state)
    return module


def run_layer(lib, make, x_values, train=False, dtype="float64", target=None):
    """make(nn) builds the layer; its weights come from numpy_state; returns the output, the input's
    gradient and each parameter's gradient (in named_parameters order) of sum(out * w)."""
    dt = getattr(lib, dtype)
    torch_like = lib is not ember
    layer = make(lib.nn)
    if not torch_like:
        arrays = numpy_state(layer.state_dict())
    else:
        arrays = numpy_state(ember_shapes(make))
    load_numpy(lib, layer, arrays, dt)
    layer.to(dt)
    layer.train(train)
    x = lib.tensor(x_values, dtype=dt if np.asarray(x_values).dtype.kind == "f" else lib.int64)
    if x.is_floating_point():
        x.requires_grad_(True)
    out = layer(x) if target is None else layer(x, lib.tensor(target))
    w = lib.tensor(np.random.RandomState(7).uniform(0.5, 1.5, size=tuple(out.shape)), dtype=out.dtype)
    (out * w).sum().backward()
    results = [out.detach()]
    if x.is_floating_point():
        results.append(x.grad)
    results += [p.grad for _, p in layer.named_parameters()]
    results += [b for _, b in layer.named_buffers()]
    return results


def ember_shapes(make):
    return make(nn).state_dict()


def check_layer(make, x_values, train=False, atol=1e-9, rtol=1e-7, dtype="float64", target=None):
    mine = run_layer(ember, make, x_values, train, dtype, target)
    cache = {}

    def theirs(i):
        if "r" not in cache:
            cache["r"] = run_layer(torch, make, x_values, train, dtype, target)
        return cache["r"][i]

    for i, e in enumerate(mine):
        golden.same(e, lambda i=i: theirs(i), atol=atol, rtol=rtol)


LAYERS = {
    "Linear": (lambda nn: nn.Linear(4, 3), rnd(2, 4)),
    "Linear_nobias_3d": (lambda nn: nn.Linear(4, 3, bias=False), rnd(2, 5, 4)),
    "Conv1d": (lambda nn: nn.Conv1d(3, 4, 3, stride=2, padding=1), rnd(2, 3, 9)),
    "Conv1d_same_reflect": (lambda nn: nn.Conv1d(3, 4, 4, padding="same", padding_mode="reflect"), rnd(2, 3, 9)),
    "Conv2d": (lambda nn: nn.Conv2d(3, 4, 3), rnd(2, 3, 6, 6)),
    "Conv2d_stride_pad_dil_groups": (lambda nn: nn.Conv2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 2), dilation=(1, 2),
                                                          groups=2), rnd(2, 4, 7, 7)),
    "Conv2d_same": (lambda nn: nn.Conv2d(3, 2, 4, padding="same", bias=False), rnd(1, 3, 5, 6)),
    "Conv2d_valid": (lambda nn: nn.Conv2d(3, 2, 3, padding="valid"), rnd(1, 3, 5, 6)),
    "Conv2d_reflect": (lambda nn: nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect"), rnd(1, 2, 5, 5)),
    "Conv2d_replicate": (lambda nn: nn.Conv2d(2, 3, 3, padding=(2, 1), padding_mode="replicate"), rnd(1, 2, 5, 5)),
    "Conv2d_circular": (lambda nn: nn.Conv2d(2, 3, 3, padding=1, padding_mode="circular"), rnd(1, 2, 5, 5)),
    "ConvTranspose1d": (lambda nn: nn.ConvTranspose1d(4, 2, 3, stride=2, output_padding=1), rnd(2, 4, 5)),
    "ConvTranspose2d": (lambda nn: nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2),
                        rnd(2, 4, 4, 4)),
    "BatchNorm1d_train": (lambda nn: nn.BatchNorm1d(3), rnd(5, 3), True),
    "BatchNorm1d_3d_train": (lambda nn: nn.BatchNorm1d(3, momentum=0.2), rnd(4, 3, 2), True),
    "BatchNorm2d_train": (lambda nn: nn.BatchNorm2d(3), rnd(2, 3, 4, 4), True),
    "BatchNorm2d_eval": (lambda nn: nn.BatchNorm2d(3), rnd(2, 3, 4, 4), False),
    "BatchNorm2d_noaffine": (lambda nn: nn.BatchNorm2d(3, affine=False), rnd(2, 3, 4, 4), True),
    "BatchNorm2d_no_running_stats": (lambda nn: nn.BatchNorm2d(3, track_running_stats=False), rnd(2, 3, 4, 4), False),
    "LayerNorm": (lambda nn: nn.LayerNorm((3, 4)), rnd(2, 3, 4)),
    "LayerNorm_nobias": (lambda nn: nn.LayerNorm(4, bias=False), rnd(2, 3, 4)),
    "GroupNorm": (lambda nn: nn.GroupNorm(2, 4), rnd(2, 4, 3, 3)),
    "Embedding": (lambda nn: nn.Embedding(10, 3, padding_idx=1), np.array([[1, 2, 1], [9, 0, 2]])),
    "ReLU": (lambda nn: nn.ReLU(), rnd(3, 4)),
    "ReLU_inplace": (lambda nn: nn.Sequential(nn.Linear(4, 4), nn.ReLU(inplace=True)), rnd(3, 4)),
    "ReLU6": (lambda nn: nn.ReLU6(), rnd(3, 4, scale=8)),
    "LeakyReLU": (lambda nn: nn.LeakyReLU(0.1), rnd(3, 4)),
    "ELU": (lambda nn: nn.ELU(alpha=0.5), rnd(3, 4)),
    "GELU": (lambda nn: nn.GELU(), rnd(3, 4)),
    "GELU_tanh": (lambda nn: nn.GELU("tanh"), rnd(3, 4)),
    "SiLU": (lambda nn: nn.SiLU(), rnd(3, 4)),
    "Hardswish": (lambda nn: nn.Hardswish(), rnd(3, 4, scale=4)),
    "Hardsigmoid": (lambda nn: nn.Hardsigmoid(), rnd(3, 4, scale=4)),
    "Sigmoid": (lambda nn: nn.Sigmoid(), rnd(3, 4)),
    "Tanh": (lambda nn: nn.Tanh(), rnd(3, 4)),
    "Softmax": (lambda nn: nn.Softmax(dim=1), rnd(3, 4)),
    "LogSoftmax": (lambda nn: nn.LogSoftmax(dim=-1), rnd(3, 4)),
    "Softplus": (lambda nn: nn.Softplus(beta=2), rnd(3, 4)),
    "MaxPool2d": (lambda nn: nn.MaxPool2d(2), rnd(2, 3, 6, 6)),
    "MaxPool2d_stride_pad_ceil": (lambda nn: nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True), rnd(2, 3, 6, 6)),
    "MaxPool1d": (lambda nn: nn.MaxPool1d(2), rnd(2, 3, 6)),
    "AvgPool2d": (lambda nn: nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False), rnd(2, 3, 6, 6)),
    "AvgPool1d": (lambda nn: nn.AvgPool1d(2), rnd(2, 3, 6)),
    "AdaptiveAvgPool2d": (lambda nn: nn.AdaptiveAvgPool2d((2, 3)), rnd(2, 3, 5, 7)),
    "AdaptiveAvgPool1d": (lambda nn: nn.AdaptiveAvgPool1d(2), rnd(2, 3, 5)),
    "Flatten": (lambda nn: nn.Flatten(), rnd(2, 3, 2)),
    "Unflatten": (lambda nn: nn.Unflatten(1, (2, 3)), rnd(2, 6)),
    "Identity": (lambda nn: nn.Identity(54, unused="x"), rnd(2, 3)),
    "Dropout_eval": (lambda nn: nn.Dropout(0.3), rnd(2, 3)),
    "Dropout2d_eval": (lambda nn: nn.Dropout2d(), rnd(2, 3, 2, 2)),
    "Upsample_nearest": (lambda nn: nn.Upsample(scale_factor=2), rnd(1, 2, 3, 3)),
    "Upsample_bilinear": (lambda nn: nn.Upsample(size=(5, 4), mode="bilinear"), rnd(1, 2, 3, 3)),
    "Upsample_bilinear_corners": (lambda nn: nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True),
                                  rnd(1, 2, 3, 3)),
}


@pytest.mark.parametrize("name", list(LAYERS))
def test_layer_matches_torch(name):
    make, x, *train = LAYERS[name]
    check_layer(make, x, train=bool(train and train[0]))


LOSSES = {
    "CrossEntropyLoss": (lambda nn: nn.CrossEntropyLoss(), rnd(4, 5), np.array([0, 4, 2, 1])),
    "CrossEntropyLoss_options": (lambda nn: nn.CrossEntropyLoss(weight=_weights(nn), ignore_index=1,
                                                                label_smoothing=0.2), rnd(4, 5), np.array([0, 4, 1, 3])),
    "NLLLoss": (lambda nn: nn.NLLLoss(reduction="sum"), rnd(4, 5), np.array([0, 4, 2, 1])),
    "MSELoss": (lambda nn: nn.MSELoss(), rnd(3, 4), rnd(3, 4, seed=3)),
    "L1Loss": (lambda nn: nn.L1Loss(reduction="none"), rnd(3, 4), rnd(3, 4, seed=3)),
    "SmoothL1Loss": (lambda nn: nn.SmoothL1Loss(beta=0.4), rnd(3, 4), rnd(3, 4, seed=3)),
    "HuberLoss": (lambda nn: nn.HuberLoss(delta=0.3), rnd(3, 4), rnd(3, 4, seed=3)),
    "BCEWithLogitsLoss": (lambda nn: nn.BCEWithLogitsLoss(), rnd(3, 4, scale=3),
                          np.random.RandomState(3).uniform(0, 1, (3, 4))),
    "KLDivLoss": (lambda nn: nn.KLDivLoss(reduction="batchmean", log_target=True), rnd(3, 4), rnd(3, 4, seed=3)),
}


def _weights(nn):
    lib = torch if nn.__name__.startswith("torch") else ember
    return lib.tensor(rnd(5, seed=4), dtype=lib.float64)


@pytest.mark.parametrize("name", list(LOSSES))
def test_loss_module_matches_torch(name):
    make, x, target = LOSSES[name]
    check_layer(make, x, target=target)


def test_bce_loss_module():
    def run(lib):
        x = lib.tensor(rnd(3, 4), dtype=lib.float64, requires_grad=True)
        t = lib.tensor(np.random.RandomState(3).uniform(0, 1, (3, 4)), dtype=lib.float64)
        loss = lib.nn.BCELoss(weight=lib.tensor(rnd(4, seed=2) + 2, dtype=lib.float64))(lib.sigmoid(x), t)
        loss.backward()
        return loss, x.grad
    e = run(ember)
    golden.same(e[0], lambda: run(torch)[0], atol=1e-10)
    golden.same(e[1], lambda: run(torch)[1], atol=1e-10)


# ---- a CNN defined in Python, as a PyTorch user writes it ---------------------------------------------------------
def make_cnn_class(nn, F):
    class SmallCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
            self.bn1 = nn.BatchNorm2d(4)
            self.conv2 = nn.Conv2d(4, 6, 3)
            self.pool = nn.MaxPool2d(2)
            self.drop = nn.Dropout(0.25)
            self.head = nn.Sequential(nn.Flatten(), nn.Linear(6 * 2 * 2, 16), nn.ReLU(inplace=True))
            self.fc = nn.Linear(16, 5)

        def forward(self, x):
            x = self.pool(F.relu(self.bn1(self.conv1(x))))
            x = self.drop(F.relu(self.conv2(x)))
            return F.log_softmax(self.fc(self.head(x)), dim=1)

    return SmallCNN


CNN_X = rnd(4, 1, 8, 8, seed=3)
CNN_Y = np.array([1, 0, 4, 2])


def cnn_step(lib, train_bn: bool):
    """The CNN given numpy weights, one forward (batch norm in training or eval mode, dropout in eval)
    and backward of nll_loss: the loss, the log-probabilities, every parameter's gradient and the
    buffers after the step."""
    model = make_cnn_class(lib.nn, lib.nn.functional)()
    arrays = numpy_state(make_cnn_class(nn, F)().state_dict(), seed=20)
    load_numpy(lib, model, {k: v.astype(np.float32) if v.dtype.kind == "f" else v for k, v in arrays.items()},
               lib.float32)
    model.train(train_bn)
    model.drop.eval()
    x = lib.tensor(CNN_X, dtype=lib.float32)
    out = model(x)
    loss = lib.nn.functional.nll_loss(out, lib.tensor(CNN_Y))
    loss.backward()
    return [loss.detach(), out.detach()] + [p.grad for _, p in model.named_parameters()] + \
        [b for _, b in model.named_buffers()]


@pytest.mark.parametrize("train_bn", [True, False])
def test_python_cnn_matches_torch_forward_and_every_gradient(train_bn):
    mine = cnn_step(ember, train_bn)
    cache = {}

    def theirs(i):
        if "r" not in cache:
            cache["r"] = cnn_step(torch, train_bn)
        return cache["r"][i]

    for i, e in enumerate(mine):
        golden.same(e, lambda i=i: theirs(i), atol=2e-6, rtol=2e-5)


def test_state_dict_keys_and_order_are_torchs():
    e = make_cnn_class(nn, F)()
    ref = golden.reference(lambda: list(make_cnn_class(torch.nn, torch.nn.functional)().state_dict().keys()))
    assert list(e.state_dict().keys()) == ref["value"]
    ref = golden.reference(lambda: [n for n, _ in make_cnn_class(torch.nn, torch.nn.functional)().named_parameters()])
    assert [n for n, _ in e.named_parameters()] == ref["value"]
    ref = golden.reference(lambda: [n for n, _ in make_cnn_class(torch.nn, torch.nn.functional)().named_modules()])
    assert [n for n, _ in e.named_modules()] == ref["value"]
    ref = golden.reference(lambda: [n for n, _ in make_cnn_class(torch.nn, torch.nn.functional)().named_buffers()])
    assert [n for n, _ in e.named_buffers()] == ref["value"]
    sd = e.state_dict()
    assert isinstance(sd, OrderedDict) and sd._metadata["bn1"] == {"version": 2}
    assert sd["bn1.num_batches_tracked"].dtype == ember.int64 and sd["bn1.num_batches_tracked"].dim() == 0
    assert not sd["conv1.weight"].requires_grad and e.state_dict(keep_vars=True)["conv1.weight"] is e.conv1.weight


def test_repr_is_torchs():
    def model(nn):
        return nn.Sequential(
            nn.Conv2d(3, 16, kernel_size=3, stride=2, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(inplace=True),
            nn.Conv2d(16, 8, 3, padding="same", groups=2, padding_mode="reflect"), nn.LeakyReLU(0.1), nn.ReLU6(),
            nn.MaxPool2d(2), nn.AvgPool2d(2, 1), nn.AdaptiveAvgPool2d((1, 1)), nn.Dropout(0.2), nn.Dropout2d(),
            nn.Flatten(), nn.Linear(8, 4), nn.GELU(), nn.SiLU(), nn.ELU(), nn.Hardswish(), nn.Hardsigmoid(),
            nn.Sigmoid(), nn.Tanh(), nn.Softmax(dim=1), nn.LogSoftmax(dim=1), nn.Identity(), nn.LayerNorm(4),
            nn.GroupNorm(2, 4), nn.Embedding(10, 4, padding_idx=0), nn.ConvTranspose2d(4, 2, 3, stride=2),
            nn.BatchNorm1d(4, momentum=None), nn.Upsample(scale_factor=2, mode="bilinear"), nn.Softplus(),
            nn.Unflatten(1, (2, 2)), nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2), nn.ReLU()]),
            nn.ModuleDict({"a": nn.Conv1d(2, 3, 5), "b": nn.MaxPool1d(3)}), nn.CrossEntropyLoss(), nn.MSELoss(),
            nn.AvgPool1d(3))
    ref = golden.reference(lambda: repr(model(torch.nn)))
    assert repr(model(nn)) == ref["value"]


def test_parameter():
    t = ember.ones(2, 3)
    p = nn.Parameter(t)
    assert isinstance(p, ember.Tensor) and isinstance(p, nn.Parameter) and p.requires_grad and p.is_leaf
    assert repr(p).startswith("Parameter containing:\ntensor([[1., 1., 1.],") and str(p) == repr(p)
    t.add_(1)  # shares the storage
    assert p.tolist() == [[2.0] * 3] * 2
    assert not nn.Parameter(t, requires_grad=False).requires_grad
    assert nn.Parameter().shape == (0,)
    assert type(p * 2) is ember.Tensor and type(p.detach()) is ember.Tensor
    with pytest.raises(TypeError):
        nn.Parameter([1.0, 2.0])


def test_registration_and_attribute_routing():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(ember.zeros(2))
            self.lin = nn.Linear(2, 2)
            self.register_buffer("step", ember.zeros(()))
            self.register_buffer("scratch", ember.zeros(3), persistent=False)
            self.cache = nn.Buffer(ember.ones(1))
            self.hidden = nn.Buffer(ember.ones(1), persistent=False)
            self.plain = 3

    m = M()
    assert list(m._parameters) == ["w"] and list(m._modules) == ["lin"]
    assert list(m.state_dict()) == ["w", "step", "cache", "lin.weight", "lin.bias"]
    assert [n for n, _ in m.named_buffers()] == ["step", "scratch", "cache", "hidden"]
    assert m.w is m.w and m.plain == 3 and "w" not in m.__dict__
    m.step = ember.ones(())  # assigning a tensor to a buffer's name replaces the buffer
    assert m.state_dict()["step"].item() == 1.0
    with pytest.raises(TypeError, match="cannot assign 'int' as parameter 'w'"):
        m.w = 5
    with pytest.raises(TypeError, match="child module 'lin'"):
        m.lin = 5
    m.w = None
    assert "w" not in dict(m.named_parameters())
    with pytest.raises(KeyError, match="attribute 'plain' already exists"):
        m.register_buffer("plain", ember.zeros(1))
    with pytest.raises(KeyError, match='contain "."'):
        m.register_parameter("a.b", None)
    with pytest.raises(TypeError, match="is not a Module subclass"):
        m.add_module("x", 3)
    with pytest.raises(AttributeError, match="'M' object has no attribute 'nope'"):
        m.nope
    del m.lin
    assert "lin" not in m._modules and not hasattr(m, "lin")
    with pytest.raises(AttributeError, match="cannot assign parameters before Module.__init__"):
        class Early(nn.Module):
            def __init__(self):
                self.w = nn.Parameter(ember.zeros(1))
        Early()
    assert "step" in dir(m)
    shared = nn.Linear(2, 2)
    tied = nn.Sequential(shared, shared)
    assert len(list(tied.parameters())) == 2 and len(list(tied.named_parameters(remove_duplicate=False))) == 4
    assert [n for n, _ in tied.named_modules()] == ["", "0"]
    assert [n for n, _ in tied.named_parameters(prefix="model", recurse=True)] == ["model.0.weight", "model.0.bias"]
    assert list(tied.named_parameters(recurse=False)) == []


def test_load_state_dict_strict_and_not():
    m = make_cnn_class(nn, F)()
    sd = m.state_dict()
    assert repr(m.load_state_dict(sd)) == "<All keys matched successfully>"
    bad = OrderedDict(sd)
    del bad["fc.bias"]
    bad["fc.extra"] = ember.zeros(1)
    with pytest.raises(RuntimeError) as e:
        m.load_state_dict(bad)
    assert str(e.value).startswith("Error(s) in loading state_dict for SmallCNN:\n\tMissing key(s) in state_dict: "
                                   '"fc.bias". \n\tUnexpected key(s) in state_dict: "fc.extra". ')
    r = m.load_state_dict(bad, strict=False)
    assert r.missing_keys == ["fc.bias"] and r.unexpected_keys == ["fc.extra"]
    wrong = OrderedDict(sd)
    wrong["fc.weight"] = ember.zeros(3, 3)
    with pytest.raises(RuntimeError, match=r"size mismatch for fc.weight: copying a param with shape "
                                           r"ember.Size\(\[3, 3\]\) from checkpoint, the shape in current model is "
                                           r"ember.Size\(\[5, 16\]\)"):
        m.load_state_dict(wrong, strict=False)
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like"):
        m.load_state_dict([1, 2])
    # values are copied into the same Parameter objects
    w = m.fc.weight
    new = OrderedDict(sd)
    new["fc.weight"] = ember.full((5, 16), 0.5)
    m.load_state_dict(new)
    assert m.fc.weight is w and w.tolist()[0][0] == 0.5


def test_torch_state_dict_loads_into_ember_module():
    """A state dict PyTorch made (converted tensor by tensor) loads into the same class in ember."""
    if torch is None:
        pytest.skip("needs torch")
    t = make_cnn_class(torch.nn, torch.nn.functional)()
    e = make_cnn_class(nn, F)()
    e.load_state_dict({k: ember.tensor(v.numpy()) for k, v in t.state_dict().items()})
    for (kt, vt), (ke, ve) in zip(t.state_dict().items(), e.state_dict().items()):
        assert kt == ke and np.array_equal(vt.numpy(), ve.numpy())


def test_hooks():
    lin = nn.Linear(2, 2)
    calls = []
    h1 = lin.register_forward_pre_hook(lambda mod, args: (args[0] * 0,))
    h2 = lin.register_forward_hook(lambda mod, args, out: calls.append(out.shape) or out + 1)
    y = lin(ember.ones(1, 2))
    assert calls == [(1, 2)]
    np.testing.assert_allclose(y.detach().numpy(), (lin.bias.detach() + 1).numpy()[None], rtol=1e-6)
    h1.remove()
    h2.remove()
    y = lin(ember.ones(1, 2))
    assert len(calls) == 1
    h3 = lin.register_forward_pre_hook(lambda mod, args, kwargs: ((args[0] * 2,), kwargs), with_kwargs=True)
    with lin.register_forward_hook(lambda mod, args, kwargs, out: out * 0, with_kwargs=True):
        assert lin(ember.ones(1, 2)).abs().sum().item() == 0
    h3.remove()
    np.testing.assert_allclose(lin(ember.ones(1, 2)).detach().numpy(), y.detach().numpy())


def test_train_eval_requires_grad_zero_grad_apply():
    m = make_cnn_class(nn, F)()
    assert m.training and all(c.training for c in m.modules())
    assert m.eval() is m and not any(c.training for c in m.modules())
    m.train()
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        m.train("yes")
    out = m(ember.randn(2, 1, 8, 8))
    out.sum().backward()
    assert all(p.grad is not None for p in m.parameters())
    m.zero_grad(set_to_none=False)
    assert all(p.grad.abs().sum().item() == 0 for p in m.parameters())
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())
    seen = []
    m.apply(lambda mod: seen.append(type(mod).__name__))
    assert seen[-1] == "SmallCNN" and seen[0] == "Conv2d"
    m.apply(lambda mod: nn.init.zeros_(mod.weight) if isinstance(mod, nn.Linear) else None)
    assert m.fc.weight.abs().sum().item() == 0


def test_to_keeps_the_parameter_objects():
    m = make_cnn_class(nn, F)()
    params = list(m.parameters())
    m(ember.randn(2, 1, 8, 8)).sum().backward()
    assert m.double() is m
    assert [id(p) for p in m.parameters()] == [id(p) for p in params]
    assert all(p.dtype == ember.float64 and p.grad.dtype == ember.float64 for p in m.parameters())
    assert m.bn1.running_mean.dtype == ember.float64 and m.bn1.num_batches_tracked.dtype == ember.int64
    m.to(ember.float32)
    assert m.fc.weight.dtype == ember.float32 and m.fc.weight is params[-2]
    m.to("cpu", dtype=ember.float16)
    assert m.fc.weight.dtype == ember.float16
    m.float()
    assert m.to(ember.zeros(1, dtype=ember.float64)).fc.weight.dtype == ember.float64
    with pytest.raises(TypeError, match="floating point"):
        m.to(ember.int64)
    m.cpu()
    if not ember.cuda.is_available():
        with pytest.raises(RuntimeError, match="cuda"):
            m.cuda()
        with pytest.raises(RuntimeError, match="cuda"):
            m.to("cuda:0")


def test_containers():
    s = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert len(s) == 3 and isinstance(s[0], nn.Linear) and isinstance(s[-1], nn.Linear)
    assert isinstance(s[1:], nn.Sequential) and len(s[1:]) == 2 and list(s[1:]._modules) == ["1", "2"]  # PyTorch keeps the names
    s.append(nn.Sigmoid())
    assert list(s._modules) == ["0", "1", "2", "3"] and s(ember.ones(4, 2)).shape == (4, 1)
    del s[1]
    assert list(s._modules) == ["0", "1", "2"] and isinstance(s[1], nn.Linear)
    with pytest.raises(IndexError, match="index 5 is out of range"):
        s[5]
    named = nn.Sequential(OrderedDict([("fc", nn.Linear(2, 2)), ("act", nn.Tanh())]))
    assert list(named.state_dict()) == ["fc.weight", "fc.bias"] and isinstance(named.act, nn.Tanh)
    ml = nn.ModuleList([nn.Linear(2, 2) for _ in range(2)])
    ml.append(nn.ReLU())
    ml += [nn.Tanh()]
    assert len(ml) == 4 and isinstance(ml[-1], nn.Tanh) and len(list(ml.parameters())) == 4
    assert isinstance(ml[:2], nn.ModuleList)
    md = nn.ModuleDict({"a": nn.Linear(2, 2)})
    md["b"] = nn.ReLU()
    assert list(md.keys()) == ["a", "b"] and "a" in md and len(md) == 2
    assert list(md.state_dict()) == ["a.weight", "a.bias"]
    pl = nn.ParameterList([nn.Parameter(ember.ones(2)), ember.zeros(3)])
    assert isinstance(pl[1], nn.Parameter) and list(pl.state_dict()) == ["0", "1"] and len(pl) == 2
    pd = nn.ParameterDict({"scale": nn.Parameter(ember.ones(1))})
    assert list(pd.state_dict()) == ["scale"]


def test_layer_constructor_errors_and_defaults():
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="padding='same' is not supported for strided convolutions"):
        nn.Conv2d(3, 4, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv2d(3, 4, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match='Only "zeros" padding mode is supported for ConvTranspose2d'):
        nn.ConvTranspose2d(3, 4, 3, padding_mode="reflect")
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        nn.Dropout(1.5)
    with pytest.raises(ValueError, match="num_channels must be divisible by num_groups"):
        nn.GroupNorm(3, 4)
    with pytest.raises(ValueError, match=r"expected 4D input \(got 3D input\)"):
        nn.BatchNorm2d(3)(ember.randn(2, 3, 4))
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        nn.BatchNorm1d(3)(ember.randn(2, 3, 4, 4))
    with pytest.raises(RuntimeError, match="linear|shape"):
        nn.Linear(4, 2)(ember.randn(3, 5))
    with pytest.raises(RuntimeError, match="conv2d"):
        nn.Conv2d(3, 4, 3)(ember.randn(1, 2, 5, 5))
    c = nn.Conv2d(3, 4, 3, padding="same")
    assert c.padding == "same" and c.kernel_size == (3, 3) and c.stride == (1, 1) and c._reversed_padding_repeated_twice == [1, 1, 1, 1]
    assert nn.Conv2d(3, 4, (3, 5), padding=(1, 2))._reversed_padding_repeated_twice == (2, 2, 1, 1)
    bn = nn.BatchNorm2d(4)
    assert bn.weight.tolist() == [1.0] * 4 and bn.bias.tolist() == [0.0] * 4 and bn.running_var.tolist() == [1.0] * 4
    e = nn.Embedding(5, 3, padding_idx=-1)
    assert e.padding_idx == 4 and e.weight[4].tolist() == [0.0] * 3
    with pytest.raises(NotImplementedError, match="torch.nn.LSTM is not implemented in ember"):
        nn.LSTM
    with pytest.raises(NotImplementedError, match="return_indices"):
        nn.MaxPool2d(2, return_indices=True)(ember.randn(1, 1, 4, 4))
    with pytest.raises(NotImplementedError, match='missing the required "forward"'):
        nn.Module()(ember.ones(1))


def test_batch_norm_cumulative_average_momentum_none():
    def run(lib):
        bn = lib.nn.BatchNorm1d(3, momentum=None)
        for s in range(3):
            bn(lib.tensor(rnd(6, 3, seed=s), dtype=lib.float32))
        return bn.running_mean, bn.running_var, bn.num_batches_tracked
    mine = run(ember)
    for i in range(3):
        golden.same(mine[i], lambda i=i: run(torch)[i], atol=1e-6)


def test_conv_transpose_output_size():
    ct = nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1)
    x = ember.randn(1, 2, 4, 4)
    assert ct(x).shape == (1, 3, 7, 7) and ct(x, output_size=[8, 8]).shape == (1, 3, 8, 8)
    with pytest.raises(ValueError, match="requested an output size of"):
        ct(x, output_size=[10, 10])


# ---- init ---------------------------------------------------------------------------------------------------------------
def moments(t):
    a = t.detach().double().numpy()
    return a.mean(), a.std(), np.abs(a).max()


def test_init_moments_match_the_theory():
    ember.manual_seed(1)
    fan_in, fan_out = 300, 200
    w = ember.empty(fan_out, fan_in)
    bound = 1 / math.sqrt(fan_in)  # a = sqrt(5): gain sqrt(1/3) * sqrt(3 / fan_in)
    assert nn.init.kaiming_uniform_(w, a=math.sqrt(5)) is w
    mean, std, mx = moments(w)
    assert abs(mean) < 3e-3 and std == pytest.approx(bound / math.sqrt(3), rel=0.02) and mx <= bound
    nn.init.kaiming_uniform_(w, mode="fan_out", nonlinearity="relu")
    assert moments(w)[1] == pytest.approx(math.sqrt(2) * math.sqrt(3 / fan_out) / math.sqrt(3), rel=0.02)
    nn.init.kaiming_normal_(w, nonlinearity="relu")
    assert moments(w)[1] == pytest.approx(math.sqrt(2 / fan_in), rel=0.02)
    nn.init.xavier_uniform_(w, gain=2.0)
    b = 2.0 * math.sqrt(6 / (fan_in + fan_out))
    assert moments(w)[1] == pytest.approx(b / math.sqrt(3), rel=0.02) and moments(w)[2] <= b
    nn.init.xavier_normal_(w)
    assert moments(w)[1] == pytest.approx(math.sqrt(2 / (fan_in + fan_out)), rel=0.02)
    nn.init.trunc_normal_(w, mean=1.0, std=0.5, a=0.0, b=2.0)
    a = w.numpy()
    assert a.min() >= 0.0 and a.max() <= 2.0 and a.std() == pytest.approx(0.5 * 0.8796, rel=0.02)
    nn.init.normal_(w, 3.0, 0.1)
    assert moments(w)[0] == pytest.approx(3.0, abs=2e-3) and moments(w)[1] == pytest.approx(0.1, rel=0.02)
    nn.init.uniform_(w, -2, 4)
    assert moments(w)[0] == pytest.approx(1.0, abs=0.02) and w.numpy().min() >= -2 and w.numpy().max() <= 4
    assert nn.init.constant_(w, 0.3).numpy().max() == pytest.approx(0.3)
    assert nn.init.ones_(w).numpy().min() == 1 and nn.init.zeros_(w).numpy().max() == 0
    assert np.array_equal(nn.init.eye_(ember.empty(3, 4)).numpy(), np.eye(3, 4))
    q = nn.init.orthogonal_(ember.empty(20, 30)).double().numpy()
    np.testing.assert_allclose(q @ q.T, np.eye(20), atol=1e-5)


def test_layers_start_where_torch_layers_start():
    ember.manual_seed(2)
    lin = nn.Linear(400, 300)
    bound = 1 / math.sqrt(400)
    mean, std, mx = moments(lin.weight)
    assert mx <= bound and std == pytest.approx(bound / math.sqrt(3), rel=0.02)
    assert moments(lin.bias)[2] <= bound and moments(lin.bias)[1] == pytest.approx(bound / math.sqrt(3), rel=0.15)
    conv = nn.Conv2d(16, 32, 3)
    bound = 1 / math.sqrt(16 * 9)
    assert moments(conv.weight)[2] <= bound and moments(conv.bias)[2] <= bound
    assert moments(conv.weight)[1] == pytest.approx(bound / math.sqrt(3), rel=0.05)
    emb = nn.Embedding(1000, 50)
    assert moments(emb.weight)[1] == pytest.approx(1.0, rel=0.02)
    assert not any(p.grad_fn is not None for p in lin.parameters())


def test_calculate_gain_is_torchs():
    for name, param in [("linear", None), ("conv2d", None), ("sigmoid", None), ("tanh", None), ("relu", None),
                        ("leaky_relu", None), ("leaky_relu", 0.2), ("selu", None)]:
        ref = golden.reference(lambda: torch.nn.init.calculate_gain(name, param))
        assert nn.init.calculate_gain(name, param) == pytest.approx(ref["value"], rel=1e-12)
    with pytest.raises(ValueError):
        nn.init.calculate_gain("sawtooth")


# ---- utils -------------------------------------------------------------------------------------------------------------
def clip_run(lib, norm_type, max_norm):
    ps = [lib.tensor(rnd(3, 4, seed=s), dtype=lib.float32, requires_grad=True) for s in range(3)]
    for i, p in enumerate(ps[:2]):  # the third has no gradient: skipped
        (p * lib.tensor(rnd(3, 4, seed=10 + i, scale=3), dtype=lib.float32)).sum().backward()
    total = lib.nn.utils.clip_grad_norm_(ps, max_norm, norm_type=norm_type)
    return [total, ps[0].grad, ps[1].grad]


@pytest.mark.parametrize("norm_type", [2.0, 1.0, "inf"])
def test_clip_grad_norm_is_torchs(norm_type):
    nt = float(norm_type)
    mine = clip_run(ember, nt, 1.5)
    for i, e in enumerate(mine):
        golden.same(e, lambda i=i: clip_run(torch, nt, 1.5)[i], atol=1e-6)


def test_clip_grad_value_and_vectors():
    p = nn.Parameter(ember.zeros(4))
    p.grad = ember.tensor([-3.0, 0.5, 2.0, -0.1])
    assert nn.utils.clip_grad_value_(p, 1.0) is None
    assert p.grad.tolist() == pytest.approx([-1.0, 0.5, 1.0, -0.1])
    lin = nn.Linear(3, 2)
    v = nn.utils.parameters_to_vector(lin.parameters())
    assert v.shape == (8,)
    nn.utils.vector_to_parameters(ember.arange(8.0), lin.parameters())
    assert lin.weight.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]] and lin.bias.tolist() == [6.0, 7.0]
    with pytest.raises(ValueError):
        nn.utils.clip_grad_norm_([p], -1.0)


def test_import_forms():
    import importlib
    assert importlib.import_module("ember.nn") is nn and ember.nn is nn
    from ember import nn as nn2
    from ember.nn import functional as F2
    assert nn2 is nn and F2 is F and nn.functional is F
    from ember.nn.init import kaiming_uniform_  # noqa: F401
    from ember.nn.utils import clip_grad_norm_  # noqa: F401


def test_zz_write_goldens():
    """Writes PyTorch's side of every comparison above (run last, with EMBER_WRITE_TORCH_GOLDENS=1)."""
    golden.write()
