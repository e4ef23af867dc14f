#!/usr/bin/env python3
"""Writes tests/fixtures/torch_save/: files torch.save wrote (PyTorch 2.x), and expected.json, what
each holds in plain JSON (a tensor as {"dtype", "shape", "values", "requires_grad"}), so that
tests/python/pkg/test_torch_save.py checks ember.load against PyTorch's own files where torch is not
installed. Run once with a Python that has torch:
    /work/wt/torchvenv/bin/python scripts/make-torch-save-fixtures.py
"""
import collections
import json
import os
import sys

import torch

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "torch_save")
os.makedirs(out, exist_ok=True)
torch.manual_seed(0)


def model():
    return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3), torch.nn.ReLU(), torch.nn.Linear(3, 2))


net = model()
opt = torch.optim.Adam(net.parameters(), lr=0.01)
for _ in range(3):
    opt.zero_grad()
    net(torch.randn(5, 4)).sum().backward()
    opt.step()
sd, osd = net.state_dict(), opt.state_dict()

base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
objects = {
    "state_dict": sd,
    "optimizer": osd,
    "checkpoint": {"epoch": 3, "model": sd, "optimizer": osd, "loss": 0.25, "name": "run-1",
                   "shape": torch.Size([2, 3]), "dtype": torch.float16, "device": torch.device("cpu"),
                   "flags": [True, False, None], "pair": (1, -2.5), "blob": b"\x00\xffember", "big": 2**40,
                   "neg": -7},
    "dtypes": {"f32": torch.tensor([1.5, -2.0, 3.25]), "f64": torch.tensor([[1.0, 2.0]], dtype=torch.float64),
               "f16": torch.tensor([0.5, 65504.0], dtype=torch.float16),
               "bf16": torch.tensor([1.0, -3.0, 0.0078125], dtype=torch.bfloat16),
               "i64": torch.tensor([-(2**40), 5]), "i32": torch.tensor([7, -8], dtype=torch.int32),
               "u8": torch.tensor([0, 255], dtype=torch.uint8), "bool": torch.tensor([True, False, True]),
               "scalar": torch.tensor(3.0), "empty": torch.zeros(0, 3),
               "transposed": base.t(), "row": base[1], "column": base[:, 2]},
    "parameter": torch.nn.Parameter(torch.tensor([[1.0, 2.0], [3.0, 4.0]])),
}


def describe(v):
    if isinstance(v, torch.Tensor):
        return {"tensor": True, "dtype": str(v.dtype).replace("torch.", ""), "shape": list(v.shape),
                "values": v.detach().double().flatten().tolist() if v.dtype != torch.bool else v.flatten().tolist(),
                "requires_grad": v.requires_grad}
    if isinstance(v, torch.Size):
        return {"size": list(v)}
    if isinstance(v, torch.dtype):
        return {"dtype_value": str(v).replace("torch.", "")}
    if isinstance(v, torch.device):
        return {"device": str(v)}
    if isinstance(v, bytes):
        return {"bytes": list(v)}
    if isinstance(v, tuple):
        return {"tuple": [describe(x) for x in v]}
    if isinstance(v, list):
        return [describe(x) for x in v]
    if isinstance(v, dict):
        kind = "ordered" if isinstance(v, collections.OrderedDict) else "dict"
        return {kind: [[describe(k), describe(x)] for k, x in v.items()]}
    return v


expected = {}
for name, obj in objects.items():
    torch.save(obj, os.path.join(out, f"{name}.pt"))
    expected[name] = describe(obj)
# The pre-1.6 format (a stream of pickles), as old checkpoints are.
torch.save(objects["checkpoint"], os.path.join(out, "checkpoint_legacy.pt"), _use_new_zipfile_serialization=False)
expected["checkpoint_legacy"] = expected["checkpoint"]
with open(os.path.join(out, "expected.json"), "w") as f:
    json.dump({"torch": torch.__version__, "objects": expected}, f, indent=1)
print(f"wrote {len(expected)} files to {os.path.normpath(out)} with torch {torch.__version__}", file=sys.stderr)
