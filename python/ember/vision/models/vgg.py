"""torchvision's VGG (vgg11, vgg11_bn, vgg16, vgg16_bn) as ember.nn Modules: features (make_layers'
Sequential), avgpool, classifier — torchvision's state-dict keys."""

from __future__ import annotations

from typing import Any, Dict, List, Union

from ... import flatten
from ... import nn
from ._api import _make_enum, load_weights, num_classes_for, register_model, resolve_weights

__all__ = ["VGG", "VGG11_Weights", "VGG11_BN_Weights", "VGG16_Weights", "VGG16_BN_Weights", "vgg11", "vgg11_bn",
           "vgg16", "vgg16_bn"]

VGG11_Weights = _make_enum("VGG11_Weights")
VGG11_BN_Weights = _make_enum("VGG11_BN_Weights")
VGG16_Weights = _make_enum("VGG16_Weights")
VGG16_BN_Weights = _make_enum("VGG16_BN_Weights")


class VGG(nn.Module):
    def __init__(self, features: nn.Module, num_classes: int = 1000, init_weights: bool = True,
                 dropout: float = 0.5) -> None:
        super().__init__()
        self.features = features
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096),
            nn.ReLU(True),
            nn.Dropout(p=dropout),
            nn.Linear(4096, 4096),
            nn.ReLU(True),
            nn.Dropout(p=dropout),
            nn.Linear(4096, num_classes),
        )
        if init_weights:
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                    if m.bias is not None:
                        nn.init.constant_(m.bias, 0)
                elif isinstance(m, nn.BatchNorm2d):
                    nn.init.constant_(m.weight, 1)
                    nn.init.constant_(m.bias, 0)
                elif isinstance(m, nn.Linear):
                    nn.init.normal_(m.weight, 0, 0.01)
                    nn.init.constant_(m.bias, 0)

    def forward(self, x):
        x = self.features(x)
        x = self.avgpool(x)
        x = flatten(x, 1)
        return self.classifier(x)


def make_layers(cfg: List[Union[str, int]], batch_norm: bool = False) -> nn.Sequential:
    layers: List[nn.Module] = []
    in_channels = 3
    for v in cfg:
        if v == "M":
            layers += [nn.MaxPool2d(kernel_size=2, stride=2)]
        else:
            conv2d = nn.Conv2d(in_channels, v, kernel_size=3, padding=1)
            if batch_norm:
                layers += [conv2d, nn.BatchNorm2d(v), nn.ReLU(inplace=True)]
            else:
                layers += [conv2d, nn.ReLU(inplace=True)]
            in_channels = v
    return nn.Sequential(*layers)


cfgs: Dict[str, List[Union[str, int]]] = {
    "A": [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "B": [64, 64, "M", 128, 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "D": [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"],
    "E": [64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M", 512, 512, 512, 512, "M"],
}


def _vgg(cfg: str, batch_norm: bool, enum_cls, weights: Any, progress: bool, **kwargs: Any) -> VGG:
    weights = resolve_weights(enum_cls, weights, kwargs)
    if weights is not None:
        kwargs["init_weights"] = False  # the file overwrites every parameter
    num_classes_for(weights, kwargs)
    model = VGG(make_layers(cfgs[cfg], batch_norm=batch_norm), **kwargs)
    if weights is not None:
        load_weights(model, weights)
    return model


@register_model
def vgg11(*, weights=None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-11 (torchvision.models.vgg11): weights= a VGG11_Weights member or its name, or a path."""
    return _vgg("A", False, VGG11_Weights, weights, progress, **kwargs)


@register_model
def vgg11_bn(*, weights=None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-11 with batch norm (torchvision.models.vgg11_bn)."""
    return _vgg("A", True, VGG11_BN_Weights, weights, progress, **kwargs)


@register_model
def vgg16(*, weights=None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-16 (torchvision.models.vgg16): weights= a VGG16_Weights member or its name, or a path."""
    return _vgg("D", False, VGG16_Weights, weights, progress, **kwargs)


@register_model
def vgg16_bn(*, weights=None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-16 with batch norm (torchvision.models.vgg16_bn)."""
    return _vgg("D", True, VGG16_BN_Weights, weights, progress, **kwargs)


vgg11._weights_enum = VGG11_Weights
vgg11_bn._weights_enum = VGG11_BN_Weights
vgg16._weights_enum = VGG16_Weights
vgg16_bn._weights_enum = VGG16_BN_Weights
