// The model zoo. Every builder returns a fresh model with PyTorch default initialisation drawn
// from `gen` (or the default generator). All return logits (N, num_classes); none applies softmax.
// Inputs are (N, in_channels, image_size, image_size).
//
// mnistnet, lenet5 and bncnn use the submodule names of tests/golden/make_golden.py (conv1, conv2,
// dropout1, dropout2, fc1, fc2[, fc3]; bncnn: conv1, bn1, conv2, bn2, fc), so their state_dict
// keys are PyTorch's.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ember/core/generator.h"
#include "ember/nn/layers.h"

namespace ember::models {

// Flatten -> Linear(in_channels * image_size^2, 256) -> ReLU -> Linear(256, num_classes).
std::shared_ptr<nn::Module> mlp(int64_t num_classes = 10, int64_t in_channels = 1,
                                int64_t image_size = 28, Generator* gen = nullptr);
// conv1 (C->6, 5x5, pad 2) -> relu -> maxpool 2 -> conv2 (6->16, 5x5) -> relu -> maxpool 2 ->
// flatten -> fc1 (16*5*5 = 400 at 28x28) -> relu -> fc2 (120->84) -> relu -> fc3 (84->classes).
std::shared_ptr<nn::Module> lenet5(int64_t num_classes = 10, int64_t in_channels = 1,
                                   int64_t image_size = 28, Generator* gen = nullptr);
// pytorch/examples' MNIST net: conv1 (C->32, 3x3) -> relu -> conv2 (32->64, 3x3) -> relu ->
// maxpool 2 -> dropout1 (0.25) -> flatten -> fc1 (9216 at 28x28 -> 128) -> relu -> dropout2 (0.5)
// -> fc2 (128 -> classes).
std::shared_ptr<nn::Module> mnistnet(int64_t num_classes = 10, int64_t in_channels = 1,
                                     int64_t image_size = 28, Generator* gen = nullptr);
// A small batch-norm CNN, the cheap accurate default candidate for 28x28 grey images (issue 12):
// conv1 (C->16, 3x3, pad 1, no bias) -> bn1 -> relu -> maxpool 2 -> conv2 (16->32, 3x3, pad 1, no
// bias) -> bn2 -> relu -> maxpool 2 -> flatten -> fc (32*(s/4)^2 = 1568 at 28x28 -> classes).
// 20,538 parameters at 28x28 / 10 classes; 2.06 MFLOPs forward (lenet5: 0.83).
std::shared_ptr<nn::Module> bncnn(int64_t num_classes = 10, int64_t in_channels = 1, int64_t image_size = 28,
                                  Generator* gen = nullptr);
// bncnn with a hidden layer: bncnn's two conv stages, then fc1 (32*(s/4)^2 = 1568 at 28x28 -> 128)
// -> relu -> fc2 (128 -> classes). 206,970 parameters at 28x28 / 10 classes; 2.44 MFLOPs forward
// (bncnn: 2.06, lenet5: 0.83).
std::shared_ptr<nn::Module> bncnn_fc128(int64_t num_classes = 10, int64_t in_channels = 1, int64_t image_size = 28,
                                        Generator* gen = nullptr);
// The default model of `ember train` (issue 12): bncnn_fc128 with 48 channels in conv2, so fc1 is
// 48*(s/4)^2 = 2352 at 28x28 -> 128. 309,658 parameters at 28x28 / 10 classes; 3.54 MFLOPs forward.
// Its recipe (settings.h) reaches >= 93% Fashion-MNIST test accuracy (docs/benchmarks.md).
std::shared_ptr<nn::Module> bncnn48_fc128(int64_t num_classes = 10, int64_t in_channels = 1,
                                          int64_t image_size = 28, Generator* gen = nullptr);
// A small ResNet for 28x28 / 32x32: stem conv3x3 (C->16) + BN + ReLU, then layer1 (2 blocks,
// 16 ch), layer2 (2 blocks, 32 ch, stride 2), layer3 (2 blocks, 64 ch, stride 2),
// AdaptiveAvgPool2d(1), flatten, fc (64 -> classes). 14 weight layers, ~0.17 M parameters.
std::shared_ptr<nn::Module> resnet_small(int64_t num_classes = 10, int64_t in_channels = 1,
                                         int64_t image_size = 28, Generator* gen = nullptr);
// AlexNet-style network for 32x32 images (image_size must be a multiple of 8): `features` =
// five 3x3 convs (64, 192, 384, 256, 256) with ReLU and three 2x2 max-pools, `classifier` =
// dropout, fc 256*(s/8)^2 -> 1024, ReLU, dropout, fc 1024 -> 1024, ReLU, fc 1024 -> classes.
std::shared_ptr<nn::Module> alexnet_cifar(int64_t num_classes = 10, int64_t in_channels = 3,
                                          int64_t image_size = 32, Generator* gen = nullptr);

// torchvision's mobile classifiers (issue 26; src/nn/models_mobile.cpp), with torchvision 0.14's
// module tree: the same state_dict keys, shapes, order and buffers (num_batches_tracked included)
// and its init (every conv kaiming_normal_(fan_out) with zero bias, BatchNorm 1/0), so a safetensors
// export loads into torchvision.models.<name>(num_classes=...) with load_state_dict(strict=True).
// in_channels != 3 changes only features.0.0's weight (C input channels). Defaults are
// torchvision's: 1000 classes, RGB, designed for 224x224; every one pools globally, so any
// image_size >= 1 builds the same parameters (at 28x28 the last stage sees 1x1 maps).
// Conv2dNormActivation (conv without bias, BatchNorm2d, activation) is a Sequential with children
// 0, 1[, 2]; SqueezeExcitation has 1x1 convs fc1, fc2 (with bias) around avgpool and activation.
//
// mobilenet_v3_small: features.0 (3x3 stride 2, C -> 16, Hardswish), features.1..11 inverted
// residuals (`block.N`: [expand 1x1], depthwise, [SE: ReLU, Hardsigmoid], project), features.12
// (1x1, 96 -> 576, Hardswish), avgpool, classifier = Linear 576 -> 1024, Hardswish, Dropout(0.2),
// Linear 1024 -> classes. BatchNorm eps 1e-3, momentum 0.01; Linear weights normal(0, 0.01), bias 0.
// 2,542,856 parameters at 1000 classes.
std::shared_ptr<nn::Module> mobilenet_v3_small(int64_t num_classes = 1000, int64_t in_channels = 3,
                                               int64_t image_size = 224, Generator* gen = nullptr);
// efficientnet_b0: features.0 (3x3 stride 2, C -> 32, SiLU), features.1..7 stages of MBConv blocks
// (`block.N`: [expand 1x1], depthwise, SE (SiLU, Sigmoid), project; then `stochastic_depth`, row
// mode, p = 0.2 * block index / 16, on the residual branch only), features.8 (1x1, 320 -> 1280,
// SiLU), avgpool, classifier = Dropout(0.2), Linear 1280 -> classes. BatchNorm eps 1e-5, momentum
// 0.1; Linear weight uniform(-1/sqrt(classes), 1/sqrt(classes)), bias 0. 5,288,548 parameters at
// 1000 classes.
std::shared_ptr<nn::Module> efficientnet_b0(int64_t num_classes = 1000, int64_t in_channels = 3,
                                            int64_t image_size = 224, Generator* gen = nullptr);

// The names create() accepts: "mlp", "lenet5", "mnistnet", "bncnn", "bncnn_fc128", "bncnn48_fc128",
// "resnet_small", "alexnet_cifar", "mobilenet_v3_small", "efficientnet_b0".
std::vector<std::string> names();
// The input size a zoo model was designed for: 28 (the Fashion-MNIST/MNIST models: mlp, lenet5,
// mnistnet, bncnn*), 32 (alexnet_cifar), 224 (mobilenet_v3_small, efficientnet_b0), 0 for
// any size (resnet_small: global average pooling keeps
// its parameters the same at every size) and for names create() does not know (spec files).
int64_t design_size(const std::string& name);
// A warning for a zoo model given images far larger than it was designed for (more than twice its
// design_size per side): its flattened features, and so its first fully connected layer, grow with
// the square of the size (bncnn48_fc128 at 224x224: 19.3 M parameters against 0.31 M at 28x28), and
// such a model trains slowly, in gigabytes, to a poor accuracy. Names the models that fit; ""
// when the size is within reach (or the model is size-independent).
std::string input_size_warning(const std::string& name, int64_t in_channels, int64_t image_size, int64_t num_classes);

// Builds a model by name, or from a model spec file when name ends in .toml (see nn/spec.h);
// ValueError listing the known names for an unknown one.
std::shared_ptr<nn::Module> create(const std::string& name, int64_t num_classes = 10,
                                   int64_t in_channels = 1, int64_t image_size = 28,
                                   Generator* gen = nullptr);

}  // namespace ember::models
