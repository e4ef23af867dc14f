"""The doctor, the devices, a trained model's predict and export, its weights in PyTorch."""

import collections
import gc
import json

import numpy as np
import pytest

import ember


def test_doctor_is_the_json_report():
    report = ember.doctor(audit_python=False)
    assert isinstance(report, dict) and "verdict" in report
    assert "first_fix" in report["verdict"] and report["schema"] == 2 and report["schema_minor"] >= 3
    assert isinstance(ember.cuda.is_available(), bool) and ember.cuda.device_count() >= 0
    assert str(ember.Device("cuda:1")) == "cuda:1" and ember.Device("cpu").type == "cpu"
    with pytest.raises(ember.ValueError):
        ember.Device("tpu")


def test_doctor_gives_the_same_checks_as_the_cli(ember_bin):
    """`ember doctor --json` and ember.doctor() run one library call (env::run_doctor, issue 44): the
    same machine and interpreter give the same checks. Only the BLAS line may name another file (the
    wheel brings its own OpenBLAS)."""
    import subprocess
    import sys

    cli = json.loads(subprocess.run([ember_bin, "doctor", "--json", "--python", sys.executable],
                                    capture_output=True, text=True, timeout=600, check=False).stdout)
    py = ember.doctor(pythons=[sys.executable])

    def checks(report):
        return [(c["level"], c["name"], "" if c["name"] == "blas" else c["message"],
                 "" if c["name"] == "blas" else c["fix"]) for c in report["checks"]]

    assert checks(py) == checks(cli)
    assert [p["path"] for p in py["pythons"]] == [sys.executable]
    assert py["verdict"]["summary"] == cli["verdict"]["summary"]


def test_doctor_audits_the_interpreter_it_runs_in():
    """An unactivated venv is not on PATH: ember.doctor() audits sys.executable too (issue 48)."""
    import os
    import sys

    report = ember.doctor(python_timeout=300)
    # Audited once, by whichever name found it first (an activated venv's $VIRTUAL_ENV/bin/python).
    here = os.path.realpath(os.path.dirname(os.path.abspath(sys.executable)))
    dirs = [os.path.realpath(os.path.dirname(os.path.abspath(p["path"]))) for p in report["pythons"]]
    assert here in dirs, report["pythons"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory, tiny_data):
    run_dir = tmp_path_factory.mktemp("runs") / "run"
    ember.fit(model="lenet5", epochs=1, batch_size=32, threads=1, workers=0, seed=1, precision="fp32",
              data_dir=str(tiny_data), run_dir=str(run_dir))
    return run_dir


def test_load_of_a_run_is_load_run_with_a_deprecation_warning(trained, tmp_path):
    with pytest.warns(DeprecationWarning, match=r"ember\.load_run"):
        model = ember.load(trained)
    assert isinstance(model, ember.Model) and model.input_shape == (1, 28, 28)
    with pytest.warns(DeprecationWarning):
        assert ember.load(trained, checkpoint="last").epoch == ember.load_run(trained, checkpoint="last").epoch
    # The run's export as torch.save's file is a torch.save file: ember.load reads it as torch.load does.
    pt = ember.load_run(trained).export(tmp_path / "model.pt")
    sd = ember.load(pt)
    assert isinstance(sd, collections.OrderedDict) and sd["conv1.weight"].shape[0] > 0


