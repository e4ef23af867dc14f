"""ember.fit is `ember train`: the same settings give the same run bit for bit; a callback's
exception and Ctrl-C stop it at a step with a checkpoint; bad settings are refused with the flag's
sentence."""

import json
import os
import signal
import subprocess

import pytest

import ember
from conftest import cli_flags, final_weights, tensors_sha256

# A run of seconds: lenet5, 1 epoch of 256 images in batches of 32 (8 steps), one thread, fp32.
SETTINGS = dict(model="lenet5", epochs=1, batch_size=32, threads=1, workers=0, seed=7, precision="fp32",
                val_split=0.25, lr=0.01)


def test_fit_is_ember_train_bit_for_bit(tmp_path, tiny_data, ember_bin):
    cli_run, py_run = tmp_path / "cli", tmp_path / "py"
    subprocess.run([ember_bin, "train", *cli_flags(SETTINGS), "--data-dir", str(tiny_data), "--run-dir", str(cli_run)],
                   check=True, capture_output=True, text=True)
    r = ember.fit(**SETTINGS, data_dir=str(tiny_data), run_dir=str(py_run))
    assert r.status == "completed" and r.run_dir == py_run and r.step == 6  # 192 training images / 32
    assert tensors_sha256(final_weights(py_run)) == tensors_sha256(final_weights(cli_run))
    # The same metrics, epoch by epoch, and the same settings recorded (but the run directory).
    cli_cfg = json.loads((cli_run / "config.json").read_text())
    py_cfg = json.loads((py_run / "config.json").read_text())
    for cfg in (cli_cfg, py_cfg):
        cfg.pop("run_dir"), cfg.pop("name")
    assert py_cfg == cli_cfg
    def records(run_dir, kind):
        lines = (run_dir / "metrics.jsonl").read_text().splitlines()
        return [r for r in map(json.loads, lines) if r.get("kind") == kind]

    for kind in ("step", "epoch"):
        py, cli = records(py_run, kind), records(cli_run, kind)
        assert len(py) == len(cli) > 0
        assert [r["loss" if kind == "step" else "train_loss"] for r in py] == \
               [r["loss" if kind == "step" else "train_loss"] for r in cli]
    # The same report.html, from the same library call (train::write_run_report).
    for run in (cli_run, py_run):
        report = (run / "report.html").read_text()
        assert "confusion" in report.lower() and "best epoch" in report.lower(), run


def test_callbacks_get_the_epoch_metrics(tmp_path, tiny_data):
    seen, steps = [], []
    r = ember.fit(**SETTINGS, data_dir=str(tiny_data), run_dir=str(tmp_path / "run"), on_epoch_end=seen.append,
                  on_step=lambda logs: steps.append(logs["step"]))
    assert [e["epoch"] for e in seen] == [1] and seen == r.history
    assert 0 <= seen[0]["train_acc"] <= 1 and seen[0]["val_acc"] is not None
    assert steps == list(range(1, r.step + 1))
    assert r.test_accuracy is not None and 0 <= r.test_accuracy <= 1


def test_a_callback_exception_stops_the_run_with_a_checkpoint(tmp_path, tiny_data):
    class Stop(Exception):
        pass

    def on_step(logs):
        if logs["step"] == 3:
            raise Stop("enough")

    run_dir = tmp_path / "run"
    with pytest.raises(Stop, match="enough"):
        ember.fit(**{**SETTINGS, "epochs": 3}, data_dir=str(tiny_data), run_dir=str(run_dir), on_step=on_step)
    manifest = json.loads((run_dir / "checkpoints" / "latest.json").read_text())
    assert manifest["step"] == 3  # stopped at the step boundary after the callback, and checkpointed
    # ... and the run resumes from there to its end.
    r = ember.fit(resume=str(run_dir))
    assert r.status == "completed" and r.epoch == 3


