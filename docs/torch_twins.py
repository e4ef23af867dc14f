"""The PyTorch twin of every model in ember's zoo (docs/export.md): the module whose state_dict()
keys and shapes are those of `ember export RUN -o model.safetensors`, so that

    from torch_twins import twin
    model = twin("bncnn48_fc128", in_channels=1, image_size=28, num_classes=10)
    model.load_state_dict(safetensors.torch.load_file("model.safetensors"), strict=True)

gives ember's logits for the same (normalised) input. The arguments are the run's: its input's
channels and size (`ember weights info model.safetensors` and the file's __metadata__ "input_shape"
say them) and its class count. ember's own models are written out here; torchvision's
architectures are torchvision's own modules, with the first convolution swapped for grey images
and the CIFAR stem for resnet18_cifar, as ember builds them.

This file is what the ctest `export_torch` (tests/export/check_torch.py) loads every zoo model's
export into, so it stays what ember exports. Needs torch (and torchvision for its architectures)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class MnistNet(nn.Module):
    """ember's mnistnet: pytorch/examples' mnist/main.py Net, returning logits (no log_softmax)."""

    def __init__(self, in_channels=1, image_size=28, num_classes=10):
        super().__init__()
        pooled = (image_size - 4) // 2
        self.conv1 = nn.Conv2d(in_channels, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(64 * pooled * pooled, 128)
        self.fc2 = nn.Linear(128, num_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv2(F.relu(self.conv1(x)))), 2)
        x = torch.flatten(self.dropout1(x), 1)
        return self.fc2(self.dropout2(F.relu(self.fc1(x))))


class LeNet5(nn.Module):
    """ember's lenet5: LeCun's LeNet-5 with ReLU and max pooling, conv1 padded to keep 28x28."""

    def __init__(self, in_channels=1, image_size=28, num_classes=10):
        super().__init__()
        s = (image_size // 2 - 4) // 2
        self.conv1 = nn.Conv2d(in_channels, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * s * s, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, num_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(torch.flatten(x, 1))))))


class BnCnn(nn.Module):
    """ember's bncnn (hidden 0: one linear layer `fc`), bncnn_fc128 (width 32) and bncnn48_fc128
    (width 48; the default model of `ember train`): two 3x3 conv + batch norm + relu + 2x2 max-pool
    stages, then fc, or fc1 (-> hidden) + relu + fc2."""

    def __init__(self, in_channels=1, image_size=28, num_classes=10, width=32, hidden=0):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, width, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        features = width * (image_size // 4) ** 2
        if hidden:
            self.fc1 = nn.Linear(features, hidden)
            self.fc2 = nn.Linear(hidden, num_classes)
        else:
            self.fc = nn.Linear(features, num_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = torch.flatten(F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2), 1)
        return self.fc2(F.relu(self.fc1(x))) if hasattr(self, "fc1") else self.fc(x)


class BasicBlock(nn.Module):
    """ember's ResidualBlock, with torchvision's BasicBlock names."""

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
    """ember's resnet_small (the default model for an image folder): a 3x3 stem of 16 channels,
    three stages of two residual blocks (16, 32, 64 channels; stride 2 from the second), global
    average pooling, fc. It takes any image size."""

    def __init__(self, in_channels=3, image_size=None, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, 16, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.layer1 = nn.Sequential(BasicBlock(16, 16, 1), BasicBlock(16, 16, 1))
        self.layer2 = nn.Sequential(BasicBlock(16, 32, 2), BasicBlock(32, 32, 1))
        self.layer3 = nn.Sequential(BasicBlock(32, 64, 2), BasicBlock(64, 64, 1))
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(64, num_classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.layer3(self.layer2(self.layer1(x)))
        return self.fc(torch.flatten(self.avgpool(x), 1))


class AlexNetCifar(nn.Module):
    """ember's alexnet_cifar: AlexNet's five convolutions at 3x3 for 32x32 images, three max-pools,
    a classifier of 1024-wide layers with dropout."""

    def __init__(self, in_channels=3, image_size=32, num_classes=10):
        super().__init__()

        def conv(i, o):
            return nn.Conv2d(i, o, 3, padding=1)

        self.features = nn.Sequential(
            conv(in_channels, 64), nn.ReLU(), nn.MaxPool2d(2), conv(64, 192), nn.ReLU(), nn.MaxPool2d(2),
            conv(192, 384), nn.ReLU(), conv(384, 256), nn.ReLU(), conv(256, 256), nn.ReLU(), nn.MaxPool2d(2))
        s = image_size // 8
        self.classifier = nn.Sequential(
            nn.Dropout(0.5), nn.Linear(256 * s * s, 1024), nn.ReLU(), nn.Dropout(0.5),
            nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, num_classes))

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


def torchvision_model(name, in_channels=3, num_classes=1000):
    """torchvision's module for ember's resnet18/34/50, resnet18_cifar, alexnet, mobilenet_v2,
    mobilenet_v3_small and efficientnet_b0. For other than 3 input channels the first convolution
    is swapped for one of in_channels inputs; resnet18_cifar is resnet18 with a 3x3 stride-1 stem
    and no max-pool, for 32x32 images."""
    import torchvision

    if name == "resnet18_cifar":
        m = torchvision.models.resnet18(num_classes=num_classes)
        m.conv1, m.maxpool = nn.Conv2d(in_channels, 64, 3, 1, 1, bias=False), nn.Identity()
        return m
    m = getattr(torchvision.models, name)(num_classes=num_classes)
    if in_channels == 3:
        return m
    if name == "alexnet":
        m.features[0] = nn.Conv2d(in_channels, 64, 11, 4, 2)
    elif name in ("mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0"):
        stem = m.features[0][0]
        m.features[0][0] = nn.Conv2d(in_channels, stem.out_channels, 3, 2, 1, bias=False)
    else:  # the ResNets
        m.conv1 = nn.Conv2d(in_channels, 64, 7, 2, 3, bias=False)
    return m


TORCHVISION = ("resnet18", "resnet34", "resnet50", "resnet18_cifar", "alexnet", "mobilenet_v2", "mobilenet_v3_small",
               "efficientnet_b0")


def twin(name, in_channels, image_size, num_classes):
    """The PyTorch module of ember's zoo model `name` for inputs of (in_channels, image_size,
    image_size) and num_classes outputs: load an export's state dict into it with strict=True."""
    c, s, k = in_channels, image_size, num_classes
    if name == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(c * s * s, 256), nn.ReLU(), nn.Linear(256, k))
    ours = {
        "lenet5": lambda: LeNet5(c, s, k),
        "mnistnet": lambda: MnistNet(c, s, k),
        "bncnn": lambda: BnCnn(c, s, k),
        "bncnn_fc128": lambda: BnCnn(c, s, k, width=32, hidden=128),
        "bncnn48_fc128": lambda: BnCnn(c, s, k, width=48, hidden=128),
        "resnet_small": lambda: ResNetSmall(c, s, k),
        "alexnet_cifar": lambda: AlexNetCifar(c, s, k),
    }
    if name in ours:
        return ours[name]()
    if name in TORCHVISION:
        return torchvision_model(name, c, k)
    raise ValueError(f"no PyTorch twin for '{name}': a model spec (*.toml) is rebuilt from its TOML, layer by layer")