def test_load_predict_and_export(trained, tmp_path):
    model = ember.load_run(trained)
    assert model.input_shape == (1, 28, 28) and len(model.classes) == 10
    p = model.predict(np.zeros((28, 28), dtype=np.uint8))
    assert isinstance(p, ember.Prediction) and abs(float(p.probabilities.sum()) - 1) < 1e-5
    assert p.label in model.classes and len(p.top(3)) == 3
    batch = model.predict(np.zeros((4, 1, 28, 28), dtype=np.uint8))
    assert len(batch) == 4
    with pytest.raises(ember.ShapeError, match=r"\(1, 28, 28\)"):  # not a picture: (C, H, W) of 3 channels
        model.predict(np.zeros((3, 5, 5), dtype=np.uint8))
    Image = pytest.importorskip("PIL.Image", reason="Pillow is not installed")
    img = Image.new("L", (56, 40), 30)
    path = tmp_path / "x.png"
    img.save(path)
    from_file, from_pil = model.predict(path), model.predict(img)
    assert np.allclose(from_file.probabilities, from_pil.probabilities)
    # A picture array of another size is resized as its file and its PIL image are (issue 48, item 17).
    from_array = model.predict(np.asarray(img))
    assert np.array_equal(from_array.probabilities, from_pil.probabilities)
    rgb = model.predict(np.full((64, 64, 3), 200, dtype=np.uint8))  # RGB to the model's grey, as a file is
    assert np.array_equal(rgb.probabilities, model.predict(Image.new("RGB", (64, 64), (200, 200, 200))).probabilities)
    assert model.export(tmp_path / "m.onnx").stat().st_size > 1000
    assert model.export(tmp_path / "m.safetensors").stat().st_size > 1000


def test_weights_outlive_the_model(trained):
    model = ember.load_run(trained)
    weights = {k: np.asarray(t) for k, t in model.state_dict().items()}
    first = weights["conv1.weight"].copy()
    del model
    gc.collect()
    assert np.array_equal(weights["conv1.weight"], first)


def test_load_errors_are_typed(tmp_path):
    with pytest.raises(ember.Error) as e:
        ember.load_run(tmp_path / "nothing")
    assert isinstance(e.value, OSError) or isinstance(e.value, ValueError)
    assert e.value.hint != "" or str(e.value)


def test_star_import_shadows_no_builtin():
    # Issue 48, item 10: `from ember import *` replaced ValueError, IOError, IndexError and
    # NotImplementedError, so `except ValueError:` no longer caught int('x').
    import builtins
    ns = {}
    exec("from ember import *", ns)
    for name in ("ValueError", "IOError", "IndexError", "NotImplementedError"):
        assert name not in ns, name
    exec("try:\n    int('x')\nexcept ValueError:\n    caught = True\n", ns)
    assert ns["caught"]
    assert "ShapeError" in ns and issubclass(ns["ShapeError"], builtins.ValueError)
    import ember
    assert issubclass(ember.ValueError, builtins.ValueError)  # still reachable by its ember name


def test_dir_lists_public_names_only():
    import ember
    names = dir(ember)
    for helper in ("Any", "Callable", "Dict", "List", "Optional", "Union", "os_fspath", "dataclass", "field"):
        assert helper not in names, helper
    for public in ("fit", "doctor", "load", "Tensor", "ShapeError", "__version__"):
        assert public in names, public


def test_pip_install_builds_outside_the_checkout():
    # Issue 48, item 16: pyproject.toml named build-dir = "build-python", so `pip install .` wrote into
    # the source tree and failed on a read-only checkout. A kept folder is opt-in.
    import pathlib
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    pyproject = pathlib.Path(__file__).resolve().parents[3] / "pyproject.toml"
    if not pyproject.exists():
        pytest.skip(f"no source tree beside the tests ({pyproject})")
    config = tomllib.loads(pyproject.read_text())
    assert "build-dir" not in config["tool"]["scikit-build"]


def test_errors_and_warnings_speak_python(trained, capfd):
    """Issue 48 item 17: hints in Python's terms, every warning a UserWarning, the docstring's example
    runs as written."""
    if not ember.cuda.is_available():
        t = ember.from_numpy(np.zeros(3, dtype=np.float32))
        with pytest.raises(ember.DeviceError) as e:
            t.to("cuda")
        assert "device='cpu'" in e.value.hint and "ember.cuda.is_available()" in e.value.hint
        assert "ember::Device::best()" not in str(e.value)
        capfd.readouterr()
        with pytest.warns(UserWarning):
            ember.load_run(trained, device="cuda")
        assert "ember: warning:" not in capfd.readouterr().err
    # ember/__init__.py's docstring: report["verdict"]["first_fix"] is what to do first ("" when nothing).
    report = ember.doctor(audit_python=False)
    assert isinstance(report["verdict"]["first_fix"], str)
