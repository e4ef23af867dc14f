"""ember's safetensors export in PyTorch: every zoo model's and spec's exported state dict loads with
load_state_dict(strict=True) into its PyTorch twin (docs/torch_twins.py, the file docs/export.md
gives users: ember's own models written out, torchvision's architectures its own modules when
python3-torchvision is installed; specs built here from their TOML) and gives ember's logits; a
trained lenet5's export gives ember's test-set logits and accuracy; its torch.save export (`ember
export RUN -o model.pt`) loads with torch.load(weights_only=True) into the same tensors.

usage: check_torch.py EMBER EXPORT_FIXTURE WORK_DIR     (Debian's python3 with python3-torch)"""

import json
import os
import sys
import tomllib

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "docs"))
from export_common import compare, read_safetensors, run, trained_run  # noqa: E402
import torch_twins  # noqa: E402  (docs/torch_twins.py: the zoo's PyTorch twins, as docs/export.md gives them)
from torch_twins import BasicBlock  # noqa: E402  (a spec's "residual" layer)


def from_spec(text, cin, size, classes):
    """A model spec (tomllib reads it) as nn.Sequential, following ember's nn/spec.cpp."""
    layers, shape = [], [cin, size, size]
    for l in tomllib.loads(text)["layer"]:
        t = l["type"]
        if t == "conv2d":
            k, s, p, d, g = l["kernel_size"], l.get("stride", 1), l.get("padding", 0), l.get("dilation", 1), l.get("groups", 1)
            layers.append(nn.Conv2d(shape[0], l["out_channels"], k, s, p, d, g, bias=l.get("bias", True)))
            o = lambda n: (n + 2 * p - d * (k - 1) - 1) // s + 1  # noqa: E731
            shape = [l["out_channels"], o(shape[1]), o(shape[2])]
        elif t in ("maxpool2d", "avgpool2d"):
            k, p = l["kernel_size"], l.get("padding", 0)
            s = l.get("stride", k)
            layers.append((nn.MaxPool2d if t == "maxpool2d" else nn.AvgPool2d)(k, s, p))
            shape = [shape[0], (shape[1] + 2 * p - k) // s + 1, (shape[2] + 2 * p - k) // s + 1]
        elif t == "adaptiveavgpool2d":
            o = l.get("output_size", 1)
            layers.append(nn.AdaptiveAvgPool2d(o))
            shape = [shape[0], o, o]
        elif t == "batchnorm2d":
            layers.append(nn.BatchNorm2d(shape[0], eps=l.get("eps", 1e-5), momentum=l.get("momentum", 0.1)))
        elif t == "residual":
            out, s = l.get("out_channels", shape[0]), l.get("stride", 1)
            layers.append(BasicBlock(shape[0], out, s))
            shape = [out, (shape[1] - 1) // s + 1, (shape[2] - 1) // s + 1]
        elif t == "flatten":
            layers.append(nn.Flatten())
            shape = [int(np.prod(shape))]
        elif t == "linear":
            out = classes if l["out_features"] == "classes" else l["out_features"]
            layers.append(nn.Linear(shape[0], out, bias=l.get("bias", True)))
            shape = [out]
        elif t == "relu":
            layers.append(nn.ReLU())
        elif t == "gelu":
            layers.append(nn.GELU())
        elif t in ("relu6", "hardsigmoid", "hardswish", "silu"):
            layers.append({"relu6": nn.ReLU6, "hardsigmoid": nn.Hardsigmoid, "hardswish": nn.Hardswish, "silu": nn.SiLU}[t]())
        elif t == "dropout":
            layers.append(nn.Dropout(l.get("p", 0.5)))
        else:
            sys.exit(f"FAIL: check_torch.py has no twin for spec layer type '{t}'")
    return nn.Sequential(*layers)


def twin(case):
    name, cin, size, classes = case["name"], case["channels"], case["size"], case["classes"]
    if case["spec"]:
        return from_spec(case["spec"], cin, size, classes)
    if name in torch_twins.TORCHVISION:
        try:
            import torchvision  # noqa: F401
        except ImportError:
            return None
    try:
        return torch_twins.twin(name, cin, size, classes)
    except ValueError as e:
        sys.exit(f"FAIL: {e}")


def load(model, path):
    tensors, meta = read_safetensors(path)
    model.load_state_dict({k: torch.from_numpy(v) for k, v in tensors.items()}, strict=True)
    return model.eval(), meta


def main():
    torch.set_num_threads(2)
    ember, fixture, work = sys.argv[1:4]
    zoo = os.path.join(work, "zoo")
    print(run([fixture, "zoo", zoo]), end="")
    with torch.no_grad():
        for c in json.load(open(os.path.join(zoo, "cases.json"))):
            base = os.path.join(zoo, c["name"])
            m = twin(c)
            if m is None:
                print(f"SKIPPED {c['name']}: /usr/bin/python3 has no torchvision (apt-get install python3-torchvision)")
                continue
            model, meta = load(m, base + ".safetensors")
            io, _ = read_safetensors(base + ".io.safetensors")
            got = model(torch.from_numpy(io["input_normalised"])).numpy()
            worst = compare(c["name"], got, io["logits"])
            print(f"PASS {c['name']}: load_state_dict(strict=True) into the PyTorch twin; logits within 1e-4 of "
                  f"ember's (largest difference {worst:.2e})")

        r = trained_run(ember, fixture, os.path.join(work, "run"))
        model, meta = load(torch_twins.twin("lenet5", 1, 28, 10), r["safetensors"])
        mean, std = json.loads(meta["mean"]), json.loads(meta["std"])
        x = (torch.from_numpy(r["input"]) - torch.tensor(mean).view(1, -1, 1, 1)) / torch.tensor(std).view(1, -1, 1, 1)
        logits = torch.cat([model(x[i:i + 1000]) for i in range(0, len(x), 1000)]).numpy()
        worst = compare("trained lenet5", logits, r["ember_logits"])
        accuracy = float((logits.argmax(1) == r["labels"]).mean())
        if abs(accuracy - r["accuracy"]) > 1e-9:
            sys.exit(f"FAIL: PyTorch accuracy {accuracy} but `ember eval --json` says {r['accuracy']}")
        print(f"PASS trained lenet5 on {r['what']}: PyTorch {torch.__version__} accuracy {accuracy:.4f} == ember "
              f"eval's {r['accuracy']:.4f}; logits within 1e-4 (largest difference {worst:.2e})")

        # PyTorch's own format: the file torch.save(model.state_dict()) writes, read without trusting it.
        pt = os.path.join(work, "lenet5.pt")
        print(run([ember, "export", r["run"], "-o", pt]), end="")
        sd = torch.load(pt, weights_only=True)
        want, _ = read_safetensors(r["safetensors"])
        if sorted(sd) != sorted(want):
            sys.exit(f"FAIL: {pt} holds {sorted(sd)}, the safetensors export {sorted(want)}")
        for k, v in sd.items():
            w = torch.from_numpy(np.ascontiguousarray(want[k]))
            if v.dtype != w.dtype or v.shape != w.shape or not torch.equal(v, w):
                sys.exit(f"FAIL: {pt}: {k} is {v.dtype} {tuple(v.shape)}, not the safetensors export's tensor")
        lenet = torch_twins.twin("lenet5", 1, 28, 10)
        lenet.load_state_dict(sd, strict=True)
        print(f"PASS {os.path.basename(pt)}: torch.load(weights_only=True) gives the safetensors export's {len(sd)} "
              f"tensors bit for bit; load_state_dict(strict=True) into the twin")


if __name__ == "__main__":
    main()
