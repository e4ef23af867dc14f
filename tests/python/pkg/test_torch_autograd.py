"""ember.autograd with PyTorch's names (issue 46): backward and grad against PyTorch's gradients,
the grad modes as context managers and decorators, autograd.Function in Python, Variable,
gradcheck, and PyTorch's errors for a saved tensor modified in place and a freed graph. PyTorch's
gradients come from torch, or from tests/python/golden/torch_autograd.json without it
(torch_golden.py)."""

import threading

import numpy as np
import pytest

import ember
from ember.autograd import Function, Variable, gradcheck
from torch_golden import Golden, torch

golden = Golden("torch_autograd.json")


@pytest.fixture(autouse=True)
def _case_keys(request):
    golden.start(request.node.nodeid)


def close(e, thunk):
    golden.same(e, thunk, atol=1e-10, rtol=1e-7)


def ember_leaf(values):
    return ember.tensor(values, dtype=ember.float64, requires_grad=True)


def torch_leaf(values):
    return torch.tensor(values, dtype=torch.float64, requires_grad=True)


XV = [[0.5, -1.25, 2.0], [1.5, 0.25, -0.75]]
WV = [[0.1, 0.2], [-0.3, 0.4], [0.5, -0.6]]
MASK = [[True, False, True], [False, True, True]]
GRAPHS = {
    "square_sum": lambda lib, x, w, m: (x ** 2).sum(),
    "matmul": lambda lib, x, w, m: (x @ w).tanh().mean(),
    "sigmoid_mul": lambda lib, x, w, m: (x.sigmoid() * x.exp()).sum(),
    "broadcast": lambda lib, x, w, m: ((x + w[0, 0]) * 3.0 - 1.0 / (x.abs() + 1)).sum(),
    "reductions": lambda lib, x, w, m: x.max(1).values.sum() + x.std() + x.logsumexp(0).sum(),
    "indexing": lambda lib, x, w, m: (x[0, 1:] * 2).sum() + x[m].pow(3).sum(),
    "shapes": lambda lib, x, w, m: lib.cat([x, w.t()[:2]], 0).permute(1, 0).reshape(-1).cumsum(0).sum(),
    "where_clamp": lambda lib, x, w, m: (x.clamp(-0.4, 0.4) + x.where(m, x * 0)).sum(),  # no input at a kink
}


def run_graph(lib, graph):
    """The graph's loss and the gradients of x and w, with ember or torch."""
    leaf = ember_leaf if lib is ember else torch_leaf
    x, w = leaf(XV), leaf(WV)
    loss = GRAPHS[graph](lib, x, w, lib.tensor(MASK))
    loss.backward()
    return loss, x.grad, w.grad


@pytest.mark.parametrize("graph", list(GRAPHS))
def test_backward_matches_torch(graph):
    loss, gx, gw = run_graph(ember, graph)
    close(loss, lambda: run_graph(torch, graph)[0])
    close(gx, lambda: run_graph(torch, graph)[1])
    if graph in ("matmul", "shapes", "broadcast"):
        close(gw, lambda: run_graph(torch, graph)[2])


def test_gradients_accumulate_and_grad_leaves_them_alone():
    ex = ember_leaf([1.0, 2.0, 3.0])
    for _ in range(2):
        (ex * ex).sum().backward()

    def torch_twice():
        tx = torch_leaf([1.0, 2.0, 3.0])
        for _ in range(2):
            (tx * tx).sum().backward()
        return tx.grad
    close(ex.grad, torch_twice)  # added, not overwritten
    g, = ember.autograd.grad((ex ** 3).sum(), ex)

    def torch_cube_grad():
        t = torch_leaf([1.0, 2.0, 3.0])
        return torch.autograd.grad((t ** 3).sum(), t)[0]
    close(g, torch_cube_grad)
    close(ex.grad, torch_twice)  # grad() left .grad alone
    ex.grad = None
    assert ex.grad is None
    out = ex * 2
    out.backward(ember.tensor([1.0, 0.5, 0.0], dtype=ember.float64))
    assert ex.grad.tolist() == [2.0, 1.0, 0.0]
    ex.grad.zero_()
    ember.autograd.backward([(ex * 3).sum(), (ex * 1).sum()])
    assert ex.grad.tolist() == [4.0, 4.0, 4.0]


def test_grad_with_several_inputs_and_grad_outputs():
    ea, eb = ember_leaf([[1.0, 2.0], [3.0, 4.0]]), ember_leaf([[0.5], [-1.0]])
    seed_e = ember.tensor([[1.0], [2.0]], dtype=ember.float64)
    ga, gb = ember.autograd.grad(ea @ eb, (ea, eb), grad_outputs=seed_e)

    def torch_grads():
        ta, tb = torch_leaf([[1.0, 2.0], [3.0, 4.0]]), torch_leaf([[0.5], [-1.0]])
        return torch.autograd.grad(ta @ tb, (ta, tb), grad_outputs=torch.tensor([[1.0], [2.0]], dtype=torch.float64))
    close(ga, lambda: torch_grads()[0])
    close(gb, lambda: torch_grads()[1])
    assert ea.grad is None and eb.grad is None


