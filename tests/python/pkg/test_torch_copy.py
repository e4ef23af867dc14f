"""copy.deepcopy and pickle of ember tensors and modules, as PyTorch's (a best-model copy in a
training loop, DataLoader worker processes): values, dtypes, requires_grad and .grad kept, the copy
independent of the original, a recorded (non-leaf) tensor refused with PyTorch's words."""

import copy
import pickle

import numpy as np
import pytest

import ember
import ember.nn as nn


def test_deepcopy_of_a_model_is_independent():
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU(), nn.Flatten(),
                          nn.LazyLinear(3) if hasattr(nn, "LazyLinear") else nn.Linear(8, 3))
    model(ember.randn(2, 1, 4, 4)).sum().backward()
    best = copy.deepcopy(model)
    for (k, a), (k2, b) in zip(model.state_dict().items(), best.state_dict().items()):
        assert k == k2 and a.dtype == b.dtype and ember.equal(a, b), k
    for a, b in zip(model.parameters(), best.parameters()):
        assert isinstance(b, nn.Parameter) and b.requires_grad
    with ember.no_grad():
        model[0].weight.fill_(0.0)
    assert not ember.equal(best[0].weight, model[0].weight)  # not the same memory


def test_deepcopy_keeps_grad_and_refuses_a_recorded_tensor():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    y = copy.deepcopy(x)
    assert y.requires_grad and y.is_leaf and ember.equal(y.grad, x.grad)
    with pytest.raises(RuntimeError, match="Only Tensors created explicitly by the user"):
        copy.deepcopy(x * 2)
    shared = ember.zeros(3)
    a, b = copy.deepcopy([shared, shared])
    assert a is b  # the memo: one copy of one tensor


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.bfloat16, ember.float16, ember.int64,
                                   ember.int32, ember.uint8, ember.bool])
def test_pickle_round_trips_every_dtype(dtype):
    t = (ember.arange(6).reshape(2, 3) % 4).to(dtype)
    back = pickle.loads(pickle.dumps(t))
    assert back.dtype == dtype and list(back.shape) == [2, 3]
    np.testing.assert_array_equal(back.float().numpy(), t.float().numpy())


def test_pickle_keeps_requires_grad_and_a_transposed_view():
    t = ember.randn(3, 4, requires_grad=True)
    back = pickle.loads(pickle.dumps(t))
    assert back.requires_grad and back.is_leaf and ember.equal(back, t)
    v = ember.arange(12.0).reshape(3, 4).t()
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(v)).numpy(), v.numpy())
    with pytest.raises(RuntimeError, match="pickle t.detach"):
        pickle.dumps(t * 2)


def test_a_missing_pytorch_name_is_not_implemented_and_not_an_attribute():
    assert not hasattr(nn, "LSTM")  # a feature probe takes its other branch
    with pytest.raises(NotImplementedError, match="torch.nn.LSTM is not implemented in ember"):
        nn.LSTM(3, 4)
    with pytest.raises(AttributeError, match="has no attribute 'NoSuchLayer'"):
        nn.NoSuchLayer
    assert isinstance(ember.NotInEmberError("x"), (NotImplementedError, AttributeError))


def test_softmax_as_a_method_and_a_function():
    x = ember.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]])
    s = x.softmax(dim=1)
    np.testing.assert_allclose(s.sum(1).numpy(), [1.0, 1.0], rtol=1e-6)
    assert ember.equal(ember.softmax(x, 1), s)
    assert ember.equal(x.log_softmax(1), ember.nn.functional.log_softmax(x, dim=1))
    assert x.softmax(1, dtype=ember.float64).dtype == ember.float64
