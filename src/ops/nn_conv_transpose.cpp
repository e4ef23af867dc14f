// conv_transpose2d (the adjoint of conv2d: its forward is conv2d's input-gradient kernel, its input
// gradient conv2d's forward kernel, its weight gradient conv2d's weight-gradient kernel with the two
// activations' roles swapped), and the 1-D convolutions and string paddings built on the 2-D ones.
#include <string>

#include "ember/autograd/node.h"
#include "ember/ops.h"
#include "ember/ops_nn.h"
#include "kernels/nn_kernels.h"
#include "ops/util.h"

namespace ember::nn::functional {

namespace {

// The conv2d that conv_transpose2d is the adjoint of: input (N, C_out, OH, OW), weight (C_in,
// C_out/groups, kH, kW) read as conv2d's (C_out_conv, C_in_conv/groups, kH, kW), output (N, C_in, H, W).
kernels::Conv2dParams adjoint_params(const ConvTranspose2dOptions& o) {
  return {o.stride[0], o.stride[1], o.padding[0], o.padding[1], o.dilation[0], o.dilation[1], o.groups, DType::Float32};
}

// Backward front-ends of conv_transpose2d.
Tensor conv_transpose2d_input_grad(const Tensor& grad_out, const Tensor& weight, const kernels::Conv2dParams& p,
                                   const Shape& x_shape) {
  Tensor gx = empty(x_shape, {.dtype = grad_out.dtype(), .device = grad_out.device()});
  kernels::conv2d_forward(gx.device())(grad_out, weight, Tensor(), p, gx);
  return gx;
}
Tensor conv_transpose2d_weight_grad(const Tensor& grad_out, const Tensor& x, const kernels::Conv2dParams& p,
                                    const Shape& w_shape) {
  Tensor gw = empty(w_shape, {.dtype = x.dtype(), .device = x.device()});
  // conv2d's weight gradient with conv2d's output gradient = our input x, conv2d's input = grad_out.
  kernels::conv2d_backward_weight(gw.device())(x, grad_out, p, gw);
  return gw;
}

void check_pair(const char* op, const char* name, std::array<int64_t, 2> v, int64_t min) {
  EMBER_CHECK(v[0] >= min && v[1] >= min, ValueError, op, ": ", name, " must be >= ", min, ", got [", v[0], ", ", v[1], "]");
}

}  // namespace

Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias, ConvTranspose2dOptions o) {
  const char* op = "conv_transpose2d";
  if (x.dim() == 3) return conv_transpose2d(x.unsqueeze(0), weight, bias, o).squeeze(0);
  check_same_device(x, weight, op);
  if (bias.defined()) check_same_device(x, bias, op);
  EMBER_CHECK(x.dim() == 4, ShapeError, op, ": input must be 4-D (N, C_in, H, W) or 3-D (C_in, H, W), got shape ",
              shape_str(x.sizes()));
  EMBER_CHECK(weight.dim() == 4, ShapeError, op, ": weight must be 4-D (C_in, C_out/groups, kH, kW), got shape ",
              shape_str(weight.sizes()));
  EMBER_CHECK(x.dtype() == DType::Float32 || x.dtype() == DType::Float64, DTypeError, op,
              ": input must be float32 or float64, got ", dtype_name(x.dtype()));
  EMBER_CHECK(weight.dtype() == x.dtype() && (!bias.defined() || bias.dtype() == x.dtype()), DTypeError, op,
              ": input, weight and bias must have the same dtype, got input ", dtype_name(x.dtype()), ", weight ",
              dtype_name(weight.dtype()), bias.defined() ? ", bias " : "", bias.defined() ? dtype_name(bias.dtype()) : "");
  check_pair(op, "stride", o.stride, 1);
  check_pair(op, "dilation", o.dilation, 1);
  check_pair(op, "padding", o.padding, 0);
  check_pair(op, "output_padding", o.output_padding, 0);
  for (int k = 0; k < 2; ++k)
    EMBER_CHECK(o.output_padding[k] < o.stride[k] || o.output_padding[k] < o.dilation[k], ValueError, op,
                ": output_padding must be smaller than either stride or dilation, got output_padding [",
                o.output_padding[0], ", ", o.output_padding[1], "], stride [", o.stride[0], ", ", o.stride[1],
                "], dilation [", o.dilation[0], ", ", o.dilation[1], "]");
  const int64_t G = o.groups;
  EMBER_CHECK(G >= 1, ValueError, op, ": groups must be >= 1, got ", G);
  const int64_t N = x.size(0), C_in = x.size(1), H = x.size(2), W = x.size(3);
  EMBER_CHECK(weight.size(0) == C_in, ShapeError, op, ": input has ", C_in, " channels (shape ", shape_str(x.sizes()),
              ") but weight ", shape_str(weight.sizes()), " expects ", weight.size(0));
  EMBER_CHECK(C_in % G == 0, ShapeError, op, ": the input's ", C_in, " channels are not divisible by groups=", G);
  const int64_t C_out = weight.size(1) * G, KH = weight.size(2), KW = weight.size(3);
  if (bias.defined())
    EMBER_CHECK(bias.dim() == 1 && bias.size(0) == C_out, ShapeError, op, ": bias shape ", shape_str(bias.sizes()),
                " does not match the ", C_out, " output channels of weight ", shape_str(weight.sizes()), " with groups=", G);
  const int64_t OH = (H - 1) * o.stride[0] - 2 * o.padding[0] + o.dilation[0] * (KH - 1) + o.output_padding[0] + 1;
  const int64_t OW = (W - 1) * o.stride[1] - 2 * o.padding[1] + o.dilation[1] * (KW - 1) + o.output_padding[1] + 1;
  EMBER_CHECK(OH > 0 && OW > 0 && KH > 0 && KW > 0, ShapeError, op, ": the output would be ", OH, "x", OW,
              " (input ", shape_str(x.sizes()), ", weight ", shape_str(weight.sizes()), ", padding [", o.padding[0], ", ",
              o.padding[1], "]): too much padding for this input");
  // conv2d over the OHxOW output has (OH + 2p - d(k-1) - 1) / s + 1 rows: H, plus output_padding / s
  // when output_padding >= stride (allowed when dilation is larger). Those extra rows of the
  // adjoint's "output gradient" are zeros: pad x with them, and the kernels' shapes agree.
  const int64_t extra_h = o.output_padding[0] / o.stride[0], extra_w = o.output_padding[1] / o.stride[1];
  if (extra_h > 0 || extra_w > 0) {
    ConvTranspose2dOptions inner = o;
    inner.output_padding = {o.output_padding[0] - extra_h * o.stride[0], o.output_padding[1] - extra_w * o.stride[1]};
    // Each zero row adds stride rows to the output, taken out of output_padding: the size is OHxOW still.
    return conv_transpose2d(ember::pad(x, {0, extra_w, 0, extra_h}), weight, bias, inner);
  }
  const kernels::Conv2dParams p = adjoint_params(o);
  const Tensor xc = x.detach().contiguous(), wc = weight.detach().contiguous();
  Tensor out = empty({N, C_out, OH, OW}, {.dtype = x.dtype(), .device = x.device()});
  kernels::conv2d_backward_data(x.device())(xc, wc, p, out);
  if (autograd::any_requires_grad({&x, &weight})) {
    const bool need_x = x.requires_grad(), need_w = weight.requires_grad();
    autograd::SavedTensor sx(need_w ? xc : Tensor()), sw(need_x ? wc : Tensor());
    const Shape xs = x.sizes(), ws = weight.sizes();
    autograd::record(autograd::make_node("ConvTranspose2dBackward",
                                         [=](const std::vector<Tensor>& g) {
                                           const Tensor go = g[0].contiguous();
                                           Tensor gx, gw;
                                           if (need_x) gx = conv_transpose2d_input_grad(go, sw.unpack("ConvTranspose2dBackward"), p, xs);
                                           if (need_w) gw = conv_transpose2d_weight_grad(go, sx.unpack("ConvTranspose2dBackward"), p, ws);
                                           return std::vector<Tensor>{gx, gw};
                                         }),
                     {x, weight}, {out});
  }
  if (bias.defined()) out = add(out, bias.reshape({1, C_out, 1, 1}));
  return out;
}

