#!/usr/bin/env python3
"""Writes python/ember/_torch_api.py: the public callables of PyTorch's top level and of
torch.autograd (functions and classes, no modules, no constants), from the installed torch's dir().
ember's module __getattr__ answers a name on this list that ember lacks with NotImplementedError
naming the PyTorch function, and every other unknown name with AttributeError. Run once with torch:
    /work/wt/torchvenv/bin/python scripts/make-torch-api-names.py
"""
import inspect
import os

import torch
import torch.autograd


def public_callables(module) -> list:
    names = []
    for n in dir(module):
        if n.startswith("_"):
            continue
        try:
            v = getattr(module, n)
        except Exception:
            continue
        if callable(v) and not inspect.ismodule(v):
            names.append(n)
    return sorted(names)


def literal(names: list) -> str:
    lines, line = [], "   "
    for n in names:
        item = f" {n!r},"
        if len(line) + len(item) > 110:
            lines.append(line)
            line = "   "
        line += item
    lines.append(line)
    return "frozenset({\n" + "\n".join(lines) + "\n})"


out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "ember", "_torch_api.py")
with open(out, "w") as f:
    f.write(f'''"""PyTorch's public callables (torch {torch.__version__.split("+")[0]}: dir(torch) and dir(torch.autograd),
functions and classes, no modules or constants), written by scripts/make-torch-api-names.py. ember's
module __getattr__ (ember/__init__.py, ember/autograd/__init__.py) answers a name on these lists
that ember does not have with ember.NotInEmberError, any other unknown name with
AttributeError."""

TORCH = {literal(public_callables(torch))}

TORCH_AUTOGRAD = {literal(public_callables(torch.autograd))}
''')
print("wrote", os.path.normpath(out))
