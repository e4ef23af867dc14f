"""The two front-ends are one library (issue 44): `ember train` and ember.fit given the same settings
write the same weights, and `ember predict` and Model.predict given the same images give the same
probabilities, bit for bit; the run's headline accuracy is `ember eval`'s. And the run decisions
both make through the library: an empty name is refused, generated names are numbered, hints
name keyword arguments, a finished run is not resumed (issue 48, items 1 and 11)."""

import json
import re
import struct
import subprocess
import time
import zlib

import numpy as np
import pytest

import ember
from conftest import cli_flags, tensors_sha256

# Two epochs of 192 training images in batches of 32, one thread, fp32; bncnn has batch norms, which
# `ember predict` folds into their convolutions (and Model.predict did not).
SETTINGS = dict(model="bncnn", epochs=2, batch_size=32, threads=1, workers=0, seed=11, precision="fp32",
                val_split=0.25, lr=0.01)


def write_png(path, pixels: np.ndarray) -> None:
    """An 8-bit greyscale PNG, written without Pillow."""
    h, w = pixels.shape
    raw = b"".join(b"\x00" + pixels[r].astype(np.uint8).tobytes() for r in range(h))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)) +
                     chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def weights_file(run_dir, tag):
    manifest = json.loads((run_dir / "checkpoints" / f"{tag}.json").read_text())
    return run_dir / "checkpoints" / manifest["weights"]


def test_train_and_predict_give_the_same_bits_from_both_front_ends(tmp_path, tiny_data, ember_bin):
    cli_run, py_run = tmp_path / "cli", tmp_path / "py"
    subprocess.run([ember_bin, "train", *cli_flags(SETTINGS), "--data-dir", str(tiny_data), "--run-dir", str(cli_run)],
                   check=True, capture_output=True, text=True)
    r = ember.fit(**SETTINGS, data_dir=str(tiny_data), run_dir=str(py_run))
    assert r.status == "completed" and r.epoch == 2
    for tag in ("latest", "best"):  # the last epoch's weights and the selected epoch's
        assert tensors_sha256(weights_file(py_run, tag)) == tensors_sha256(weights_file(cli_run, tag)), tag

    # The headline is the model the user gets: `ember eval` of the run says the same number.
    ev = json.loads(subprocess.run([ember_bin, "eval", str(py_run), "--json"], check=True, capture_output=True,
                                   text=True).stdout)
    assert r.test_accuracy == ev["accuracy"] and r.evaluated_epoch == r.best_epoch == ev["epoch"]

    # Images at the model's size, and one the reader resizes; each front-end reads the other's run.
    rng = np.random.default_rng(0)
    images = []
    for i, (h, w) in enumerate([(28, 28), (28, 28), (40, 56)]):
        pixels = rng.integers(0, 40, size=(h, w))
        pixels[(3 * i) % h:(3 * i) % h + 3, :] = 230  # a bright band, like the training images
        images.append(tmp_path / f"img{i}.png")
        write_png(images[-1], pixels)
    out = subprocess.run([ember_bin, "predict", str(cli_run), *map(str, images), "--json", "--top-k", "10"],
                         check=True, capture_output=True, text=True).stdout
    model = ember.load_run(py_run)
    for file, pred in zip(images, json.loads(out)["predictions"]):
        cli = np.zeros(len(model.classes), dtype=np.float32)
        for entry in pred["top_k"]:
            cli[entry["class"]] = np.float32(entry["probability"])
        py = model.predict(file).probabilities
        assert py.dtype == np.float32
        assert np.array_equal(py.view(np.uint32), cli.view(np.uint32)), (file, py, cli)


def test_an_empty_run_name_is_refused(tmp_path, tiny_data):
    with pytest.raises(ember.SettingError, match="the run name is empty"):
        ember.fit(**SETTINGS, data_dir=str(tiny_data), name="")
    (tmp_path / "c.toml").write_text('name = ""\n')
    with pytest.raises(ember.SettingError, match="the run name is empty"):
        ember.fit(**SETTINGS, data_dir=str(tiny_data), config=str(tmp_path / "c.toml"))


def test_a_sweep_gets_a_directory_per_run_and_hints_in_python_terms(tmp_path, tiny_data, monkeypatch):
    monkeypatch.chdir(tmp_path)
    # The generated names of the next seconds already hold runs (a sweep's earlier calls): numbered.
    now = time.time()
    for s in range(-1, 120):
        taken = tmp_path / "runs" / ("bncnn-fashion-mnist-" + time.strftime("%Y%m%d-%H%M%S", time.localtime(now + s)))
        (taken / "checkpoints").mkdir(parents=True)
        (taken / "checkpoints" / "latest.json").write_text("{}")
    quick = {**SETTINGS, "epochs": 1}
    first = ember.fit(**quick, data_dir=str(tiny_data))
    second = ember.fit(**quick, data_dir=str(tiny_data))
    for r in (first, second):
        assert re.search(r"-\d{8}-\d{6}-\d+$", r.run_dir.name), r.run_dir  # <name>-2, -3, ...
        assert (tmp_path / r.run_dir / "checkpoints" / "latest.json").exists()
    assert first.run_dir != second.run_dir
    # A name given that holds a run: refused, in the caller's words.
    with pytest.raises(ember.SettingError, match="already holds a run") as e:
        ember.fit(**quick, data_dir=str(tiny_data), name=first.run_dir.name)
    assert f'ember.fit(resume="{first.run_dir}")' in e.value.hint and "name= or run_dir=" in e.value.hint
    assert "--" not in e.value.hint


def test_a_finished_run_is_not_resumed(tmp_path, tiny_data):
    run_dir = tmp_path / "run"
    ember.fit(**{**SETTINGS, "epochs": 1}, data_dir=str(tiny_data), run_dir=str(run_dir))
    report = (run_dir / "report.html").read_bytes()
    with pytest.raises(ember.SettingError, match="already finished its 1 epoch") as e:
        ember.fit(resume=str(run_dir))
    assert "epochs=2" in e.value.hint
    assert (run_dir / "report.html").read_bytes() == report
    r = ember.fit(resume=str(run_dir), epochs=2)  # extended
    assert r.status == "completed" and r.epoch == 2