Tensor conv_transpose1d(const Tensor& x, const Tensor& weight, const Tensor& bias, ConvTranspose1dOptions o) {
  EMBER_CHECK(x.dim() == 2 || x.dim() == 3, ShapeError,
              "conv_transpose1d: input must be 3-D (N, C_in, L) or 2-D (C_in, L), got shape ", shape_str(x.sizes()));
  EMBER_CHECK(weight.dim() == 3, ShapeError, "conv_transpose1d: weight must be 3-D (C_in, C_out/groups, K), got shape ",
              shape_str(weight.sizes()));
  const bool batched = x.dim() == 3;
  const Tensor x4 = (batched ? x : x.unsqueeze(0)).unsqueeze(2);
  ConvTranspose2dOptions o2{.stride = {1, o.stride}, .padding = {0, o.padding}, .output_padding = {0, o.output_padding},
                            .groups = o.groups, .dilation = {1, o.dilation}};
  Tensor y = conv_transpose2d(x4, weight.unsqueeze(2), bias, o2).squeeze(2);
  return batched ? y : y.squeeze(0);
}

Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias, Conv1dOptions o) {
  EMBER_CHECK(x.dim() == 2 || x.dim() == 3, ShapeError, "conv1d: input must be 3-D (N, C_in, L) or 2-D (C_in, L), got shape ",
              shape_str(x.sizes()));
  EMBER_CHECK(weight.dim() == 3, ShapeError, "conv1d: weight must be 3-D (C_out, C_in/groups, K), got shape ",
              shape_str(weight.sizes()));
  const bool batched = x.dim() == 3;
  const Tensor x4 = (batched ? x : x.unsqueeze(0)).unsqueeze(2);
  Conv2dOptions o2{.stride = {1, o.stride}, .padding = {0, o.padding}, .dilation = {1, o.dilation}, .groups = o.groups};
  Tensor y = conv2d(x4, weight.unsqueeze(2), bias, o2).squeeze(2);
  return batched ? y : y.squeeze(0);
}

