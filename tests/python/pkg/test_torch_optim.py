"""ember.optim against torch.optim (issue 46): each optimizer and option, run for a few steps on fixed
tensors with fixed gradients, leaves the parameters and every state buffer equal to PyTorch's (float32
tolerance); state_dict()'s format is PyTorch's and a state dict goes torch -> ember -> torch; a
user's change to param_groups takes effect at the next step; PyTorch's argument errors and
zero_grad's two modes. The same code runs on both libraries (`lib` is ember or torch); PyTorch's
side comes from torch, or from tests/python/golden/torch_optim.json without it (torch_golden.py)."""

import math
import re

import numpy as np
import pytest

import ember
from torch_golden import Golden, torch

golden = Golden("torch_optim.json")


@pytest.fixture(autouse=True)
def _case_keys(request):
    golden.start(request.node.nodeid)


P0 = [[0.5, -1.25, 2.0], [1.5, 0.25, -0.75]]
P1 = [0.3, -0.6, 0.9]


def grads_at(step, shape_values):
    """A fixed gradient for step `step`: sines of the element index, growing with the step."""
    flat = np.asarray(shape_values, dtype=np.float64).ravel()
    g = [math.sin(0.7 * i + 1.3 * step + 0.2) * (1.0 + 0.25 * step) for i in range(flat.size)]
    return np.asarray(g).reshape(np.asarray(shape_values).shape).tolist()


def leaves(lib, dtype_name="float32"):
    dtype = getattr(lib, dtype_name)
    return [lib.tensor(P0, dtype=dtype, requires_grad=True), lib.tensor(P1, dtype=dtype, requires_grad=True)]


def values(t):
    v = t.detach().numpy()
    return v.tolist() if v.ndim else float(v)


def run(lib, cls_name, kwargs, groups=None, steps=5, dtype_name="float32"):
    """Builds the optimizer on two fixed parameters (one group, or the groups given as
    [(param index, options)]), steps it with fixed gradients, and returns the parameters and every
    state entry as plain lists."""
    params = leaves(lib, dtype_name)
    target = params if groups is None else [dict(params=[params[i]], **opts) for i, opts in groups]
    opt = getattr(lib.optim, cls_name)(target, **kwargs)
    dtype = getattr(lib, dtype_name)
    for k in range(steps):
        for i, (p, init) in enumerate(zip(params, (P0, P1))):
            p.grad = lib.tensor(grads_at(k + 3 * i, init), dtype=dtype)
        opt.step()
    state = [{key: values(v) for key, v in sorted(opt.state[p].items())} for p in params]
    return {"params": [values(p) for p in params], "state": state}


def same_run(got, ref, rtol=1e-5, atol=1e-6):
    for g, r in zip(got["params"], ref["params"]):
        np.testing.assert_allclose(np.asarray(g), np.asarray(r), rtol=rtol, atol=atol)
    assert len(got["state"]) == len(ref["state"])
    for gs, rs in zip(got["state"], ref["state"]):
        assert sorted(gs) == sorted(rs), (sorted(gs), sorted(rs))
        for key in gs:
            np.testing.assert_allclose(np.asarray(gs[key]), np.asarray(rs[key]), rtol=rtol, atol=atol, err_msg=key)


