"""The Python examples run as documented (docs/python.md's walk-through): the GPU guides' AlexNet
program with its imports naming ember trains, evaluates and saves a state dict that ember.load (and
torch.load(weights_only=True), tested in test_torch_save.py) reads."""

import subprocess
import sys
from pathlib import Path

import ember

ROOT = Path(__file__).resolve().parents[3]


def test_the_alexnet_walk_through_runs(tmp_path, tiny_data):
    out = tmp_path / "alexnet.pt"
    r = subprocess.run([sys.executable, str(ROOT / "examples" / "alexnet_fashion_mnist.py"), "--epochs", "2",
                        "--steps", "3", "--batch-size", "16", "--data-dir", str(tiny_data), "--save", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "CUDA available: " in r.stdout
    assert r.stdout.count("test accuracy") == 2 and "on cpu" in r.stdout or "on cuda" in r.stdout
    state = ember.load(out)
    assert list(state)[:2] == ["features.0.weight", "features.0.bias"]
    assert list(state["classifier.1.weight"].shape) == [1024, 256 * 3 * 3]


def test_an_example_reports_missing_data(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "examples" / "alexnet_fashion_mnist.py"), "--data-dir",
                        str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert r.returncode != 0 and "ember data fetch fashion-mnist" in r.stderr