Tensor conv2d_padding(const Tensor& x, const Tensor& weight, const Tensor& bias, const std::string& padding,
                      std::array<int64_t, 2> stride, std::array<int64_t, 2> dilation, int64_t groups) {
  EMBER_CHECK(padding == "same" || padding == "valid", ValueError, "conv2d: padding must be \"same\", \"valid\" or numbers, got \"",
              padding, "\"");
  Conv2dOptions o{.stride = stride, .padding = {0, 0}, .dilation = dilation, .groups = groups};
  if (padding == "valid") return conv2d(x, weight, bias, o);
  EMBER_CHECK(stride[0] == 1 && stride[1] == 1, ValueError, "conv2d: padding=\"same\" is not supported for strided "
              "convolutions, got stride [", stride[0], ", ", stride[1], "]");
  EMBER_CHECK(weight.dim() == 4, ShapeError, "conv2d: weight must be 4-D (C_out, C_in/groups, kH, kW), got shape ",
              shape_str(weight.sizes()));
  // total = dilation * (k - 1) per dim: half on each side, an odd one's extra element on the right /
  // bottom (PyTorch pads the input by that element first).
  int64_t extra[2];
  for (int k = 0; k < 2; ++k) {
    const int64_t total = dilation[k] * (weight.size(2 + k) - 1);
    o.padding[k] = total / 2;
    extra[k] = total - 2 * (total / 2);
  }
  if (extra[0] == 0 && extra[1] == 0) return conv2d(x, weight, bias, o);
  return conv2d(ember::pad(x, {0, extra[1], 0, extra[0]}), weight, bias, o);
}

Tensor conv1d_padding(const Tensor& x, const Tensor& weight, const Tensor& bias, const std::string& padding,
                      int64_t stride, int64_t dilation, int64_t groups) {
  EMBER_CHECK(x.dim() == 2 || x.dim() == 3, ShapeError, "conv1d: input must be 3-D (N, C_in, L) or 2-D (C_in, L), got shape ",
              shape_str(x.sizes()));
  EMBER_CHECK(weight.dim() == 3, ShapeError, "conv1d: weight must be 3-D (C_out, C_in/groups, K), got shape ",
              shape_str(weight.sizes()));
  const bool batched = x.dim() == 3;
  const Tensor x4 = (batched ? x : x.unsqueeze(0)).unsqueeze(2);
  Tensor y = conv2d_padding(x4, weight.unsqueeze(2), bias, padding, {1, stride}, {1, dilation}, groups).squeeze(2);
  return batched ? y : y.squeeze(0);
}

}  // namespace ember::nn::functional
