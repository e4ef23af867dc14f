"""ember.fit(model=net): a module defined in Python trained by `ember train`'s run (the plan's
PlanInputs::model seam): in place, with the run directory, metrics, report and checkpoints of any
run; resumed with the same class; the same weights as the same network written as a spec file; a
forward that raises stops the run with a checkpoint; what cannot rebuild it says what can."""

import json
import struct
import subprocess
import sys

import numpy as np
import pytest

import ember
from conftest import final_weights

# Two epochs of the tiny data (192 training images in batches of 32: 6 steps each), one thread, SGD.
SETTINGS = dict(epochs=2, batch_size=32, threads=1, workers=0, seed=7, precision="fp32", val_split=0.25, lr=0.05,
                optimizer="sgd", verbose=0)


class TinyMLP:
    """PyTorch's nn.Module as a duck type, with ember.Tensor ops only: 784 -> hidden -> ReLU -> classes,
    its parameters named as the spec file below names its layers (Sequential's "1", "3")."""

    def __init__(self, hidden=32, inputs=784, classes=10, seed=0):
        ember.manual_seed(seed)
        self.w1 = (ember.randn(hidden, inputs) * 0.05).detach().requires_grad_()
        self.b1 = ember.zeros(hidden, requires_grad=True)
        self.w2 = (ember.randn(classes, hidden) * 0.1).detach().requires_grad_()
        self.b2 = ember.zeros(classes, requires_grad=True)
        self.training = True
        self.modes = []  # what the run told train(mode)

    def named_parameters(self):
        return [("1.weight", self.w1), ("1.bias", self.b1), ("3.weight", self.w2), ("3.bias", self.b2)]

    def named_buffers(self):
        return []

    def train(self, mode=True):
        self.training = mode
        self.modes.append(mode)
        return self

    def eval(self):
        return self.train(False)

    def state_dict(self):
        return dict(self.named_parameters())

    def forward(self, x):
        h = (x.flatten(1) @ self.w1.t() + self.b1).relu()
        return h @ self.w2.t() + self.b2

    def __call__(self, x):
        return self.forward(x)


class Flaky(TinyMLP):
    """Raises on its `at`-th forward in training mode."""

    def __init__(self, at, **kw):
        super().__init__(**kw)
        self.at, self.calls = at, 0

    def forward(self, x):
        if self.training:
            self.calls += 1
            if self.calls == self.at:
                raise ZeroDivisionError("the model's own bug")
        return super().forward(x)


def read_safetensors(path):
    """{name: float32 array} of a safetensors file's float32 tensors (a checkpoint's weights)."""
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, t in header.items():
        if name == "__metadata__" or t["dtype"] != "F32":  # the optimizer's step counts
            continue
        begin, end = t["data_offsets"]
        out[name] = np.frombuffer(raw[8 + n + begin:8 + n + end], dtype=np.float32).reshape(t["shape"])
    return out


