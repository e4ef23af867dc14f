"""ember.optim.lr_scheduler against torch.optim.lr_scheduler (issue 46): every scheduler's lr sequence
(and the cycled momentum of OneCycleLR / CyclicLR) over 30 steps equals PyTorch's, on an optimizer
with two groups; the closed forms of step(epoch); SequentialLR, ChainedScheduler and
ReduceLROnPlateau on a given metric series; a user's change to the lr carried on by a chainable
schedule; state_dict() keys and a resume; PyTorch's argument errors. The same code runs on both
libraries; PyTorch's side comes from torch, or from tests/python/golden/torch_lr_scheduler.json."""

import re
import warnings

import numpy as np
import pytest

import ember
from torch_golden import Golden, torch

golden = Golden("torch_lr_scheduler.json")


@pytest.fixture(autouse=True)
def _case_keys(request):
    golden.start(request.node.nodeid)


def optimizer(lib, name="SGD", **kwargs):
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    b = lib.tensor([3.0], requires_grad=True)
    cls = getattr(lib.optim, name)
    if name == "SGD":
        kwargs.setdefault("momentum", 0.9)
        return cls([{"params": [a]}, {"params": [b], "lr": 0.01}], lr=0.1, **kwargs)
    return cls([{"params": [a]}, {"params": [b], "lr": 0.01}], lr=0.1, **kwargs)


def momenta(opt):
    return [g["betas"][0] if "betas" in g else g.get("momentum") for g in opt.param_groups]


def sequence(lib, make, steps=30, opt_name="SGD", metrics=None):
    """[lrs, momenta] after construction and after each of `steps` (optimizer.step(), scheduler.step())."""
    opt = optimizer(lib, opt_name)
    sched = make(lib.optim.lr_scheduler, opt)
    out = [[list(sched.get_last_lr()), momenta(opt)]]
    for k in range(steps):
        opt.step()
        if metrics is None:
            sched.step()
        else:
            sched.step(metrics[k])
        out.append([list(sched.get_last_lr()), momenta(opt)])
        assert [g["lr"] for g in opt.param_groups] == out[-1][0]
    return out


def same_sequence(got, ref):
    """The lrs and the momenta of every step, to double rounding."""
    for i in (0, 1):
        np.testing.assert_allclose(np.asarray([r[i] for r in got], dtype=np.float64),
                                   np.asarray([r[i] for r in ref], dtype=np.float64), rtol=1e-12, atol=0)


SCHEDULES = {
    "step": lambda m, o: m.StepLR(o, step_size=7, gamma=0.5),
    "multistep": lambda m, o: m.MultiStepLR(o, milestones=[3, 8, 8, 20], gamma=0.3),
    "exponential": lambda m, o: m.ExponentialLR(o, gamma=0.9),
    "cosine": lambda m, o: m.CosineAnnealingLR(o, T_max=10, eta_min=0.001),
    "cosine_no_min": lambda m, o: m.CosineAnnealingLR(o, T_max=30),
    "lambda": lambda m, o: m.LambdaLR(o, lr_lambda=lambda e: 0.95 ** e),
    "lambda_per_group": lambda m, o: m.LambdaLR(o, lr_lambda=[lambda e: 1.0 / (e + 1), lambda e: 0.5 + 0.1 * e]),
    "multiplicative": lambda m, o: m.MultiplicativeLR(o, lr_lambda=lambda e: 0.97),
    "linear": lambda m, o: m.LinearLR(o, start_factor=0.25, total_iters=8),
    "linear_down": lambda m, o: m.LinearLR(o, start_factor=1.0, end_factor=0.1, total_iters=20),
    "constant": lambda m, o: m.ConstantLR(o, factor=0.5, total_iters=4),
    "polynomial": lambda m, o: m.PolynomialLR(o, total_iters=20, power=2.0),
    "warm_restarts": lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=5, T_mult=2, eta_min=1e-4),
    "warm_restarts_mult1": lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=7),
    "one_cycle": lambda m, o: m.OneCycleLR(o, max_lr=[1.0, 0.1], total_steps=31),
    "one_cycle_three_phase_linear": lambda m, o: m.OneCycleLR(o, max_lr=0.5, epochs=4, steps_per_epoch=8,
                                                              anneal_strategy="linear", three_phase=True),
    "one_cycle_no_momentum": lambda m, o: m.OneCycleLR(o, max_lr=0.3, total_steps=30, pct_start=0.25,
                                                       cycle_momentum=False, div_factor=10.0),
    "cyclic_triangular2": lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4, mode="triangular2"),
    "cyclic_exp_range": lambda m, o: m.CyclicLR(o, base_lr=[0.01, 0.001], max_lr=[0.1, 0.05], step_size_up=3,
                                                step_size_down=5, mode="exp_range", gamma=0.95),
    "sequential": lambda m, o: m.SequentialLR(o, [m.LinearLR(o, start_factor=0.1, total_iters=5),
                                                  m.ExponentialLR(o, gamma=0.9)], milestones=[5]),
    "sequential_three": lambda m, o: m.SequentialLR(o, [m.ConstantLR(o, factor=0.2, total_iters=3),
                                                        m.CosineAnnealingLR(o, T_max=10),
                                                        m.StepLR(o, step_size=3, gamma=0.5)], milestones=[4, 14]),
    "chained": lambda m, o: m.ChainedScheduler([m.ConstantLR(o, factor=0.5, total_iters=3),
                                                m.ExponentialLR(o, gamma=0.9)]),
}


