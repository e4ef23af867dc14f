"""PyTorch's side of a comparison, computed by torch when it is importable, else read from a golden
file under tests/python/golden/ that the same test wrote when run with torch and
EMBER_WRITE_TORCH_GOLDENS=1 (scripts/make-torch-goldens.sh). Each comparison's key is the test's id
and its number within the test; a key missing from the file skips its test."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:
    torch = None

GOLDEN_DIR = Path(__file__).resolve().parents[1] / "golden"
RECORD = torch is not None and os.environ.get("EMBER_WRITE_TORCH_GOLDENS") == "1"


def name(dtype) -> str:
    return str(dtype).split(".")[-1]


def _record(t) -> dict:
    if isinstance(t, torch.Tensor):
        v = t.detach()
        v = v.float() if v.dtype in (torch.bfloat16, torch.float16) else v
        return {"shape": list(t.shape), "dtype": name(t.dtype), "values": v.tolist()}
    if isinstance(t, torch.dtype):
        return {"dtype": name(t)}
    return {"value": t}


class Golden:
    """One test file's golden values: ``reference(thunk)`` gives PyTorch's result of thunk()."""

    def __init__(self, file_name: str) -> None:
        self.path = GOLDEN_DIR / file_name
        self.values = json.loads(self.path.read_text()) if torch is None and self.path.exists() else {}
        self.recorded = {}
        self.test, self.n = "", 0

    def start(self, nodeid: str) -> None:
        self.test, self.n = nodeid.split("::", 1)[-1], 0

    def reference(self, thunk) -> dict:
        self.n += 1
        key = f"{self.test}#{self.n}"
        if torch is not None:
            r = _record(thunk())
            if RECORD:
                self.recorded[key] = r
            return r
        if key not in self.values:
            pytest.skip(f"PyTorch is not importable and {self.path.name} has no value for {key}")
        return self.values[key]

    def write(self) -> None:
        if not RECORD:
            pytest.skip("set EMBER_WRITE_TORCH_GOLDENS=1 (with torch importable) to write the golden file")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(self.recorded, sort_keys=True, separators=(",", ":")) + "\n")

    def same(self, e, thunk, atol=1e-6, rtol=1e-5) -> None:
        """An ember tensor equal to PyTorch's: shape, dtype and values."""
        ref = self.reference(thunk)
        assert isinstance(e, ember.Tensor), type(e)
        assert list(e.shape) == ref["shape"], (e.shape, ref["shape"])
        assert name(e.dtype) == ref["dtype"], (e.dtype, ref["dtype"])
        a = np.asarray(e.detach().float().numpy() if name(e.dtype) in ("bfloat16", "float16") else e.detach().numpy())
        b = np.asarray(ref["values"], dtype=a.dtype if a.dtype.kind not in "fc" else np.float64).reshape(a.shape)
        if a.dtype.kind in "fc":
            np.testing.assert_allclose(a.astype(np.float64), b, atol=atol, rtol=rtol, equal_nan=True)
        else:
            np.testing.assert_array_equal(a, b)
