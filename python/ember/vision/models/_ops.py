"""The building blocks torchvision's models take from torchvision.ops (Conv2dNormActivation,
SqueezeExcitation, StochasticDepth) and models._utils (_make_divisible), with torchvision's
attribute names, so the state-dict keys of the models built on them are torchvision's."""

from __future__ import annotations

from typing import Callable, Optional

from ... import rand
from ... import nn
from ...nn import Module


def _make_divisible(v: float, divisor: int, min_value: Optional[int] = None) -> int:
    """v rounded to a multiple of divisor, never more than 10% below v (the MobileNet channel rule)."""
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


class Conv2dNormActivation(nn.Sequential):
    """Conv2d, then norm_layer, then activation_layer, as Sequential children 0, 1, 2."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size=3, stride=1, padding=None, groups: int = 1,
                 norm_layer: Optional[Callable[..., Module]] = nn.BatchNorm2d,
                 activation_layer: Optional[Callable[..., Module]] = nn.ReLU, dilation=1,
                 inplace: Optional[bool] = True, bias: Optional[bool] = None) -> None:
        if padding is None:
            if isinstance(kernel_size, int) and isinstance(dilation, int):
                padding = (kernel_size - 1) // 2 * dilation
            else:
                ks = (kernel_size, kernel_size) if isinstance(kernel_size, int) else tuple(kernel_size)
                dl = (dilation, dilation) if isinstance(dilation, int) else tuple(dilation)
                padding = tuple((ks[i] - 1) // 2 * dl[i] for i in range(2))
        if bias is None:
            bias = norm_layer is None
        layers = [nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding, dilation=dilation, groups=groups,
                            bias=bias)]
        if norm_layer is not None:
            layers.append(norm_layer(out_channels))
        if activation_layer is not None:
            params = {} if inplace is None else {"inplace": inplace}
            layers.append(activation_layer(**params))
        super().__init__(*layers)
        self.out_channels = out_channels


class SqueezeExcitation(Module):
    """Squeeze-and-excitation: input scaled per channel by scale_activation(fc2(activation(fc1(avgpool(input)))))."""

    def __init__(self, input_channels: int, squeeze_channels: int, activation: Callable[..., Module] = nn.ReLU,
                 scale_activation: Callable[..., Module] = nn.Sigmoid) -> None:
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(input_channels, squeeze_channels, 1)
        self.fc2 = nn.Conv2d(squeeze_channels, input_channels, 1)
        self.activation = activation()
        self.scale_activation = scale_activation()

    def _scale(self, input):
        scale = self.avgpool(input)
        scale = self.fc1(scale)
        scale = self.activation(scale)
        scale = self.fc2(scale)
        return self.scale_activation(scale)

    def forward(self, input):
        scale = self._scale(input)
        return scale * input


def stochastic_depth(input, p: float, mode: str, training: bool = True):
    """torchvision.ops.stochastic_depth: in training, zeroes whole rows ('row': one draw per sample) or
    the whole batch ('batch': one draw) with probability p and scales survivors by 1/(1-p); the
    identity in eval or when p is 0."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"drop probability has to be between 0 and 1, but got {p}")
    if mode not in ["batch", "row"]:
        raise ValueError(f"mode has to be either 'batch' or 'row', but got {mode}")
    if not training or p == 0.0:
        return input
    survival_rate = 1.0 - p
    size = [input.shape[0]] + [1] * (input.ndim - 1) if mode == "row" else [1] * input.ndim
    # Bernoulli(survival_rate) draws as uniform < rate (ember has no bernoulli_): the same distribution
    noise = (rand(size, device=input.device) < survival_rate).to(input.dtype)
    if survival_rate > 0.0:
        noise.div_(survival_rate)
    return input * noise


class StochasticDepth(Module):
    def __init__(self, p: float, mode: str) -> None:
        super().__init__()
        self.p = p
        self.mode = mode

    def forward(self, input):
        return stochastic_depth(input, self.p, self.mode, self.training)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(p={self.p}, mode={self.mode})"