@pytest.mark.parametrize("case", sorted(SCHEDULES))
def test_lr_sequence_matches_torch(case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = golden.reference(lambda: sequence(torch, SCHEDULES[case]))["value"]
        got = sequence(ember, SCHEDULES[case])
    same_sequence(got, ref)


@pytest.mark.parametrize("case", ["one_cycle", "one_cycle_three_phase_linear"])
def test_one_cycle_cycles_adams_beta1(case):
    ref = golden.reference(lambda: sequence(torch, SCHEDULES[case], opt_name="Adam"))["value"]
    got = sequence(ember, SCHEDULES[case], opt_name="Adam")
    same_sequence(got, ref)
    opt = optimizer(ember, "Adam")
    ember.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=10)
    assert opt.param_groups[0]["betas"] == (0.95, 0.999)  # max_momentum first, beta2 kept


PLATEAU = {
    "min_rel": (dict(patience=2, factor=0.5, cooldown=1, min_lr=[0.001, 0.0001]),
                [1.0, 0.9, 0.95, 0.95, 0.96, 0.97, 0.85, 0.86, 0.87, 0.88, 0.89, 0.9, 0.7, 0.7, 0.7, 0.7,
                 0.7, 0.7, 0.7, 0.7, 0.69999, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7]),
    "max_abs": (dict(mode="max", threshold_mode="abs", threshold=0.01, patience=1, factor=0.3),
                [0.1, 0.2, 0.205, 0.21, 0.3, 0.3, 0.3, 0.31, 0.311, 0.5] * 3),
    "eps_stops_tiny_changes": (dict(patience=0, factor=0.5, eps=1e-3), [1.0] * 30),
}


@pytest.mark.parametrize("case", sorted(PLATEAU))
def test_reduce_lr_on_plateau_follows_the_metric_as_pytorch(case):
    kwargs, metrics = PLATEAU[case]
    make = lambda m, o: m.ReduceLROnPlateau(o, **kwargs)  # noqa: E731
    ref = golden.reference(lambda: sequence(torch, make, metrics=metrics))["value"]
    got = sequence(ember, make, metrics=metrics)
    np.testing.assert_allclose(np.asarray([r[0] for r in got]), np.asarray([r[0] for r in ref]), rtol=1e-12, atol=0)


def test_plateau_takes_a_zero_dim_tensor_metric():
    opt = optimizer(ember)
    sched = ember.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0)
    sched.step(ember.tensor(1.0))
    sched.step(ember.tensor(2.0))
    assert sched.get_last_lr() == pytest.approx([0.01, 0.001])


CLOSED = {
    "step": lambda m, o: m.StepLR(o, step_size=4, gamma=0.5),
    "multistep": lambda m, o: m.MultiStepLR(o, milestones=[2, 5, 5], gamma=0.5),
    "exponential": lambda m, o: m.ExponentialLR(o, gamma=0.8),
    "cosine": lambda m, o: m.CosineAnnealingLR(o, T_max=8, eta_min=0.002),
    "linear": lambda m, o: m.LinearLR(o, start_factor=0.2, total_iters=6),
    "constant": lambda m, o: m.ConstantLR(o, factor=0.3, total_iters=5),
    "polynomial": lambda m, o: m.PolynomialLR(o, total_iters=9, power=1.5),
    "warm_restarts": lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2),
}


