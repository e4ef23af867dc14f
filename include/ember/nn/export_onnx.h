// A trained model as an ONNX inference graph (opset 17), for onnxruntime and other runtimes.
//
// The graph takes "input": float32 (batch, C, H, W) with pixel values on the [0, 1] scale (pixel /
// 255, as torchvision's ToTensor), normalises it with the training data's per-channel mean and std
// (a Sub and a Div node; none when `mean` is empty) and returns "logits": float32 (batch,
// num_classes). The batch dim is symbolic ("batch"); C, H and W are fixed. Inference semantics:
// Dropout is the identity and BatchNorm2d uses its running statistics, whatever the module's
// training flag. Initializers are named by their state_dict keys ("conv1.weight").
//
// Exported: Sequential, Linear, Conv2d, BatchNorm2d, MaxPool2d, AvgPool2d, AdaptiveAvgPool2d,
// ReLU, GELU (as Erf; opset 17 has no Gelu), Dropout, Flatten, ResidualBlock, Bottleneck, and the
// zoo models (mlp, lenet5, mnistnet, bncnn*, resnet_small, alexnet_cifar, and torchvision's resnet18,
// resnet34, resnet50, resnet18_cifar, alexnet); so every model a spec file can describe.
// Anything else throws NotImplementedError naming the module and its type.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ember/io/onnx.h"
#include "ember/nn/module.h"

namespace ember::nn {

struct OnnxExportOptions {
  std::vector<int64_t> input_shape;  // (C, H, W) of one sample; required
  std::vector<float> mean, std;      // per channel, [0, 1] scale; both empty: no normalisation nodes
  std::string graph_name = "ember";
  std::string doc_string;
  std::vector<std::pair<std::string, std::string>> metadata;  // written as metadata_props
  // Each BatchNorm2d that directly follows a Conv2d folded into the convolution's weight and bias
  // (w * s, (b - running_mean) * s + beta, s = gamma / sqrt(running_var + eps), in float64, as
  // nn::conv_bn_activation folds): the graph has no BatchNormalization node after a Conv, and the
  // folded initializers keep the convolution's names ("<conv>.bias" added where it had none).
  // Off by default: the unfolded graph mirrors the state_dict one initializer per tensor.
  bool fold_batch_norm = false;
};

// Throws ValueError for bad options (input_shape not 3 positive dims, mean/std sizes != C, std <= 0),
// NotImplementedError for a module the exporter does not know.
io::OnnxModel to_onnx(const Module& model, const OnnxExportOptions& options);

}  // namespace ember::nn
