"""ember.vision.models, as torchvision.models: the architectures (resnet18/34/50, alexnet, vgg11/16[_bn],
mobilenet_v2, mobilenet_v3_small/large, efficientnet_b0) as ember.nn Modules with torchvision's
constructors, attribute names and state-dict keys, and their weights enums. A weights file is read
from torch hub's cache (never downloaded). A torchvision.models name ember lacks raises
NotInEmberError naming it."""

from ._api import Weights, WeightsEnum, get_model, get_model_builder, get_model_weights, get_weight, list_models
from .alexnet import AlexNet, AlexNet_Weights, alexnet
from .efficientnet import EfficientNet, EfficientNet_B0_Weights, efficientnet_b0
from .mobilenetv2 import MobileNet_V2_Weights, MobileNetV2, mobilenet_v2
from .mobilenetv3 import MobileNet_V3_Large_Weights, MobileNet_V3_Small_Weights, MobileNetV3, mobilenet_v3_large, \
    mobilenet_v3_small
from .resnet import ResNet, ResNet18_Weights, ResNet34_Weights, ResNet50_Weights, resnet18, resnet34, resnet50
from .vgg import VGG, VGG11_BN_Weights, VGG11_Weights, VGG16_BN_Weights, VGG16_Weights, vgg11, vgg11_bn, vgg16, vgg16_bn
from . import efficientnet, mobilenetv2, mobilenetv3, resnet, vgg  # noqa: E402
from ...errors import NotInEmberError as _NotInEmber

__all__ = ["AlexNet", "AlexNet_Weights", "alexnet", "EfficientNet", "EfficientNet_B0_Weights", "efficientnet_b0",
           "MobileNetV2", "MobileNet_V2_Weights", "mobilenet_v2", "MobileNetV3", "MobileNet_V3_Large_Weights",
           "MobileNet_V3_Small_Weights", "mobilenet_v3_large", "mobilenet_v3_small", "ResNet", "ResNet18_Weights",
           "ResNet34_Weights", "ResNet50_Weights", "resnet18", "resnet34", "resnet50", "VGG", "VGG11_Weights",
           "VGG11_BN_Weights", "VGG16_Weights", "VGG16_BN_Weights", "vgg11", "vgg11_bn", "vgg16", "vgg16_bn",
           "Weights", "WeightsEnum", "get_model", "get_model_builder", "get_model_weights", "get_weight",
           "list_models"]