@pytest.mark.parametrize("case", sorted(CLOSED))
def test_step_with_an_epoch_uses_the_closed_form(case):
    def jumps(lib):
        opt = optimizer(lib)
        sched = CLOSED[case](lib.optim.lr_scheduler, opt)
        out = []
        for epoch in (3, 7, 2, 12, 5.5 if case == "warm_restarts" else 5, 20):
            opt.step()
            sched.step(epoch)
            out.append(list(sched.get_last_lr()))
        return out

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = golden.reference(lambda: jumps(torch))["value"]
        got = jumps(ember)
    np.testing.assert_allclose(np.asarray(got), np.asarray(ref), rtol=1e-12, atol=1e-15)


def test_step_with_an_epoch_warns_as_pytorch():
    opt = optimizer(ember)
    sched = ember.optim.lr_scheduler.StepLR(opt, step_size=2)
    opt.step()
    with pytest.warns(UserWarning, match="The epoch parameter in `scheduler.step\\(\\)` was not necessary"):
        sched.step(4)
    assert sched.get_last_lr() == pytest.approx([0.1 * 0.01, 0.01 * 0.01])


def test_a_users_lr_change_carries_on_in_a_chainable_schedule():
    def change(lib):
        opt = optimizer(lib)
        sched = lib.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)
        out = []
        for k in range(12):
            opt.step()
            sched.step()
            if k == 5:
                opt.param_groups[0]["lr"] = 0.05
            out.append([g["lr"] for g in opt.param_groups])
        return out

    ref = golden.reference(lambda: change(torch))["value"]
    np.testing.assert_allclose(np.asarray(change(ember)), np.asarray(ref), rtol=1e-12)


def test_two_schedulers_on_one_optimizer_chain_as_in_pytorch():
    def both(lib):
        opt = optimizer(lib)
        m = lib.optim.lr_scheduler
        s1, s2 = m.StepLR(opt, step_size=3, gamma=0.5), m.ExponentialLR(opt, gamma=0.9)
        out = []
        for _ in range(10):
            opt.step()
            s1.step()
            s2.step()
            out.append([g["lr"] for g in opt.param_groups])
        return out

    ref = golden.reference(lambda: both(torch))["value"]
    np.testing.assert_allclose(np.asarray(both(ember)), np.asarray(ref), rtol=1e-12)


def test_initial_lr_is_recorded_in_the_groups_and_base_lrs():
    opt = optimizer(ember)
    sched = ember.optim.lr_scheduler.StepLR(opt, step_size=2)
    assert [g["initial_lr"] for g in opt.param_groups] == [0.1, 0.01] == sched.base_lrs
    assert sched.last_epoch == 0 and sched.get_last_lr() == [0.1, 0.01]
    with pytest.raises(KeyError, match="param 'initial_lr' is not specified in param_groups\\[0\\]"):
        ember.optim.lr_scheduler.StepLR(optimizer(ember), step_size=2, last_epoch=3)


@pytest.mark.parametrize("case", ["step", "cosine", "one_cycle", "sequential", "lambda"])
def test_state_dict_keys_are_pytorchs_and_a_resume_continues(case):
    def keys(lib):
        opt = optimizer(lib)
        sched = SCHEDULES[case](lib.optim.lr_scheduler, opt)
        opt.step()
        sched.step()
        return sorted(sched.state_dict().keys())

    ref = golden.reference(lambda: keys(torch))["value"]
    assert keys(ember) == ref
    # Resume: a new optimizer and scheduler given both state dicts go on as the first would.
    opt = optimizer(ember)
    sched = SCHEDULES[case](ember.optim.lr_scheduler, opt)
    for _ in range(6):
        opt.step()
        sched.step()
    opt_sd, sched_sd = opt.state_dict(), sched.state_dict()
    opt2 = optimizer(ember)
    sched2 = SCHEDULES[case](ember.optim.lr_scheduler, opt2)
    opt2.load_state_dict(opt_sd)
    sched2.load_state_dict(sched_sd)
    for _ in range(5):
        for o, s in ((opt, sched), (opt2, sched2)):
            o.step()
            s.step()
        assert sched2.get_last_lr() == sched.get_last_lr()


