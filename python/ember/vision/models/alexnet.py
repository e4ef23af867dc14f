"""torchvision's AlexNet as an ember.nn Module (features, avgpool, classifier: torchvision's
state-dict keys); alexnet(weights=, progress=, num_classes=, dropout=)."""

from __future__ import annotations

from typing import Any

from ... import flatten
from ... import nn
from ._api import _make_enum, load_weights, num_classes_for, register_model, resolve_weights

__all__ = ["AlexNet", "AlexNet_Weights", "alexnet"]

AlexNet_Weights = _make_enum("AlexNet_Weights")


class AlexNet(nn.Module):
    def __init__(self, num_classes: int = 1000, dropout: float = 0.5) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, kernel_size=11, stride=4, padding=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(64, 192, kernel_size=5, padding=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(192, 384, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(384, 256, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(256, 256, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
        )
        self.avgpool = nn.AdaptiveAvgPool2d((6, 6))
        self.classifier = nn.Sequential(
            nn.Dropout(p=dropout),
            nn.Linear(256 * 6 * 6, 4096),
            nn.ReLU(inplace=True),
            nn.Dropout(p=dropout),
            nn.Linear(4096, 4096),
            nn.ReLU(inplace=True),
            nn.Linear(4096, num_classes),
        )

    def forward(self, x):
        x = self.features(x)
        x = self.avgpool(x)
        x = flatten(x, 1)
        return self.classifier(x)


@register_model
def alexnet(*, weights=None, progress: bool = True, **kwargs: Any) -> AlexNet:
    """AlexNet (torchvision.models.alexnet): weights= an AlexNet_Weights member or its name (the file read
    from torch hub's cache), or a path to a state-dict file."""
    weights = resolve_weights(AlexNet_Weights, weights, kwargs)
    num_classes_for(weights, kwargs)
    model = AlexNet(**kwargs)
    if weights is not None:
        load_weights(model, weights)
    return model


alexnet._weights_enum = AlexNet_Weights