def test_requires_grad_flags_and_detach():
    x = ember.ones(2)
    assert not x.requires_grad
    assert x.requires_grad_() is x and x.requires_grad and x.is_leaf
    y = x * 2
    assert y.requires_grad and not y.is_leaf and y.grad_fn is not None and x.grad_fn is None
    assert "Backward" in y.grad_fn.name()
    d = y.detach()
    assert not d.requires_grad and d.grad_fn is None and d.data_ptr() == y.data_ptr()
    assert not (ember.ones(2) * 3).requires_grad
    x.requires_grad = False
    assert not x.requires_grad
    z = ember.ones(2, requires_grad=True)
    z.data = ember.full((2,), 5.0)  # keeps z's identity, changes what it holds
    assert z.requires_grad and z.tolist() == [5.0, 5.0]


def test_no_grad_enable_grad_and_set_grad_enabled():
    x = ember.ones(2, requires_grad=True)
    with ember.no_grad():
        assert not ember.is_grad_enabled()
        assert not (x * 2).requires_grad
        with ember.enable_grad():
            assert (x * 2).requires_grad
        assert not (x * 2).requires_grad
    assert ember.is_grad_enabled() and (x * 2).requires_grad
    with ember.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert ember.is_grad_enabled()
    ember.set_grad_enabled(False)
    assert not ember.is_grad_enabled()
    ember.set_grad_enabled(True)
    with ember.inference_mode():
        assert not (x * 2).requires_grad and ember.is_inference_mode_enabled()
    assert not ember.is_inference_mode_enabled()
    with ember.inference_mode(False):
        assert (x * 2).requires_grad


def test_grad_modes_as_decorators():
    x = ember.ones(2, requires_grad=True)

    @ember.no_grad()
    def f():
        return x * 2

    @ember.no_grad
    def g():
        return x * 2

    @ember.enable_grad()
    def h():
        return x * 2

    @ember.inference_mode()
    def i():
        return x * 2

    @ember.set_grad_enabled(False)
    def j():
        return x * 2

    @ember.no_grad()
    def gen():
        yield x * 2
        yield x * 3

    assert ember.is_grad_enabled()  # decorating changes nothing until the call
    assert not f().requires_grad and not g().requires_grad and not i().requires_grad and not j().requires_grad
    assert all(not t.requires_grad for t in gen())
    with ember.no_grad():
        assert h().requires_grad
    assert f.__name__ == "f" and ember.is_grad_enabled()


class Exp(Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        y, = ctx.saved_tensors
        return grad * y


class ScaledMul(Function):
    """Non-tensor arguments, two tensor inputs, needs_input_grad."""

    @staticmethod
    def forward(ctx, a, b, scale):
        ctx.save_for_backward(a, b)
        ctx.scale = scale
        return a * b * scale

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        ctx.seen = ctx.needs_input_grad
        ga = grad * b * ctx.scale if ctx.needs_input_grad[0] else None
        gb = grad * a * ctx.scale if ctx.needs_input_grad[1] else None
        return ga, gb, None


class WrongGrad(Function):
    @staticmethod
    def forward(ctx, x):
        return x * x

    @staticmethod
    def backward(ctx, grad):
        return grad * 3.0


def test_python_function_matches_torch():
    ex = ember_leaf([0.5, -1.0, 2.0])
    y = Exp.apply(ex)
    assert y.requires_grad and "ExpBackward" in y.grad_fn.name()
    (y * ember.tensor([1.0, 2.0, 3.0], dtype=ember.float64)).sum().backward()

    def torch_grad():
        tx = torch_leaf([0.5, -1.0, 2.0])
        (tx.exp() * torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)).sum().backward()
        return tx.grad
    close(ex.grad, torch_grad)


def test_python_function_with_scalars_and_needs_input_grad():
    a = ember.tensor([1.0, 2.0], dtype=ember.float64, requires_grad=True)
    b = ember.tensor([3.0, 4.0], dtype=ember.float64)
    out = ScaledMul.apply(a, b, 2.0)
    assert out.tolist() == [6.0, 16.0]
    out.sum().backward()
    assert a.grad.tolist() == [6.0, 8.0] and b.grad is None
    assert not ScaledMul.apply(b, b, 1.0).requires_grad  # no input needs grad: nothing recorded
    with ember.no_grad():
        assert not ScaledMul.apply(a, b, 1.0).requires_grad