def write_safetensors(path, tensors):
    """What ember.Tensors hold, as a safetensors file (--init-from's input)."""
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        a = np.ascontiguousarray(t.detach().numpy(), dtype=np.float32)
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + a.nbytes]}
        blobs.append(a.tobytes())
        offset += a.nbytes
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    path.write_bytes(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def weights_of(run_dir, manifest="best.json"):
    m = json.loads((run_dir / "checkpoints" / manifest).read_text())
    return {k[len("model/"):]: v for k, v in read_safetensors(run_dir / "checkpoints" / m["weights"]).items()
            if k.startswith("model/")}


def values(net):
    return {name: p.detach().numpy().copy() for name, p in net.named_parameters()}


@pytest.fixture(scope="module")
def python_run(tmp_path_factory, tiny_data):
    """A finished run of TinyMLP, with the object trained and its weights before."""
    net = TinyMLP()
    before = values(net)
    run_dir = tmp_path_factory.mktemp("py") / "run"
    r = ember.fit(model=net, **SETTINGS, data_dir=str(tiny_data), run_dir=str(run_dir))
    return net, before, r, run_dir


def test_a_python_module_is_trained_in_place_as_a_run(python_run):
    net, before, r, run_dir = python_run
    assert r.status == "completed" and r.run_dir == run_dir and r.epoch == 2 and len(r.history) == 2
    for f in ("config.json", "metrics.jsonl", "report.html", "checkpoints/latest.json", "checkpoints/best.json"):
        assert (run_dir / f).exists(), f
    assert json.loads((run_dir / "config.json").read_text())["model"] == "python:TinyMLP"
    assert r.config["model"] == "python:TinyMLP"
    assert "python:TinyMLP" in (run_dir / "report.html").read_text()
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [rec["epoch"] for rec in records if rec.get("kind") == "epoch"] == [1, 2]
    # The object's own tensors were trained: they hold the selected epoch's weights, the ones
    # test_accuracy measured (checkpoints/best.json), bit for bit.
    after, best = values(net), weights_of(run_dir)
    assert sorted(best) == sorted(after)
    for name in after:
        assert not np.array_equal(after[name], before[name]), name
        np.testing.assert_array_equal(after[name], best[name], err_msg=name)
    if r.best_epoch == r.epoch:
        last = weights_of(run_dir, "latest.json")
        for name in after:
            np.testing.assert_array_equal(after[name], last[name], err_msg=name)
    # The run told it its modes: evaluation mode to evaluate, training mode to train and at the end.
    assert False in net.modes and net.training is True
    assert r.test_accuracy is not None and r.test_accuracy > 0.2  # the bands are learnable at once


def test_resume_with_the_same_class_continues_the_run(tmp_path, tiny_data):
    class Stop(Exception):
        pass

    def stop_at_3(logs):
        if logs["step"] == 3:
            raise Stop  # a checkpoint, then raised again

    run_dir = tmp_path / "run"
    net = TinyMLP()
    with pytest.raises(Stop):
        ember.fit(model=net, **SETTINGS, data_dir=str(tiny_data), run_dir=str(run_dir), on_step=stop_at_3)
    assert json.loads((run_dir / "checkpoints" / "latest.json").read_text())["step"] == 3
    # Without the class: nothing here can rebuild it; the message names it and the call that works.
    with pytest.raises(ember.SettingError, match=r"defined in Python \(class TinyMLP, recorded as python:TinyMLP\)") as e:
        ember.fit(resume=str(run_dir))
    assert f'ember.fit(model=TinyMLP(), resume="{run_dir}")' in e.value.hint
    # A model whose state does not fit the checkpoint: the checkpoint's own error, nothing written.
    with pytest.raises(ember.FormatError, match="does not fit"):
        ember.fit(model=TinyMLP(hidden=16), resume=str(run_dir), verbose=0)
    # The same object again: the run goes on from its checkpoint (a new instance does too: below).
    r = ember.fit(model=net, resume=str(run_dir), verbose=0)
    assert r.status == "completed" and r.epoch == 2 and r.step == 12
    best = weights_of(run_dir)
    for name, v in values(net).items():
        np.testing.assert_array_equal(v, best[name], err_msg=name)
    # A zoo run is not resumed with a module.
    zoo = tmp_path / "zoo"
    ember.fit(model="lenet5", **{**SETTINGS, "epochs": 1}, data_dir=str(tiny_data), run_dir=str(zoo))
    with pytest.raises(ember.SettingError, match="resumes without a model object"):
        ember.fit(model=TinyMLP(), resume=str(zoo), epochs=2)


SPEC = """
[[layer]]
type = "flatten"
[[layer]]
type = "linear"
out_features = 32
[[layer]]
type = "relu"
[[layer]]
type = "linear"
out_features = 10
"""


def test_the_same_network_as_a_spec_file_trains_to_the_same_weights(tmp_path, tiny_data):
    """The spec starts from the module's initial weights (--init-from); the same data order, optimizer
    and schedule follow. The module's forward is written with Tensor ops (matmul, add, relu) where the
    spec's Linear is one op (ember/ops.h: linear). Their forwards agree bit for bit (the first step's
    loss is the same), but their gradients come from other kernels: the weight's as (x^T g)^T, a gemm
    of another layout, rather than g^T x, and the bias's from the broadcast add's reduction rather than
    the linear op's own sum over the batch — the same sums in another order, which round differently
    in the last bit (about 1e-8 after one step). So the weights agree to float32 rounding, not bit for
    bit; ember.nn.Linear, which calls the spec's layer's own op, does (the test after the next)."""
    net = TinyMLP()
    start = tmp_path / "start.safetensors"
    write_safetensors(start, dict(net.named_parameters()))
    (tmp_path / "mlp.toml").write_text(SPEC)
    spec_run, py_run = tmp_path / "spec", tmp_path / "py"
    ember.fit(model=str(tmp_path / "mlp.toml"), init_from=str(start), **SETTINGS, data_dir=str(tiny_data),
              run_dir=str(spec_run))
    ember.fit(model=net, **SETTINGS, data_dir=str(tiny_data), run_dir=str(py_run))
    def first_loss(run_dir):
        lines = (run_dir / "metrics.jsonl").read_text().splitlines()
        return next(r["loss"] for r in map(json.loads, lines) if r.get("kind") == "step")

    assert first_loss(py_run) == first_loss(spec_run)  # the same forward, bit for bit
    a, b = weights_of(spec_run, "latest.json"), weights_of(py_run, "latest.json")
    assert sorted(a) == sorted(b) == ["1.bias", "1.weight", "3.bias", "3.weight"]
    for name in a:
        assert not np.array_equal(a[name], read_safetensors(start)[name]), name  # both trained
        np.testing.assert_allclose(b[name], a[name], rtol=1e-4, atol=1e-5, err_msg=name)


def test_a_forward_that_raises_stops_the_run_with_a_checkpoint(tmp_path, tiny_data):
    run_dir = tmp_path / "run"
    net = Flaky(at=5)  # the fifth training step
    with pytest.raises(ZeroDivisionError, match="the model's own bug") as e:
        ember.fit(model=net, **SETTINGS, data_dir=str(tiny_data), run_dir=str(run_dir))
    manifest = json.loads((run_dir / "checkpoints" / "latest.json").read_text())
    assert manifest["step"] == 4  # the raising step was dropped; the last one is checkpointed
    if sys.version_info >= (3, 11):
        assert any(f'ember.fit(model=Flaky(), resume="{run_dir}")' in n for n in e.value.__notes__), e.value.__notes__
    assert all(p.grad is None for _, p in net.named_parameters())  # the dropped step's gradients
    again = Flaky(at=-1, seed=99)  # a new instance, other initial weights: the checkpoint's are loaded into it
    r = ember.fit(model=again, resume=str(run_dir), verbose=0)
    assert r.status == "completed" and r.step == 12
    best = weights_of(run_dir)
    for name, v in values(again).items():
        np.testing.assert_array_equal(v, best[name], err_msg=name)


def test_a_module_that_does_not_take_the_data_is_a_shape_error(tmp_path, tiny_data):
    with pytest.raises(ember.ShapeError, match=r"TinyMLP does not take .*\(N, 1, 28, 28\), for 10 classes: its forward "
                                               r"raised ShapeError") as e:
        ember.fit(model=TinyMLP(inputs=100), **SETTINGS, data_dir=str(tiny_data), run_dir=str(tmp_path / "a"))
    assert "784 features when flattened" in e.value.hint and "data=" in e.value.hint
    with pytest.raises(ember.ShapeError, match=r"TinyMLP gives \[1, 5\] for one image, not \(1, 10\)"):
        ember.fit(model=TinyMLP(classes=5), **SETTINGS, data_dir=str(tiny_data), run_dir=str(tmp_path / "b"))
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_model_is_a_name_or_a_module(tmp_path):
    for wrong in (42, object(), [TinyMLP()]):
        with pytest.raises(TypeError, match=r"model must be a zoo name, a spec file \(\*\.toml\) or a module"):
            ember.fit(model=wrong, run_dir=str(tmp_path / "a"))

    class NotTensors(TinyMLP):
        def named_parameters(self):
            return [("w", 1.0)]

    with pytest.raises(TypeError, match=r"NotTensors.named_parameters\(\) must give \(name, ember.Tensor\) pairs"):
        ember.fit(model=NotTensors(), run_dir=str(tmp_path / "b"))

    class NotLeaves(TinyMLP):  # a parameter computed from another: the optimizer could not update it
        def named_parameters(self):
            return [("w", self.w1 * 2)]

    with pytest.raises(ember.ValueError, match="parameter 'w' must be a leaf tensor"):
        ember.fit(model=NotLeaves(), run_dir=str(tmp_path / "c"))


def test_commands_that_rebuild_the_model_say_what_can(python_run, ember_bin, tmp_path):
    _, _, _, run_dir = python_run
    call = f'ember.fit(model=TinyMLP(), resume="{run_dir}")'
    for argv, what in ((["eval", str(run_dir)], "`ember eval`, `predict` or `export`"),
                       (["export", str(run_dir), "-o", str(tmp_path / "m.onnx")], "`ember eval`, `predict` or `export`"),
                       (["train", "--resume", str(run_dir), "--epochs", "3"], "`ember train --resume`")):
        p = subprocess.run([ember_bin, *argv], capture_output=True, text=True)
        assert p.returncode == 2, (argv, p.stderr)
        assert "defined in Python (class TinyMLP, recorded as python:TinyMLP)" in p.stderr, p.stderr
        assert f"{what} cannot rebuild it" in p.stderr and call in p.stderr, p.stderr
    with pytest.raises(ember.SettingError, match="ember.load cannot rebuild it"):
        ember.load(run_dir)


def test_an_ember_nn_module_with_buffers_is_trained_in_place(tmp_path, tiny_data):
    """ember.nn's own Module (PyTorch's object model): parameters and buffers by PyTorch's state_dict
    names, batch norm's running statistics and num_batches_tracked updated in place by its forward."""
    from ember import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 4, 3, padding=1)
            self.bn = nn.BatchNorm2d(4)
            self.fc = nn.Linear(4 * 14 * 14, 10)

        def forward(self, x):
            x = nn.functional.max_pool2d(nn.functional.relu(self.bn(self.conv(x))), 2)
            return self.fc(x.flatten(1))

    ember.manual_seed(0)
    net = Net()
    run_dir = tmp_path / "run"
    r = ember.fit(model=net, **SETTINGS, data_dir=str(tiny_data), run_dir=str(run_dir))
    assert r.status == "completed" and r.config["model"] == "python:Net"
    best = json.loads((run_dir / "checkpoints" / "best.json").read_text())
    raw = (run_dir / "checkpoints" / best["weights"]).read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    names = sorted(k[len("model/"):] for k in json.loads(raw[8:8 + n]) if k.startswith("model/"))
    assert names == sorted(net.state_dict())  # PyTorch's keys, buffers included
    saved = weights_of(run_dir)
    for name, t in list(net.named_parameters()) + list(net.named_buffers()):
        if name != "bn.num_batches_tracked":
            np.testing.assert_array_equal(t.detach().numpy(), saved[name], err_msg=name)
    assert not np.array_equal(net.bn.running_mean.numpy(), np.zeros(4, np.float32))
    assert int(net.bn.num_batches_tracked.item()) == 6 * r.best_epoch  # one per training batch to the best epoch
    assert net.training and net.bn.training


def test_an_ember_nn_sequential_trains_as_its_spec_file_bit_for_bit(tmp_path, tiny_data):
    """nn.Linear calls the library's linear op, the spec's layer's own: the same weights, bit for bit."""
    from ember import nn

    ember.manual_seed(0)
    net = nn.Sequential(nn.Flatten(), nn.Linear(784, 32), nn.ReLU(), nn.Linear(32, 10))
    start = tmp_path / "start.safetensors"
    write_safetensors(start, dict(net.named_parameters()))
    (tmp_path / "mlp.toml").write_text(SPEC)
    spec_run, py_run = tmp_path / "spec", tmp_path / "py"
    ember.fit(model=str(tmp_path / "mlp.toml"), init_from=str(start), **SETTINGS, data_dir=str(tiny_data),
              run_dir=str(spec_run))
    ember.fit(model=net, **SETTINGS, data_dir=str(tiny_data), run_dir=str(py_run))
    a, b = weights_of(spec_run, "latest.json"), weights_of(py_run, "latest.json")
    assert sorted(a) == sorted(b) == ["1.bias", "1.weight", "3.bias", "3.weight"]
    for name in a:
        np.testing.assert_array_equal(b[name], a[name], err_msg=name)
