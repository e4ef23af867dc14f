"""Fixtures of the Python package's tests (scripts/test-python.sh runs them in a venv it makes with
`pip install .`): a tiny offline dataset in IDX files, as the CLI's e2e tests write theirs, and the
`ember` command to compare ember.fit with."""

import hashlib
import json
import os
import shutil
import struct
from pathlib import Path

import pytest


def write_idx_split(folder: Path, name: str, n: int) -> None:
    """n 28x28 images whose label picks a bright band (learnable in a few steps)."""
    with open(folder / f"{name}-images-idx3-ubyte", "wb") as im, open(folder / f"{name}-labels-idx1-ubyte", "wb") as lb:
        im.write(struct.pack(">IIII", 0x803, n, 28, 28))
        lb.write(struct.pack(">II", 0x801, n))
        for i in range(n):
            label = (i * 7 + 3) % 10
            im.write(bytes((200 + (i + c) % 50) if r // 3 == label else (i * 31 + r * 7 + c) % 40
                           for r in range(28) for c in range(28)))
            lb.write(bytes([label]))


@pytest.fixture(scope="session")
def tiny_data(tmp_path_factory) -> Path:
    """256 training and 64 test images in Fashion-MNIST's file names (ember's default --data)."""
    folder = tmp_path_factory.mktemp("data")
    write_idx_split(folder, "train", 256)
    write_idx_split(folder, "t10k", 64)
    return folder


def ember_cli() -> str:
    """The `ember` command: $EMBER_BIN, else build/ember in the checkout, else on PATH."""
    candidates = [os.environ.get("EMBER_BIN", ""), str(Path(__file__).resolve().parents[3] / "build" / "ember"),
                  shutil.which("ember") or ""]
    for c in candidates:
        if c and os.access(c, os.X_OK):
            return c
    return ""


@pytest.fixture(scope="session")
def ember_bin() -> str:
    path = ember_cli()
    if not path:
        pytest.skip("no `ember` command to compare with (build it: cmake --build build; or set EMBER_BIN)")
    return path


def tensors_sha256(safetensors_file: Path) -> str:
    """SHA-256 over every tensor of a safetensors file (name, dtype, shape, bytes; sorted by name),
    leaving out __metadata__ (it names the run directory)."""
    raw = safetensors_file.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    h = hashlib.sha256()
    for name in sorted(k for k in header if k != "__metadata__"):
        t = header[name]
        begin, end = t["data_offsets"]
        h.update(f"{name}|{t['dtype']}|{t['shape']}|".encode())
        h.update(data[begin:end])
    return h.hexdigest()


def final_weights(run_dir: Path) -> Path:
    manifest = json.loads((run_dir / "checkpoints" / "latest.json").read_text())
    return run_dir / "checkpoints" / manifest["weights"]


def cli_flags(settings) -> list:
    """ember.fit's keyword arguments as `ember train` flags: batch_size=32 -> --batch-size 32."""
    flags = []
    for k, v in settings.items():
        flags += [f"--{k.replace('_', '-')}", str(v)]
    return flags