class MaxWithIndex(Function):
    """Two outputs, one marked non-differentiable: backward gets None for it."""

    @staticmethod
    def forward(ctx, x):
        values, indices = x.max(0)
        ctx.save_for_backward(indices)
        ctx.mark_non_differentiable(indices)
        ctx.shape = x.shape
        return values, indices

    @staticmethod
    def backward(ctx, grad_values, grad_indices):
        assert grad_indices is None
        indices, = ctx.saved_tensors
        g = ember.zeros(*ctx.shape, dtype=grad_values.dtype)
        return g.scatter(0, indices.unsqueeze(0), grad_values.unsqueeze(0))


def test_python_function_with_a_non_differentiable_output():
    x = ember.tensor([[1.0, 5.0], [3.0, 2.0]], dtype=ember.float64, requires_grad=True)
    values, indices = MaxWithIndex.apply(x)
    assert values.requires_grad and not indices.requires_grad and indices.tolist() == [1, 0]
    values.sum().backward()
    assert x.grad.tolist() == [[0.0, 1.0], [1.0, 0.0]]


def test_gradcheck_passes_and_fails():
    x = ember.tensor([[0.3, -0.7], [1.1, 0.2]], dtype=ember.float64, requires_grad=True)
    w = ember.tensor([[0.5], [-1.5]], dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda a, b: (a @ b).sigmoid(), (x, w))
    assert gradcheck(Exp.apply, (x,))
    assert gradcheck(lambda a: a[a > 0].pow(2).sum() + a.max(1).values.sum(), (x,))
    assert not gradcheck(WrongGrad.apply, (x,), raise_exception=False)
    with pytest.raises(ember.autograd.GradcheckError, match="Jacobian mismatch"):
        gradcheck(WrongGrad.apply, (x,))
    assert issubclass(ember.autograd.GradcheckError, RuntimeError)


def test_variable_returns_the_tensor():
    t = ember.ones(2)
    v = Variable(t, requires_grad=True)
    assert v is t and v.requires_grad
    assert Variable(ember.zeros(1)).requires_grad is False
    with pytest.raises(TypeError):
        Variable([1.0])


def test_saved_tensor_modified_in_place_raises():
    x = ember.ones(3, requires_grad=True)
    a = ember.full((3,), 2.0)
    y = x * a  # saves a
    a.add_(1)
    with pytest.raises(RuntimeError, match="modified by an in-place operation") as info:
        y.sum().backward()
    assert isinstance(info.value, ember.AutogradError)
    z = Exp.apply(ember.ones(2, requires_grad=True))
    with ember.no_grad():
        z.mul_(2)  # the Function saved its output
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        z.sum().backward()


def test_backward_through_a_freed_graph_raises():
    x = ember.ones(3, requires_grad=True)
    y = (x.exp() * x).sum()
    y.backward(retain_graph=True)
    y.backward()  # retained once: a second pass works
    assert x.grad.tolist() == pytest.approx([2 * 2 * np.e] * 3)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()
    z = Exp.apply(ember.ones(2, requires_grad=True)).sum()
    z.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        z.backward()


def test_autograd_errors_are_runtime_errors():
    with pytest.raises(RuntimeError, match="does not require grad"):
        ember.ones(2).sum().backward()
    with pytest.raises(RuntimeError, match="scalar outputs"):
        (ember.ones(2, requires_grad=True) * 2).backward()
    x = ember.ones(2, requires_grad=True)
    for change in (lambda: x.add_(1), lambda: x.mul_(2), lambda: x.zero_(), lambda: x.copy_(ember.zeros(2)),
                   lambda: x.clamp_(0, 1), lambda: x.fill_(3)):
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad .* in-place") as info:
            change()
        assert "ember.no_grad()" in str(info.value) and "NoGradGuard" not in str(info.value)
    y = x * 2
    y += 1  # a non-leaf: recorded, as PyTorch (test_torch_top_level.py checks the gradients)
    assert y.grad_fn is not None and y.tolist() == [3.0, 3.0]
    with pytest.raises(RuntimeError, match="in-place"):
        x[0] = 3.0
    with ember.no_grad():
        x.add_(1)
        x[0] = 5.0
    assert x.tolist() == [5.0, 2.0]
    with pytest.raises(NotImplementedError, match="create_graph"):
        (x * x).sum().backward(create_graph=True)


def test_backward_releases_the_gil_and_python_functions_take_it_back():
    """Threads that run backward (through a Python Function too) at once all finish."""
    errors = []

    def work():
        try:
            for _ in range(30):
                x = ember.randn(64, 64, requires_grad=True)
                (Exp.apply(x @ x) * 1e-3).sum().backward()
                assert x.grad.shape == (64, 64)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors and not any(t.is_alive() for t in threads)


def test_zz_write_goldens():
    """Writes PyTorch's side of every comparison above (run last, with EMBER_WRITE_TORCH_GOLDENS=1)."""
    golden.write()
