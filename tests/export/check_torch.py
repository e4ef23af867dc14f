"""ember's safetensors export in PyTorch: every zoo model's and spec's exported state dict loads with
load_state_dict(strict=True) into its PyTorch twin (mnistnet and lenet5: tests/golden/make_golden.py's;
resnet18/34/50, resnet18_cifar, alexnet and mobilenet_v2: torchvision's own, when python3-torchvision is installed;
the others written here, specs built from their TOML) and gives ember's logits; a trained lenet5's
export gives ember's test-set logits and accuracy.

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
sys.path.insert(0, os.path.join(HERE, "..", "golden"))
from export_common import compare, read_safetensors, run, trained_run  # noqa: E402
import make_golden  # noqa: E402  (the zoo's PyTorch twins)


class BasicBlock(nn.Module):
    """ember's ResidualBlock (torchvision's BasicBlock names)."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        return F.relu(y + (self.downsample(x) if self.downsample is not None else x))


class ResNetSmall(nn.Module):
    def __init__(self, cin, classes):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, 16, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.layer1 = nn.Sequential(BasicBlock(16, 16, 1), BasicBlock(16, 16, 1))
        self.layer2 = nn.Sequential(BasicBlock(16, 32, 2), BasicBlock(32, 32, 1))
        self.layer3 = nn.Sequential(BasicBlock(32, 64, 2), BasicBlock(64, 64, 1))
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.layer3(self.layer2(self.layer1(x)))
        return self.fc(torch.flatten(self.avgpool(x), 1))


class BnCnnFc128(nn.Module):
    """ember's bncnn_fc128 (width 32) and bncnn48_fc128 (width 48): bncnn's two conv stages with
    `width` channels in conv2, then fc1 (-> 128), relu, fc2."""

    def __init__(self, cin, size, classes, width=32):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, width, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.fc1 = nn.Linear(width * (size // 4) ** 2, 128)
        self.fc2 = nn.Linear(128, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        return self.fc2(F.relu(self.fc1(torch.flatten(x, 1))))


class AlexNetCifar(nn.Module):
    def __init__(self, cin, size, classes):
        super().__init__()
        conv = lambda i, o: nn.Conv2d(i, o, 3, padding=1)  # noqa: E731
        self.features = nn.Sequential(
            conv(cin, 64), nn.ReLU(), nn.MaxPool2d(2), conv(64, 192), nn.ReLU(), nn.MaxPool2d(2),
            conv(192, 384), nn.ReLU(), conv(384, 256), nn.ReLU(), conv(256, 256), nn.ReLU(), nn.MaxPool2d(2))
        s = size // 8
        self.classifier = nn.Sequential(
            nn.Dropout(0.5), nn.Linear(256 * s * s, 1024), nn.ReLU(), nn.Dropout(0.5),
            nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, classes))

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


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


def torchvision_twin(name, cin, classes):
    """torchvision's model for ember's resnet18/34/50, resnet18_cifar, alexnet, mobilenet_v2, mobilenet_v3_small,
    efficientnet_b0; None without it.
    A first conv for other than 3 channels, and the CIFAR stem, are swapped in the usual way."""
    try:
        import torchvision
    except ImportError:
        return None
    if name == "resnet18_cifar":
        m = torchvision.models.resnet18(num_classes=classes)
        m.conv1, m.maxpool = nn.Conv2d(cin, 64, 3, 1, 1, bias=False), nn.Identity()
        return m
    m = getattr(torchvision.models, name)(num_classes=classes)
    if cin != 3 and name == "alexnet":
        m.features[0] = nn.Conv2d(cin, 64, 11, 4, 2)
    elif cin != 3 and name == "mobilenet_v2":
        m.features[0][0] = nn.Conv2d(cin, 32, 3, 2, 1, bias=False)
    elif cin != 3 and name in ("mobilenet_v3_small", "efficientnet_b0"):
        stem = m.features[0][0]
        m.features[0][0] = nn.Conv2d(cin, stem.out_channels, 3, 2, 1, bias=False)
    elif cin != 3:
        m.conv1 = nn.Conv2d(cin, 64, 7, 2, 3, bias=False)
    return m


TORCHVISION = ("resnet18", "resnet34", "resnet50", "resnet18_cifar", "alexnet", "mobilenet_v2", "mobilenet_v3_small",
               "efficientnet_b0")


def twin(case):
    name, cin, size, classes = case["name"], case["channels"], case["size"], case["classes"]
    if case["spec"]:
        return from_spec(case["spec"], cin, size, classes)
    if name in ("lenet5", "mnistnet", "bncnn"):
        assert (cin, size, classes) == (1, 28, 10), "make_golden.py's twins are for 1x28x28, 10 classes"
        return make_golden.MODELS[name]()
    if name == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(cin * size * size, 256), nn.ReLU(), nn.Linear(256, classes))
    if name == "bncnn_fc128":
        return BnCnnFc128(cin, size, classes)
    if name == "bncnn48_fc128":
        return BnCnnFc128(cin, size, classes, width=48)
    if name == "resnet_small":
        return ResNetSmall(cin, classes)
    if name == "alexnet_cifar":
        return AlexNetCifar(cin, size, classes)
    if name in TORCHVISION:
        return torchvision_twin(name, cin, classes)
    sys.exit(f"FAIL: check_torch.py has no PyTorch twin for zoo model '{name}'")


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
        model, meta = load(make_golden.LeNet5(), r["safetensors"])
        mean, std = json.loads(meta["mean"]), json.loads(meta["std"])
        x = (torch.from_numpy(r["input"]) - torch.tensor(mean).view(1, -1, 1, 1)) / torch.tensor(std).view(1, -1, 1, 1)
        logits = torch.cat([model(x[i:i + 1000]) for i in range(0, len(x), 1000)]).numpy()
        worst = compare("trained lenet5", logits, r["ember_logits"])
        accuracy = float((logits.argmax(1) == r["labels"]).mean())
        if abs(accuracy - r["accuracy"]) > 1e-9:
            sys.exit(f"FAIL: PyTorch accuracy {accuracy} but `ember eval --json` says {r['accuracy']}")
        print(f"PASS trained lenet5 on {r['what']}: PyTorch {torch.__version__} accuracy {accuracy:.4f} == ember "
              f"eval's {r['accuracy']:.4f}; logits within 1e-4 (largest difference {worst:.2e})")


if __name__ == "__main__":
    main()