def test_sigint_checkpoints_and_raises_keyboard_interrupt(tmp_path, tiny_data):
    def on_step(logs):
        if logs["step"] == 2:
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C while C++ trains

    run_dir = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt, match="checkpoint written"):
        ember.fit(**{**SETTINGS, "epochs": 3}, data_dir=str(tiny_data), run_dir=str(run_dir), on_step=on_step)
    assert json.loads((run_dir / "checkpoints" / "latest.json").read_text())["step"] in (2, 3)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # Python's handler is back


def test_sigint_in_a_child_interpreter(tmp_path, tiny_data):
    """SIGINT from outside (a terminal's Ctrl-C): the interpreter ends with KeyboardInterrupt after the
    checkpoint."""
    run_dir = tmp_path / "run"
    code = (
        "import ember, os, sys\n"
        "def on_step(logs):\n"
        "    if logs['step'] == 1: print('training', flush=True); sys.stdin.readline()\n"
        f"ember.fit(**{SETTINGS!r} | {{'epochs': 50}}, data_dir={str(tiny_data)!r}, run_dir={str(run_dir)!r}, "
        "on_step=on_step, verbose=0)\n")  # its stdout is this test's protocol: no banner
    p = subprocess.Popen([os.sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "training"
    p.send_signal(signal.SIGINT)
    p.stdin.write("\n")
    p.stdin.flush()
    _, err = p.communicate(timeout=120)
    assert p.returncode != 0 and "KeyboardInterrupt" in err, err
    assert (run_dir / "checkpoints" / "latest.json").exists()


def test_settings_are_checked_like_flags(tmp_path):
    # In Python's terms (issue 48, item 17): the keyword, not the flag, and a hint that is not empty.
    with pytest.raises(ember.SettingError, match=r"^epochs=0: epochs must be at least 1 \(got 0\)") as e:
        ember.fit(epochs=0, run_dir=str(tmp_path / "a"))
    assert isinstance(e.value, ValueError)
    assert "--epochs" in e.value.hint and "ember train --help" in e.value.hint, e.value.hint
    with pytest.raises(ember.SettingError, match="unknown setting 'epoch'; did you mean epochs"):
        ember.fit(epoch=3)
    with pytest.raises(ember.SettingError, match="batch_size must be an integer"):
        ember.fit(batch_size="64")
    with pytest.raises(ember.SettingError, match="optimizer must be"):
        ember.fit(optimizer="lbfgs")
    assert not (tmp_path / "a").exists()  # nothing written


def test_the_plans_warnings_are_python_warnings(tmp_path, tiny_data):
    with pytest.warns(UserWarning, match="--momentum is SGD's"):
        ember.fit(**SETTINGS, momentum=0.5, data_dir=str(tiny_data), run_dir=str(tmp_path / "run"))


def test_verbose_is_keras_fits(tmp_path, tiny_data, capsys):
    """Issue 48 item 9: ember.fit printed nothing for minutes. verbose= is Keras's: by default the
    banner and a line per epoch (through sys.stdout, which a notebook sees); 2 the same without a
    bar; 0 nothing. The rule is the library's (progress_rule), the one `ember train --verbose` uses."""
    ember.fit(**SETTINGS, data_dir=str(tiny_data), run_dir=str(tmp_path / "default"))
    out = capsys.readouterr().out
    assert "ember.fit: lenet5 on fashion-mnist" in out and "run dir" in out
    assert "epoch 1/1 - train loss" in out
    ember.fit(**SETTINGS, data_dir=str(tiny_data), run_dir=str(tmp_path / "two"), verbose=2)
    assert "epoch 1/1 - train loss" in capsys.readouterr().out
    ember.fit(**SETTINGS, data_dir=str(tiny_data), run_dir=str(tmp_path / "quiet"), verbose=0)
    assert capsys.readouterr().out == ""
    with pytest.raises(ember.SettingError, match="verbose=3: verbose must be"):
        ember.fit(**SETTINGS, verbose=3)
