// conv2d front-end: argument checks, output shape, dispatch to the conv kernels, and the backward
// node (input gradient = transposed conv, weight gradient = correlation with the input, bias
// gradient = grad_out summed over N, H, W).
#include "ember/autograd/node.h"
#include "ember/ops.h"
#include "kernels/nn_kernels.h"
#include "ops/autocast.h"
#include "ops/util.h"

namespace ember::nn::functional {

namespace {
// Gradients are float32 under autocast (p.compute bfloat16 or float16, the weight saved in it).
Tensor conv2d_input_grad(const Tensor& grad_out, const Tensor& weight, const kernels::Conv2dParams& p,
                         const Shape& x_shape) {
  Tensor gx = empty(x_shape, {.dtype = grad_out.dtype(), .device = weight.device()});
  kernels::conv2d_backward_data(gx.device())(grad_out, weight, p, gx);
  return gx;
}
Tensor conv2d_weight_grad(const Tensor& grad_out, const Tensor& x, const kernels::Conv2dParams& p,
                          const Shape& w_shape) {
  Tensor gw = empty(w_shape, {.dtype = x.dtype(), .device = x.device()});
  kernels::conv2d_backward_weight(gw.device())(grad_out, x, p, gw);
  return gw;
}
}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, Conv2dOptions opt) {
  check_same_device(x, weight, "conv2d");
  if (bias.defined()) check_same_device(x, bias, "conv2d");
  EMBER_CHECK(x.dim() == 4, ShapeError, "conv2d: input must be 4-D (N, C, H, W), got shape ",
              shape_str(x.sizes()));
  EMBER_CHECK(weight.dim() == 4, ShapeError, "conv2d: weight must be 4-D (C_out, C_in/groups, kH, kW), got shape ",
              shape_str(weight.sizes()));
  EMBER_CHECK(is_floating(x.dtype()) && (x.dtype() == DType::Float32 || x.dtype() == DType::Float64),
              DTypeError, "conv2d: input must be float32 or float64, got ", dtype_name(x.dtype()),
              is_half(x.dtype()) ? " (for half precision keep float32 tensors and run under ember::autocast, which multiplies in bfloat16)" : "");
  EMBER_CHECK(weight.dtype() == x.dtype() && (!bias.defined() || bias.dtype() == x.dtype()), DTypeError,
              "conv2d: input, weight and bias must have the same dtype, got input ", dtype_name(x.dtype()),
              ", weight ", dtype_name(weight.dtype()), bias.defined() ? ", bias " : "",
              bias.defined() ? dtype_name(bias.dtype()) : "");
  for (int k = 0; k < 2; ++k) {
    EMBER_CHECK(opt.stride[k] >= 1, ValueError, "conv2d: stride must be >= 1, got [", opt.stride[0], ", ",
                opt.stride[1], "]");
    EMBER_CHECK(opt.dilation[k] >= 1, ValueError, "conv2d: dilation must be >= 1, got [", opt.dilation[0],
                ", ", opt.dilation[1], "]");
    EMBER_CHECK(opt.padding[k] >= 0, ValueError, "conv2d: padding must be >= 0, got [", opt.padding[0],
                ", ", opt.padding[1], "]");
  }
  const int64_t G = opt.groups;
  EMBER_CHECK(G >= 1, ValueError, "conv2d: groups must be >= 1, got ", G);
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const int64_t CO = weight.size(0), KH = weight.size(2), KW = weight.size(3);
  EMBER_CHECK(CO % G == 0, ShapeError, "conv2d: weight ", shape_str(weight.sizes()), " has ", CO,
              " output channels, not divisible by groups=", G);
  EMBER_CHECK(C == weight.size(1) * G, ShapeError, "conv2d: input has ", C, " channels (shape ",
              shape_str(x.sizes()), ") but weight ", shape_str(weight.sizes()), " with groups=", G,
              " expects ", weight.size(1) * G);
  if (bias.defined())
    EMBER_CHECK(bias.dim() == 1 && bias.size(0) == CO, ShapeError, "conv2d: bias shape ",
                shape_str(bias.sizes()), " does not match the ", CO, " output channels of weight ",
                shape_str(weight.sizes()));
  const int64_t EKH = opt.dilation[0] * (KH - 1) + 1, EKW = opt.dilation[1] * (KW - 1) + 1;
  const int64_t PH = H + 2 * opt.padding[0], PW = W + 2 * opt.padding[1];
  EMBER_CHECK(EKH <= PH && EKW <= PW && KH > 0 && KW > 0, ShapeError, "conv2d: kernel ", KH, "x", KW,
              " (dilated ", EKH, "x", EKW, ") is larger than the padded input ", PH, "x", PW,
              " (input shape ", shape_str(x.sizes()), ", padding [", opt.padding[0], ", ", opt.padding[1], "])");
  const int64_t OH = (PH - EKH) / opt.stride[0] + 1, OW = (PW - EKW) / opt.stride[1] + 1;

  // Under autocast: multiplied in the autocast dtype (bfloat16; float16 on CUDA), the weight cast
  // once per scope, the input rounded by the kernel (the CPU in its layout reorder, CUDA in a cast
  // kernel); output and gradients float32.
  const DType compute = autocast_detail::conv2d_compute_dtype(x, autograd::any_requires_grad({&weight}));
  const kernels::Conv2dParams p{opt.stride[0], opt.stride[1], opt.padding[0], opt.padding[1],
                                opt.dilation[0], opt.dilation[1], G, is_half(compute) ? compute : DType::Float32};
  Tensor xc = x.detach().contiguous();
  Tensor wc = compute == x.dtype() ? weight.detach().contiguous() : autocast_detail::cast(weight, compute);
  Tensor bc = bias.defined() ? bias.detach().contiguous() : Tensor();
  Tensor out = empty({N, CO, OH, OW}, {.dtype = x.dtype(), .device = x.device()});
  kernels::conv2d_forward(x.device())(xc, wc, bc, p, out);

  if (autograd::any_requires_grad({&x, &weight, &bias})) {
    const bool need_x = x.requires_grad(), need_w = weight.requires_grad();
    const bool need_b = bias.defined() && bias.requires_grad();
    autograd::SavedTensor sx(need_w ? xc : Tensor()), sw(need_x ? wc : Tensor());
    Shape xs = x.sizes(), ws = weight.sizes();
    autograd::record(autograd::make_node("Conv2dBackward", [=](const std::vector<Tensor>& g) {
                       Tensor go = g[0].contiguous();
                       Tensor gx, gw, gb;
                       if (need_x) gx = conv2d_input_grad(go, sw.unpack("Conv2dBackward"), p, xs);
                       if (need_w) gw = conv2d_weight_grad(go, sx.unpack("Conv2dBackward"), p, ws);
                       if (need_b) gb = sum(go, {0, 2, 3});
                       return std::vector<Tensor>{gx, gw, gb};
                     }),
                     {x, weight, bias}, {out});
  }
  return out;
}

}  // namespace ember::nn::functional
