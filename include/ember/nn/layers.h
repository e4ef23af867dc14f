// Layers, each a Module with PyTorch's parameter names, shapes, defaults and initialisation:
// weights kaiming_uniform_(a = sqrt(5)) (= U(-1/sqrt(fan_in), 1/sqrt(fan_in))), biases
// U(-1/sqrt(fan_in), 1/sqrt(fan_in)); BatchNorm weight 1, bias 0, running_mean 0, running_var 1.
// Random draws come from `gen` when given, else from the default generator (ember::manual_seed).
// Create them with std::make_shared<nn::Linear>(784, 256).
//
// Shapes: Linear (*, in) -> (*, out); the 2-D layers take (N, C, H, W).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "ember/core/generator.h"
#include "ember/nn/module.h"

namespace ember::nn {

namespace functional {
enum class ConvActivation : uint8_t;  // ember/ops.h
}

// y = x W^T + b; weight (out, in), bias (out).
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true, Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  int64_t forward_flops(const Shape& in, const Shape& out) const override;
  void reset_parameters(Generator* gen = nullptr);

  int64_t in_features, out_features;
  Tensor weight, bias;  // bias undefined when bias = false
};

struct Conv2dOptions {
  std::array<int64_t, 2> stride{1, 1}, padding{0, 0}, dilation{1, 1};
  int64_t groups = 1;
  bool bias = true;
};
// weight (out, in/groups, kH, kW), bias (out).
class Conv2d : public Module {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, std::array<int64_t, 2> kernel_size,
         Conv2dOptions opt = {}, Generator* gen = nullptr);
  Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, Conv2dOptions opt = {},
         Generator* gen = nullptr)
      : Conv2d(in_channels, out_channels, {kernel_size, kernel_size}, opt, gen) {}
  Tensor forward(const Tensor& x) override;
  // act(forward(x)) as one op (nn::functional::conv2d_activation: the activation fused into the
  // convolution where the backend can), called like operator() (summary() lists this layer).
  Tensor forward_then(nn::functional::ConvActivation act, const Tensor& x);
  std::string extra_repr() const override;
  int64_t forward_flops(const Shape& in, const Shape& out) const override;
  void reset_parameters(Generator* gen = nullptr);

  int64_t in_channels, out_channels;
  std::array<int64_t, 2> kernel_size;
  Conv2dOptions options;
  Tensor weight, bias;
};

// Training: normalises with the batch statistics, updates running_mean/var (momentum as
// PyTorch: running = (1 - m) running + m batch, unbiased variance) and counts
// num_batches_tracked. Eval: uses the running statistics.
class BatchNorm2d : public Module {
 public:
  explicit BatchNorm2d(int64_t num_features, double eps = 1e-5, double momentum = 0.1,
                       bool affine = true);
  Tensor forward(const Tensor& x) override;
  // act(forward(x) [+ residual]), ReLU and ReLU6 in the batch norm's own passes
  // (F::batch_norm_activation, F::batch_norm_add_activation).
  Tensor forward_then(nn::functional::ConvActivation act, const Tensor& x, const Tensor& residual = Tensor());
  std::string extra_repr() const override;

  int64_t num_features;
  double eps, momentum;
  bool affine;
  Tensor weight, bias;                    // (C) when affine
  Tensor running_mean, running_var;       // (C) buffers
  Tensor num_batches_tracked;             // 0-d int64 buffer

 private:
  // The shape checks, num_batches_tracked, and the op (forward's and forward_then's one body).
  Tensor run(nn::functional::ConvActivation act, const Tensor& x, const Tensor& residual);
};

// act(bn(conv(x))) (act None: bn(conv(x))). In training, and in evaluation outside a
// FoldBatchNorm scope, the ops as written (conv2d with act fused where the backend can). In
// evaluation inside a FoldBatchNorm scope, one convolution with the batch norm folded into its
// weight and bias, w * s and (b - running_mean) * s + beta with s = gamma / sqrt(running_var + eps)
// (computed in float64, rounded once to float32), and act fused: the values of the unfolded ops
// within float32 rounding (tests/unit/test_conv_fusion.cpp), one pass over the output instead of
// three. Both layers are listed by summary() either way.
Tensor conv_bn_activation(Conv2d& conv, BatchNorm2d& bn, const Tensor& x, nn::functional::ConvActivation act);

// act(bn(conv(x)) + shortcut()), a residual block's tail: conv, then shortcut() (the block's
// downsample or its input), then the batch norm, the add and act as one op where
// F::batch_norm_add_activation fuses them (training, and evaluation outside FoldBatchNorm; folded:
// the folded convolution, the add, act). Under summary() the ops as written, in their order.
Tensor conv_bn_add_activation(Conv2d& conv, BatchNorm2d& bn, const Tensor& x, const std::function<Tensor()>& shortcut,
                              nn::functional::ConvActivation act);

// A scope (this thread) in which evaluation-mode conv_bn_activation folds its batch norm into the
// convolution: `ember eval` and `predict` open one; the golden tests, training and a plain eval()
// forward keep the unfolded ops. Nestable.
class FoldBatchNorm {
 public:
  FoldBatchNorm();
  ~FoldBatchNorm();
  FoldBatchNorm(const FoldBatchNorm&) = delete;
  FoldBatchNorm& operator=(const FoldBatchNorm&) = delete;
  static bool active();

 private:
  bool prev_;
};