# torchvision 0.29's torchvision.models names that ember lacks: each raises NotInEmberError naming it.
_TORCHVISION_ONLY = frozenset([
    "ConvNeXt", "ConvNeXt_Base_Weights", "ConvNeXt_Large_Weights", "ConvNeXt_Small_Weights",
    "ConvNeXt_Tiny_Weights", "DenseNet", "DenseNet121_Weights", "DenseNet161_Weights", "DenseNet169_Weights",
    "DenseNet201_Weights", "EfficientNet_B1_Weights", "EfficientNet_B2_Weights", "EfficientNet_B3_Weights",
    "EfficientNet_B4_Weights", "EfficientNet_B5_Weights", "EfficientNet_B6_Weights", "EfficientNet_B7_Weights",
    "EfficientNet_V2_L_Weights", "EfficientNet_V2_M_Weights", "EfficientNet_V2_S_Weights", "GoogLeNet",
    "GoogLeNetOutputs", "GoogLeNet_Weights", "Inception3", "InceptionOutputs", "Inception_V3_Weights", "MNASNet",
    "MNASNet0_5_Weights", "MNASNet0_75_Weights", "MNASNet1_0_Weights", "MNASNet1_3_Weights", "MaxVit",
    "MaxVit_T_Weights", "RegNet", "RegNet_X_16GF_Weights", "RegNet_X_1_6GF_Weights", "RegNet_X_32GF_Weights",
    "RegNet_X_3_2GF_Weights", "RegNet_X_400MF_Weights", "RegNet_X_800MF_Weights", "RegNet_X_8GF_Weights",
    "RegNet_Y_128GF_Weights", "RegNet_Y_16GF_Weights", "RegNet_Y_1_6GF_Weights", "RegNet_Y_32GF_Weights",
    "RegNet_Y_3_2GF_Weights", "RegNet_Y_400MF_Weights", "RegNet_Y_800MF_Weights", "RegNet_Y_8GF_Weights",
    "ResNeXt101_32X8D_Weights", "ResNeXt101_64X4D_Weights", "ResNeXt50_32X4D_Weights", "ResNet101_Weights",
    "ResNet152_Weights", "ShuffleNetV2", "ShuffleNet_V2_X0_5_Weights", "ShuffleNet_V2_X1_0_Weights",
    "ShuffleNet_V2_X1_5_Weights", "ShuffleNet_V2_X2_0_Weights", "SqueezeNet", "SqueezeNet1_0_Weights",
    "SqueezeNet1_1_Weights", "SwinTransformer", "Swin_B_Weights", "Swin_S_Weights", "Swin_T_Weights",
    "Swin_V2_B_Weights", "Swin_V2_S_Weights", "Swin_V2_T_Weights", "VGG13_BN_Weights", "VGG13_Weights",
    "VGG19_BN_Weights", "VGG19_Weights", "ViT_B_16_Weights", "ViT_B_32_Weights", "ViT_H_14_Weights",
    "ViT_L_16_Weights", "ViT_L_32_Weights", "VisionTransformer", "Wide_ResNet101_2_Weights",
    "Wide_ResNet50_2_Weights", "convnext", "convnext_base", "convnext_large", "convnext_small", "convnext_tiny",
    "densenet", "densenet121", "densenet161", "densenet169", "densenet201", "detection", "efficientnet_b1",
    "efficientnet_b2", "efficientnet_b3", "efficientnet_b4", "efficientnet_b5", "efficientnet_b6",
    "efficientnet_b7", "efficientnet_v2_l", "efficientnet_v2_m", "efficientnet_v2_s", "googlenet", "inception",
    "inception_v3", "maxvit", "maxvit_t", "mnasnet", "mnasnet0_5", "mnasnet0_75", "mnasnet1_0", "mnasnet1_3",
    "optical_flow", "quantization", "regnet", "regnet_x_16gf", "regnet_x_1_6gf", "regnet_x_32gf", "regnet_x_3_2gf",
    "regnet_x_400mf", "regnet_x_800mf", "regnet_x_8gf", "regnet_y_128gf", "regnet_y_16gf", "regnet_y_1_6gf",
    "regnet_y_32gf", "regnet_y_3_2gf", "regnet_y_400mf", "regnet_y_800mf", "regnet_y_8gf", "resnet101", "resnet152",
    "resnext101_32x8d", "resnext101_64x4d", "resnext50_32x4d", "segmentation", "shufflenet_v2_x0_5",
    "shufflenet_v2_x1_0", "shufflenet_v2_x1_5", "shufflenet_v2_x2_0", "shufflenetv2", "squeezenet", "squeezenet1_0",
    "squeezenet1_1", "swin_b", "swin_s", "swin_t", "swin_transformer", "swin_v2_b", "swin_v2_s", "swin_v2_t",
    "vgg13", "vgg13_bn", "vgg19", "vgg19_bn", "video", "vision_transformer", "vit_b_16", "vit_b_32", "vit_h_14",
    "vit_l_16", "vit_l_32", "wide_resnet101_2", "wide_resnet50_2"
])


def __getattr__(name: str):
    if name in _TORCHVISION_ONLY:
        raise _NotInEmber(f"torchvision.models.{name} is not implemented in ember yet; ember.vision.models.__all__ "
                          "lists the architectures ember has")
    raise AttributeError(f"module 'ember.vision.models' has no attribute '{name}'")