CASES = {
    "sgd": ("SGD", dict(lr=0.1)),
    "sgd_momentum": ("SGD", dict(lr=0.1, momentum=0.9)),
    "sgd_dampening_wd": ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.5, weight_decay=0.01)),
    "sgd_nesterov_wd": ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.1)),
    "sgd_maximize": ("SGD", dict(lr=0.1, momentum=0.5, maximize=True)),
    "adam": ("Adam", dict(lr=0.01)),
    "adam_wd_amsgrad": ("Adam", dict(lr=0.01, betas=(0.8, 0.99), weight_decay=0.1, amsgrad=True)),
    "adam_maximize": ("Adam", dict(lr=0.02, maximize=True, eps=1e-6)),
    "adamw": ("AdamW", dict(lr=0.01)),
    "adamw_amsgrad_maximize": ("AdamW", dict(lr=0.01, weight_decay=0.05, amsgrad=True, maximize=True)),
    "adagrad": ("Adagrad", dict(lr=0.1)),
    "adagrad_options": ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.05, initial_accumulator_value=0.1,
                                        eps=1e-8)),
    "adagrad_maximize": ("Adagrad", dict(lr=0.05, maximize=True)),
    "adadelta": ("Adadelta", dict()),
    "adadelta_options": ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-5, weight_decay=0.1, maximize=True)),
    "rmsprop": ("RMSprop", dict(lr=0.01)),
    "rmsprop_centered_momentum": ("RMSprop", dict(lr=0.01, alpha=0.9, momentum=0.9, centered=True, weight_decay=0.01)),
    "rmsprop_momentum_maximize": ("RMSprop", dict(lr=0.01, momentum=0.5, maximize=True)),
    "rmsprop_centered": ("RMSprop", dict(lr=0.01, centered=True, eps=1e-6)),
    # foreach / fused / differentiable / capturable: accepted, kept in the groups, no effect on the numbers.
    "sgd_fused_flag": ("SGD", dict(lr=0.1, momentum=0.9, foreach=False)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_optimizer_matches_torch(case):
    cls_name, kwargs = CASES[case]
    ref = golden.reference(lambda: run(torch, cls_name, kwargs))["value"]
    same_run(run(ember, cls_name, kwargs), ref)


GROUP_CASES = {
    "sgd": ("SGD", dict(lr=0.1, momentum=0.5), [(0, dict(lr=0.05, momentum=0.9)), (1, dict(nesterov=False))]),
    "adam": ("Adam", dict(lr=0.01), [(0, dict(lr=0.02, betas=(0.85, 0.95))), (1, dict(amsgrad=True))]),
    "adamw": ("AdamW", dict(lr=0.01), [(0, dict(weight_decay=0.2)), (1, dict(lr=0.001))]),
    "adagrad": ("Adagrad", dict(lr=0.1), [(0, dict(lr_decay=0.1)), (1, dict(lr=0.01, weight_decay=0.1))]),
    "adadelta": ("Adadelta", dict(), [(0, dict(rho=0.5)), (1, dict(lr=0.1))]),
    "rmsprop": ("RMSprop", dict(lr=0.01), [(0, dict(momentum=0.9)), (1, dict(centered=True, alpha=0.8))]),
}


@pytest.mark.parametrize("case", sorted(GROUP_CASES))
def test_two_param_groups_with_their_own_settings_match_torch(case):
    cls_name, kwargs, groups = GROUP_CASES[case]
    ref = golden.reference(lambda: run(torch, cls_name, kwargs, groups=groups))["value"]
    same_run(run(ember, cls_name, kwargs, groups=groups), ref)


@pytest.mark.parametrize("cls_name,kwargs", [("SGD", dict(lr=0.1, momentum=0.9, nesterov=True)),
                                             ("Adam", dict(lr=0.01, amsgrad=True)),
                                             ("RMSprop", dict(centered=True, momentum=0.5))])
def test_float64_parameters_match_torch(cls_name, kwargs):
    ref = golden.reference(lambda: run(torch, cls_name, kwargs, dtype_name="float64"))["value"]
    same_run(run(ember, cls_name, kwargs, dtype_name="float64"), ref, rtol=1e-12, atol=1e-12)


def test_state_step_is_a_float32_scalar_tensor_as_pytorchs():
    p = ember.tensor([1.0, 2.0], requires_grad=True)
    opt = ember.optim.Adam([p])
    p.grad = ember.tensor([0.5, -0.5])
    opt.step()
    opt.step()
    step = opt.state[p]["step"]
    assert isinstance(step, ember.Tensor) and step.dim() == 0 and step.dtype == ember.float32
    assert step.item() == 2.0


def test_parameters_without_a_gradient_are_skipped_and_get_no_state():
    a, b = leaves(ember)
    opt = ember.optim.SGD([a, b], lr=0.1, momentum=0.9)
    a.grad = ember.ones_like(a)
    opt.step()
    assert b.tolist() == pytest.approx(P1)
    assert "momentum_buffer" in opt.state[a] and b not in opt.state


def test_a_generator_and_a_list_of_dicts_are_accepted():
    a, b = leaves(ember)
    opt = ember.optim.SGD((p for p in [a, b]), lr=0.1)
    assert len(opt.param_groups) == 1 and len(opt.param_groups[0]["params"]) == 2
    opt = ember.optim.Adam([{"params": iter([a])}, {"params": b, "lr": 0.5}], lr=0.01)
    assert [g["lr"] for g in opt.param_groups] == [0.01, 0.5]
    assert opt.param_groups[1]["params"][0] is b


def test_param_groups_hold_every_hyper_parameter_in_pytorchs_order():
    def keys(lib):
        out = {}
        for name in ("SGD", "Adam", "AdamW", "Adagrad", "Adadelta", "RMSprop"):
            opt = getattr(lib.optim, name)(leaves(lib), lr=0.1)
            out[name] = [list(opt.param_groups[0].keys()),
                         [[k, list(v) if isinstance(v, tuple) else v] for k, v in opt.defaults.items()]]
        return out

    ref = golden.reference(lambda: keys(torch))["value"]
    assert keys(ember) == ref


def test_users_change_to_the_lr_takes_effect_at_the_next_step():
    def lr_change(lib):
        params = leaves(lib)
        opt = lib.optim.SGD(params, lr=0.1, momentum=0.9)
        out = []
        for k in range(4):
            if k == 2:
                opt.param_groups[0]["lr"] = 0.5
                opt.param_groups[0]["momentum"] = 0.1
            for i, (p, init) in enumerate(zip(params, (P0, P1))):
                p.grad = lib.tensor(grads_at(k + 3 * i, init))
            opt.step()
            out.append(values(params[1]))
        return out

    ref = golden.reference(lambda: lr_change(torch))["value"]
    np.testing.assert_allclose(np.asarray(lr_change(ember)), np.asarray(ref), rtol=1e-5, atol=1e-6)
    # And the arithmetic itself: plain SGD moves by exactly lr * grad.
    p = ember.tensor([1.0, 2.0], requires_grad=True)
    opt = ember.optim.SGD([p], lr=0.1)
    opt.param_groups[0]["lr"] = 0.5
    p.grad = ember.tensor([1.0, -2.0])
    opt.step()
    assert p.tolist() == [0.5, 3.0]


def structure(lib, cls_name, kwargs):
    """A state dict's shape: the state's keys per index, and every group entry but the tensors."""
    params = leaves(lib)
    opt = getattr(lib.optim, cls_name)([{"params": [params[0]]}, {"params": [params[1]], "lr": 0.5}], **kwargs)
    for k in range(2):
        params[0].grad = lib.tensor(grads_at(k, P0))
        opt.step()
    sd = opt.state_dict()
    return {"keys": sorted(sd.keys()),
            "state": [[k, sorted(v.keys()), [type(x).__name__ == "Tensor" for _, x in sorted(v.items())]]
                      for k, v in sd["state"].items()],
            "param_groups": [[[k, list(v) if isinstance(v, tuple) else v] for k, v in g.items()]
                             for g in sd["param_groups"]]}


@pytest.mark.parametrize("cls_name,kwargs", [("SGD", dict(lr=0.1, momentum=0.9)), ("Adam", dict(amsgrad=True)),
                                             ("AdamW", {}), ("Adagrad", {}), ("Adadelta", {}),
                                             ("RMSprop", dict(momentum=0.9, centered=True))])
def test_state_dict_format_is_pytorchs(cls_name, kwargs):
    ref = golden.reference(lambda: structure(torch, cls_name, kwargs))["value"]
    got = structure(ember, cls_name, kwargs)
    assert got["keys"] == ref["keys"] == ["param_groups", "state"]
    assert [s[0] for s in got["state"]] == [s[0] for s in ref["state"]]  # integer indices, in PyTorch's order
    assert [s[1:] for s in got["state"]] == [s[1:] for s in ref["state"]]
    assert got["param_groups"] == ref["param_groups"]


def to_torch(obj):
    if isinstance(obj, ember.Tensor):
        return torch.from_numpy(obj.detach().numpy().copy())
    if isinstance(obj, dict):
        return {k: to_torch(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [to_torch(v) for v in obj]
    return obj


@pytest.mark.skipif(torch is None, reason="the round trip needs torch itself")
@pytest.mark.parametrize("cls_name,kwargs", [("SGD", dict(lr=0.1, momentum=0.9)), ("Adam", dict(lr=0.01, amsgrad=True)),
                                             ("Adagrad", dict(lr=0.1)), ("RMSprop", dict(momentum=0.5, centered=True))])
def test_state_dict_goes_torch_to_ember_to_torch(cls_name, kwargs):
    def stepped(lib, opt, params, first, count):
        for k in range(first, first + count):
            for i, (p, init) in enumerate(zip(params, (P0, P1))):
                p.grad = lib.tensor(grads_at(k + 3 * i, init))
            opt.step()

    tp = leaves(torch)
    topt = getattr(torch.optim, cls_name)(tp, **kwargs)
    stepped(torch, topt, tp, 0, 3)
    ep = [ember.tensor(t.detach().numpy(), requires_grad=True) for t in tp]
    eopt = getattr(ember.optim, cls_name)(ep, **kwargs)
    eopt.load_state_dict(topt.state_dict())  # torch's tensors, taken through DLPack
    assert all(isinstance(v, ember.Tensor) for s in eopt.state.values() for v in s.values())
    stepped(torch, topt, tp, 3, 2)
    stepped(ember, eopt, ep, 3, 2)
    for t, e in zip(tp, ep):
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-6)
    # Back: ember's state dict loads into torch.optim and holds the same state.
    topt2 = getattr(torch.optim, cls_name)([torch.tensor(e.detach().numpy(), requires_grad=True) for e in ep], **kwargs)
    topt2.load_state_dict(to_torch(eopt.state_dict()))
    for p_ref, p_new in zip(topt.param_groups[0]["params"], topt2.param_groups[0]["params"]):
        a, b = topt.state[p_ref], topt2.state[p_new]
        assert sorted(a) == sorted(b)
        for key in a:
            np.testing.assert_allclose(b[key].numpy(), a[key].numpy(), rtol=1e-5, atol=1e-6)


def test_state_dict_round_trip_in_ember_continues_the_same_run():
    def make():
        params = leaves(ember)
        return params, ember.optim.Adam(params, lr=0.01, amsgrad=True)

    pa, a = make()
    for k in range(3):
        for i, (p, init) in enumerate(zip(pa, (P0, P1))):
            p.grad = ember.tensor(grads_at(k + 3 * i, init))
        a.step()
    pb, b = make()
    for p, q in zip(pb, pa):
        with ember.no_grad():
            p.copy_(q)
    # Loading shares the saved tensors where dtype and device agree, as PyTorch's does: clone them.
    sd = a.state_dict()
    b.load_state_dict({"state": {k: {n: t.clone() for n, t in v.items()} for k, v in sd["state"].items()},
                       "param_groups": sd["param_groups"]})
    assert b.param_groups[0]["params"][0] is pb[0]
    for k in range(3, 5):
        for opt, params in ((a, pa), (b, pb)):
            for i, (p, init) in enumerate(zip(params, (P0, P1))):
                p.grad = ember.tensor(grads_at(k + 3 * i, init))
            opt.step()
    for p, q in zip(pa, pb):
        assert p.tolist() == q.tolist()


def test_load_state_dict_refuses_another_layout_with_pytorchs_words():
    a, b = leaves(ember)
    sd = ember.optim.SGD([a, b], lr=0.1).state_dict()
    with pytest.raises(ValueError, match="loaded state dict has a different number of parameter groups"):
        ember.optim.SGD([{"params": [a]}, {"params": [b]}], lr=0.1).load_state_dict(sd)
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        ember.optim.SGD([a], lr=0.1).load_state_dict(sd)


BAD = [
    ("SGD", dict(lr=-1), "Invalid learning rate: -1"),
    ("SGD", dict(lr=0.1, momentum=-0.5), "Invalid momentum value: -0.5"),
    ("SGD", dict(lr=0.1, weight_decay=-1e-3), "Invalid weight_decay value: -0.001"),
    ("SGD", dict(lr=0.1, nesterov=True), "Nesterov momentum requires a momentum and zero dampening"),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.1, nesterov=True), "Nesterov momentum requires a momentum and zero dampening"),
    ("Adam", dict(lr=-0.01), "Invalid learning rate: -0.01"),
    ("Adam", dict(eps=-1.0), "Invalid epsilon value: -1.0"),
    ("Adam", dict(betas=(1.0, 0.999)), "Invalid beta parameter at index 0: 1.0"),
    ("AdamW", dict(betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
    ("AdamW", dict(weight_decay=-0.1), "Invalid weight_decay value: -0.1"),
    ("Adagrad", dict(lr_decay=-1), "Invalid lr_decay value: -1"),
    ("Adagrad", dict(initial_accumulator_value=-0.5), "Invalid initial_accumulator_value value: -0.5"),
    ("Adagrad", dict(eps=-1e-10), "Invalid epsilon value: -1e-10"),
    ("Adadelta", dict(rho=1.5), "Invalid rho value: 1.5"),
    ("Adadelta", dict(lr=-1.0), "Invalid learning rate: -1.0"),
    ("RMSprop", dict(alpha=-0.9), "Invalid alpha value: -0.9"),
    ("RMSprop", dict(momentum=-1), "Invalid momentum value: -1"),
]


@pytest.mark.parametrize("cls_name,kwargs,message", BAD, ids=[f"{c}-{m}" for c, _, m in BAD])
def test_bad_arguments_raise_pytorchs_value_error(cls_name, kwargs, message):
    with pytest.raises(ValueError, match="^" + re.escape(message) + "$"):
        getattr(ember.optim, cls_name)(leaves(ember), **kwargs)
    if torch is not None:  # the words are PyTorch's own
        with pytest.raises(ValueError, match="^" + re.escape(message) + "$"):
            getattr(torch.optim, cls_name)(leaves(torch), **kwargs)


def test_parameter_lists_are_checked_as_pytorch_does():
    a, b = leaves(ember)
    with pytest.raises(ValueError, match="^optimizer got an empty parameter list$"):
        ember.optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="should be an iterable of Tensors or dicts, but got ember.Tensor"):
        ember.optim.SGD(a, lr=0.1)
    with pytest.raises(ValueError, match="^some parameters appear in more than one parameter group$"):
        ember.optim.SGD([{"params": [a, b]}, {"params": [b]}], lr=0.1)
    opt = ember.optim.SGD([a], lr=0.1)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        opt.add_param_group({"params": a})
    with pytest.raises(ValueError, match="^can't optimize a non-leaf Tensor$"):
        ember.optim.SGD([a * 2], lr=0.1)
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors, but one of the params is"):
        ember.optim.SGD([[1.0, 2.0]], lr=0.1)
    with pytest.raises(TypeError, match="param_group must be a dict"):
        opt.add_param_group([b])
    opt.add_param_group({"params": [b], "momentum": 0.9})
    assert opt.param_groups[1]["lr"] == 0.1 and opt.param_groups[1]["momentum"] == 0.9


def test_zero_grad_sets_to_none_by_default_or_zeroes_in_place():
    a, b = leaves(ember)
    opt = ember.optim.SGD([a, b], lr=0.1)
    a.grad = ember.ones_like(a)
    opt.zero_grad()
    assert a.grad is None and b.grad is None
    (a.sum() * 3.0).backward()
    opt.zero_grad(set_to_none=False)
    assert a.grad is not None and a.grad.tolist() == [[0.0] * 3] * 2
    assert b.grad is None
    (a * 2.0).sum().backward()
    assert a.grad.tolist() == [[2.0] * 3] * 2  # backward accumulates into the zeroed gradient


def test_step_with_a_closure_runs_it_with_gradients_on_and_returns_its_loss():
    a = ember.tensor([1.0, -2.0], requires_grad=True)
    opt = ember.optim.SGD([a], lr=0.1)

    def closure():
        opt.zero_grad()
        assert ember.is_grad_enabled()
        loss = (a * a).sum()
        loss.backward()
        return loss

    with ember.no_grad():
        loss = opt.step(closure)
    assert loss.item() == 5.0
    np.testing.assert_allclose(a.detach().numpy(), [0.8, -1.6], rtol=1e-6)
    assert not a.grad.requires_grad


def test_step_hooks_run_around_each_step_until_removed():
    a = ember.tensor([1.0], requires_grad=True)
    opt = ember.optim.Adam([a])
    seen = []
    pre = opt.register_step_pre_hook(lambda o, args, kwargs: seen.append(("pre", o is opt)))
    opt.register_step_post_hook(lambda o, args, kwargs: seen.append(("post", o is opt)))
    opt.step()
    pre.remove()
    opt.step()
    assert seen == [("pre", True), ("post", True), ("post", True)]


def test_optimizer_repr_lists_each_group_as_pytorch():
    text = repr(ember.optim.SGD(leaves(ember), lr=0.1))
    assert text.startswith("SGD (\nParameter Group 0\n    dampening: 0\n") and text.endswith(")")


def test_zz_write_goldens():
    """Writes PyTorch's side of every comparison above (run last, with EMBER_WRITE_TORCH_GOLDENS=1)."""
    golden.write()