// kernel_size and stride as PyTorch; stride 0 means "= kernel_size".
class MaxPool2d : public Module {
 public:
  explicit MaxPool2d(int64_t kernel_size, int64_t stride = 0, int64_t padding = 0, bool ceil_mode = false);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  int64_t kernel_size, stride, padding;
  bool ceil_mode;
};

class AvgPool2d : public Module {
 public:
  explicit AvgPool2d(int64_t kernel_size, int64_t stride = 0, int64_t padding = 0,
                     bool ceil_mode = false, bool count_include_pad = true);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  int64_t kernel_size, stride, padding;
  bool ceil_mode, count_include_pad;
};

class AdaptiveAvgPool2d : public Module {
 public:
  explicit AdaptiveAvgPool2d(std::array<int64_t, 2> output_size);
  explicit AdaptiveAvgPool2d(int64_t output_size) : AdaptiveAvgPool2d({output_size, output_size}) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::array<int64_t, 2> output_size;
};

class ReLU : public Module {
 public:
  ReLU() : Module("ReLU") {}
  Tensor forward(const Tensor& x) override;
};

// Exact (erf) GELU, PyTorch's default.
class GELU : public Module {
 public:
  GELU() : Module("GELU") {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override { return "approximate='none'"; }
};

// The MobileNet / EfficientNet activations (ember/ops.h). `inplace` is accepted for PyTorch's
// signature and ignored: the output is always a new tensor.
class ReLU6 : public Module {
 public:
  explicit ReLU6(bool inplace = false) : Module("ReLU6"), inplace(inplace) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override { return inplace ? "inplace=True" : ""; }
  bool inplace;
};
class Hardsigmoid : public Module {
 public:
  explicit Hardsigmoid(bool inplace = false) : Module("Hardsigmoid"), inplace(inplace) {}
  Tensor forward(const Tensor& x) override;
  bool inplace;
};
class Hardswish : public Module {
 public:
  explicit Hardswish(bool inplace = false) : Module("Hardswish"), inplace(inplace) {}
  Tensor forward(const Tensor& x) override;
  bool inplace;
};
class SiLU : public Module {
 public:
  explicit SiLU(bool inplace = false) : Module("SiLU"), inplace(inplace) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override { return inplace ? "inplace=True" : ""; }
  bool inplace;
};

// torchvision.ops.StochasticDepth: in training mode, drops whole samples (mode "row") or the
// whole batch (mode "batch") with probability p and scales the survivors by 1/(1-p); the identity
// in eval mode. Draws come from `gen` (kept by pointer; it must outlive the module) or the
// default generator, as Dropout's.
class StochasticDepth : public Module {
 public:
  explicit StochasticDepth(double p, std::string mode = "row", Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  double p;
  std::string mode;
  Generator* gen;
};

// Zeroes elements with probability p in training mode and scales the rest by 1/(1-p);
// the identity in eval mode. Masks come from `gen` (kept by pointer; it must outlive the
// module) or the default generator.
class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5, Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  double p;
  Generator* gen;
};

class Flatten : public Module {
 public:
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  int64_t start_dim, end_dim;
};

// Runs its children in order; they are named "0", "1", ... as PyTorch's nn.Sequential.
class Sequential : public Module {
 public:
  Sequential() : Module("Sequential") {}
  Sequential(std::initializer_list<std::shared_ptr<Module>> modules);
  void push_back(std::shared_ptr<Module> module);
  size_t size() const { return named_children().size(); }
  // IndexError when out of range.
  std::shared_ptr<Module> operator[](size_t index) const;
  template <class M> std::shared_ptr<M> at(size_t index) const {
    return std::dynamic_pointer_cast<M>((*this)[index]);
  }
  Tensor forward(const Tensor& x) override;
};

// ResNet basic block: conv3x3(stride) -> BN -> ReLU -> conv3x3 -> BN, plus the shortcut, then
// ReLU. The shortcut is the identity, or `downsample` = Sequential(conv1x1(stride), BN) when the
// stride is not 1 or the channel count changes (torchvision's BasicBlock names).
class ResidualBlock : public Module {
 public:
  ResidualBlock(int64_t in_channels, int64_t out_channels, int64_t stride = 1, Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override;

  std::shared_ptr<Conv2d> conv1, conv2;
  std::shared_ptr<BatchNorm2d> bn1, bn2;
  std::shared_ptr<Sequential> downsample;  // null for the identity shortcut
};

// ResNet bottleneck block, torchvision's `Bottleneck` (ResNet v1.5: the stride is on the 3x3):
// conv1x1 (in -> width) -> BN -> ReLU -> conv3x3 (width -> width, stride) -> BN -> ReLU ->
// conv1x1 (width -> width * 4) -> BN, plus the shortcut, then ReLU. width = planes for the plain
// ResNets (resnet50: planes 64, 128, 256, 512). The shortcut is the identity, or `downsample` =
// Sequential(conv1x1(stride), BN) when the stride is not 1 or in != planes * 4. Names conv1..3,
// bn1..3, downsample.0/.1 as torchvision's.
class Bottleneck : public Module {
 public:
  static constexpr int64_t kExpansion = 4;
  Bottleneck(int64_t in_channels, int64_t planes, int64_t stride = 1, Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override;

  std::shared_ptr<Conv2d> conv1, conv2, conv3;
  std::shared_ptr<BatchNorm2d> bn1, bn2, bn3;
  std::shared_ptr<Sequential> downsample;  // null for the identity shortcut
};

}  // namespace ember::nn
