"""The one change issue 47 lets a PyTorch program make to run on ember: its import lines name ember
(`import torch` -> `import ember as torch`, `torch.X` -> `ember.X`, `torchvision` -> `ember.vision`).
Used by tests/python/pkg/test_programs.py and bench/python_mnist_example.sh.

  python to_ember.py PROGRAM.py > PROGRAM_ember.py"""
import re
import sys

_RULES = [
    (r"^(\s*)import torch\s*$", r"\1import ember as torch"),
    (r"^(\s*)import torchvision\s*$", r"\1import ember.vision as torchvision"),
    (r"^(\s*)import torchvision\.(\S+)", r"\1import ember.vision.\2"),
    (r"^(\s*)import torch\.(\S+)", r"\1import ember.\2"),
    (r"^(\s*)from torchvision import ", r"\1from ember.vision import "),
    (r"^(\s*)from torchvision\.(\S+) import ", r"\1from ember.vision.\2 import "),
    (r"^(\s*)from torch import ", r"\1from ember import "),
    (r"^(\s*)from torch\.(\S+) import ", r"\1from ember.\2 import "),
]


def imports_to_ember(source: str) -> str:
    out = []
    for line in source.splitlines():
        for pattern, repl in _RULES:
            new = re.sub(pattern, repl, line)
            if new != line:
                line = new
                break
        out.append(line)
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        sys.stdout.write(imports_to_ember(f.read()))
