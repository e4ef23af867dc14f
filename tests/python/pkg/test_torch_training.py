"""A PyTorch training program on ember (issue 46): a CNN defined as a Python nn.Module, trained in a
hand-written loop, agrees with PyTorch's same class given the same state_dict and the same batches
after 20 SGD (momentum, Nesterov, weight decay) and 20 Adam steps; a 2,000-step loop keeps its
resident memory flat (no graph or tensor kept alive by Python references); `.cuda()` without a GPU
raises a RuntimeError that says why. PyTorch's final parameters come from torch, or from
tests/python/golden/torch_training.json without it (torch_golden.py)."""

import os
import resource

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember import optim
from torch_golden import Golden, torch

golden = Golden("torch_training.json")


@pytest.fixture(autouse=True)
def _case_keys(request):
    golden.start(request.node.nodeid)


def make_cnn(lib):
    """The same class in both frameworks: conv, batch norm, ReLU, max pool, dropout, linear."""
    lnn, lF = lib.nn, lib.nn.functional

    class SmallCnn(lnn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = lnn.Conv2d(1, 4, 3, padding=1)
            self.bn1 = lnn.BatchNorm2d(4)
            self.conv2 = lnn.Conv2d(4, 8, 3, stride=2, padding=1, bias=False)
            self.drop = lnn.Dropout(0.5)
            self.fc = lnn.Linear(8 * 4 * 4, 5)

        def forward(self, x):
            x = lF.max_pool2d(lF.relu(self.bn1(self.conv1(x))), 2)  # 8x8 -> 4x4
            x = lF.relu(self.conv2(x))                                # stride 2: 4x4 -> 2x2
            x = lF.interpolate(x, size=(4, 4), mode="nearest")       # 2x2 -> 4x4
            x = self.drop(lib.flatten(x, 1))
            return lF.log_softmax(self.fc(x), dim=1)

    return SmallCnn()


def fixed_state(model) -> dict:
    """Deterministic weights from NumPy for every entry of the model's state_dict."""
    rng = np.random.RandomState(0)
    state = {}
    for k, v in model.state_dict().items():
        shape = tuple(v.shape)
        if k.endswith("num_batches_tracked"):
            state[k] = np.array(0, np.int64)
        elif k.endswith("running_var"):
            state[k] = np.ones(shape, np.float32)
        elif k.endswith("running_mean"):
            state[k] = np.zeros(shape, np.float32)
        else:
            state[k] = (rng.standard_normal(shape) * 0.3).astype(np.float32)
    return state


BATCHES = [(np.random.RandomState(100 + i).standard_normal((6, 1, 8, 8)).astype(np.float32),
            np.random.RandomState(200 + i).randint(0, 5, size=6).astype(np.int64)) for i in range(20)]


def train(lib, opt_name):
    """20 steps in train mode (batch statistics, running averages updated). Dropout's masks come
    from each framework's own generator, so it is switched off through the module's attribute
    (p = 0), as a user would."""
    lib.manual_seed(0)
    model = make_cnn(lib)
    model.load_state_dict({k: lib.from_numpy(v.copy()) for k, v in fixed_state(model).items()})
    model.drop.p = 0.0
    if opt_name == "sgd":
        opt = lib.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-3)
    else:
        opt = lib.optim.Adam(model.parameters(), lr=1e-2, betas=(0.9, 0.99), weight_decay=1e-3)
    model.train()
    for x, y in BATCHES:
        opt.zero_grad()
        loss = lib.nn.functional.nll_loss(model(lib.from_numpy(x)), lib.from_numpy(y))
        loss.backward()
        opt.step()
    return model


@pytest.mark.parametrize("opt_name", ["sgd", "adam"])
def test_a_python_cnn_trains_as_pytorchs_same_class(opt_name):
    model = train(ember, opt_name)
    assert list(model.state_dict()) == list(fixed_state(model))
    for key, value in model.state_dict().items():  # running statistics and the step count included
        golden.same(value, lambda key=key: train_cached(opt_name)[key], atol=2e-4, rtol=2e-4)


_TORCH_RUNS = {}


def train_cached(opt_name):
    if opt_name not in _TORCH_RUNS:
        _TORCH_RUNS[opt_name] = {k: v.detach() for k, v in train(torch, opt_name).state_dict().items()}
    return _TORCH_RUNS[opt_name]


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


@pytest.mark.skipif("libasan" in os.environ.get("LD_PRELOAD", ""),
                    reason="AddressSanitizer's quarantine keeps freed memory resident by design "
                           "(scripts/test-python-asan.sh checks the same loop for leaks and bad accesses)")
def test_a_2000_step_loop_keeps_its_memory_flat():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Dropout(0.1), nn.Linear(128, 10))
    opt = optim.Adam(model.parameters(), lr=1e-3)
    x = ember.randn(32, 64)
    y = ember.randint(0, 10, (32,))
    losses = []
    before = 0.0
    for step in range(2000):
        opt.zero_grad()
        out = model(x)                 # kept by a Python name until the next step, as a loop keeps it
        loss = F.cross_entropy(out, y)
        loss.backward()
        opt.step()
        losses.append(loss.item())     # a float, not the tensor (the graph is not kept)
        if step == 199:
            before = rss_mib()
    grown = rss_mib() - before
    assert grown < 16, f"resident memory grew by {grown:.1f} MiB over 1,800 steps"
    assert losses[-1] < losses[0]


def test_cuda_without_a_gpu_says_why():
    if ember.cuda.is_available():
        pytest.skip("this machine has a usable GPU")
    model = nn.Linear(3, 2)
    with pytest.raises(RuntimeError) as e:
        model.cuda()
    assert ember.cuda.unavailable_reason() in str(e.value)
    with pytest.raises(RuntimeError):
        ember.zeros(2).cuda()
    assert model.weight.device == ember.device("cpu")  # nothing moved


def test_write_golden_file():
    golden.write()