def test_scheduler_called_before_the_optimizer_warns_as_pytorch():
    opt = optimizer(ember)
    sched = ember.optim.lr_scheduler.StepLR(opt, step_size=2)
    with pytest.warns(UserWarning, match="Detected call of `lr_scheduler.step\\(\\)` before `optimizer.step\\(\\)`"):
        sched.step()


BAD = [
    (lambda m, o: m.LinearLR(o, start_factor=0), ValueError,
     "Starting multiplicative factor expected to be greater than 0 and less or equal to 1."),
    (lambda m, o: m.LinearLR(o, end_factor=1.5), ValueError, "Ending multiplicative factor expected to be between 0 and 1."),
    (lambda m, o: m.ConstantLR(o, factor=2.0), ValueError, "Constant multiplicative factor expected to be between 0 and 1."),
    (lambda m, o: m.ReduceLROnPlateau(o, factor=1.0), ValueError, "Factor should be < 1.0."),
    (lambda m, o: m.ReduceLROnPlateau(o, mode="avg"), ValueError, "mode avg is unknown!"),
    (lambda m, o: m.ReduceLROnPlateau(o, threshold_mode="pct"), ValueError, "threshold mode pct is unknown!"),
    (lambda m, o: m.ReduceLROnPlateau(o, min_lr=[0.1]), ValueError, "expected 2 min_lrs, got 1"),
    (lambda m, o: m.OneCycleLR(o, max_lr=0.1), ValueError,
     "You must define either total_steps OR (epochs AND steps_per_epoch)"),
    (lambda m, o: m.OneCycleLR(o, max_lr=0.1, total_steps=0), ValueError, "Expected positive integer total_steps, but got 0"),
    (lambda m, o: m.OneCycleLR(o, max_lr=0.1, total_steps=10, pct_start=1.5), ValueError,
     "Expected float between 0 and 1 pct_start, but got 1.5"),
    (lambda m, o: m.OneCycleLR(o, max_lr=0.1, total_steps=10, anneal_strategy="cosine"), ValueError,
     "anneal_strategy must be one of 'cos' or 'linear', instead got cosine"),
    (lambda m, o: m.OneCycleLR(o, max_lr=[0.1], total_steps=10), ValueError,
     "max_lr must have the same length as optimizer.param_groups. max_lr has 1 values, param_groups has 2."),
    (lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=0), ValueError, "Expected positive integer T_0, but got 0"),
    (lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=0), ValueError, "Expected integer T_mult >= 1, but got 0"),
    (lambda m, o: m.LambdaLR(o, lr_lambda=[lambda e: 1.0]), ValueError, "Expected 2 lr_lambdas, but got 1"),
    (lambda m, o: m.SequentialLR(o, [m.StepLR(o, 2)], milestones=[3]), ValueError,
     "Sequential Schedulers expects number of schedulers provided to be one more than the number of milestone "
     "points, but got number of schedulers 1 and the number of milestones to be equal to 1"),
    (lambda m, o: m.StepLR(object(), 2), TypeError, "object is not an Optimizer"),
]


@pytest.mark.parametrize("i", range(len(BAD)))
def test_bad_arguments_raise_pytorchs_errors(i):
    make, error, message = BAD[i]
    with pytest.raises(error, match="^" + re.escape(message) + "$"):
        make(ember.optim.lr_scheduler, optimizer(ember))
    if torch is not None:
        with pytest.raises(error, match="^" + re.escape(message) + "$"):
            make(torch.optim.lr_scheduler, optimizer(torch))


def test_stepping_one_cycle_past_its_total_raises_pytorchs_error():
    opt = optimizer(ember)
    sched = ember.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=3)
    for _ in range(3):
        opt.step()
        sched.step()
    with pytest.raises(ValueError, match="^Tried to step 4 times. The specified number of total steps is 3$"):
        sched.step()


def test_import_paths_pytorch_programs_use():
    from ember.optim.lr_scheduler import LRScheduler, OneCycleLR, StepLR  # noqa: F401
    from ember import optim
    assert optim.lr_scheduler.StepLR is StepLR and issubclass(OneCycleLR, LRScheduler)


def test_zz_write_goldens():
    """Writes PyTorch's side of every comparison above (run last, with EMBER_WRITE_TORCH_GOLDENS=1)."""
    golden.write()
