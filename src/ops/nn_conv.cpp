// conv2d front-end: argument checks, output shape, dispatch to the conv kernels, and the backward
// node (input gradient = transposed conv, weight gradient = correlation with the input, bias
// gradient = grad_out summed over N, H, W). conv2d_activation: the same convolution with its
// activation fused into the kernel's output pass where the backend can (oneDNN post-ops on the
// CPU), one backward node taking ReLU's / ReLU6's mask from the output.
#include <tuple>
#include <utility>

#include "ember/autograd/node.h"
#include "ember/ops.h"
#include "kernels/kernels.h"
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
// Both parameter gradients in one kernel where the backend has one (oneDNN sums the bias while it
// reads grad_out for the weight); else gb is undefined and the caller sums grad_out.
std::pair<Tensor, Tensor> conv2d_weight_bias_grads(const Tensor& grad_out, const Tensor& x, const kernels::Conv2dParams& p,
                                                   const Shape& w_shape) {
  const Device dev = x.device();
  if (kernels::conv2d_backward_weight_bias.has(dev.type)) {
    Tensor gw = empty(w_shape, {.dtype = x.dtype(), .device = dev});
    Tensor gb = empty({w_shape[0]}, {.dtype = x.dtype(), .device = dev});
    if (kernels::conv2d_backward_weight_bias(dev)(grad_out, x, p, gw, gb)) return {gw, gb};
  }
  return {conv2d_weight_grad(grad_out, x, p, w_shape), Tensor()};
}
// What one convolution call runs on, after the argument checks: the kernel parameters (the
// autocast decision included), contiguous detached operands and the output shape.
struct ConvCall {
  kernels::Conv2dParams p;
  Tensor xc, wc, bc;
  Shape out_shape;
};

ConvCall prepare_conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dOptions& opt) {
  check_same_device(x, weight, "conv2d");
  if (bias.defined()) check_same_device(x, bias, "conv2d");
  EMBER_CHECK(x.dim() == 4, ShapeError, "conv2d: input must be 4-D (N, C, H, W) or 3-D (C, H, W), got shape ",
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
  // kernel); output and gradients float32 tensors -- in training a bf16 output's values rounded to
  // bf16 (rounded_on_device).
  const DType compute = autocast_detail::conv2d_compute_dtype(x, weight, autograd::any_requires_grad({&weight}));
  const kernels::Conv2dParams p{opt.stride[0], opt.stride[1], opt.padding[0], opt.padding[1],
                                opt.dilation[0], opt.dilation[1], G, is_half(compute) ? compute : DType::Float32};
  Tensor xc = x.detach().contiguous();
  Tensor wc = compute == x.dtype() ? weight.detach().contiguous() : autocast_detail::cast(weight, compute);
  Tensor bc = bias.defined() ? bias.detach().contiguous() : Tensor();
  return {p, xc, wc, bc, {N, CO, OH, OW}};
}

// The gradient of the fused activation, from grad_out and the activation's output: ReLU and ReLU6
// pass grad_out where 0 < out (< 6), which is where 0 < x (< 6) for the convolution's value x, so
// the pre-activation tensor need not be kept. The same kernels and values as ReluBackward (from its
// output) and Relu6Backward (from its input; the comparisons give the same mask on the output).
// Under bf16 compute a backend may make the masked gradient in bf16 for the primitives that
// multiply it (kernels::conv_activation_grad_bf16: the same values they would have rounded).
Tensor activation_grad_from_output(ConvActivation act, const Tensor& g, const Tensor& out,
                                   const kernels::Conv2dParams& p) {
  Tensor gc = (g.dtype() == out.dtype() ? g : g.to(out.dtype())).expand(out.sizes()).contiguous();
  Tensor gx = empty(out.sizes(), {.dtype = out.dtype(), .device = out.device()});
  if (p.compute == DType::BFloat16 && kernels::conv_activation_grad_bf16.has(out.device().type) &&
      kernels::conv_activation_grad_bf16(out.device())(kernels::ConvEpilogue(act), gc, out, p, gx))
    return gx;
  if (act == ConvActivation::Relu && kernels::relu_backward.has(out.device().type)) {
    kernels::relu_backward(out.device())(gc, out, gx);
    return gx;
  }
  if (act == ConvActivation::Relu) return mul(gc, gt(out, 0.0).to(out.dtype()));
  kernels::activation_backward(out.device())(kernels::Activation::Relu6, gc, out, gx);
  return gx;
}

// The backward node of one convolution (and, for ReLU / ReLU6, its activation; `out` is then the
// activation's output, from which the mask comes).
void record_conv2d_backward(const ConvCall& c, const Tensor& x, const Tensor& weight, const Tensor& bias,
                            const Tensor& out, ConvActivation act) {
  const bool need_x = x.requires_grad(), need_w = weight.requires_grad();
  const bool need_b = bias.defined() && bias.requires_grad();
  const kernels::Conv2dParams p = c.p;
  autograd::SavedTensor sx(need_w ? c.xc : Tensor()), sw(need_x ? c.wc : Tensor());
  autograd::SavedTensor so(act == ConvActivation::None ? Tensor() : out);
  Shape xs = x.sizes(), ws = weight.sizes();
  const char* name = act == ConvActivation::None   ? "Conv2dBackward"
                     : act == ConvActivation::Relu ? "Conv2dReluBackward"
                                                   : "Conv2dRelu6Backward";
  autograd::record(autograd::make_node(name, [=](const std::vector<Tensor>& g) {
                     Tensor go = act == ConvActivation::None ? g[0].contiguous()
                                                             : activation_grad_from_output(act, g[0], so.unpack(name), p);
                     Tensor gx, gw, gb;
                     if (need_x) gx = conv2d_input_grad(go, sw.unpack(name), p, xs);
                     if (need_w && need_b) std::tie(gw, gb) = conv2d_weight_bias_grads(go, sx.unpack(name), p, ws);
                     else if (need_w) gw = conv2d_weight_grad(go, sx.unpack(name), p, ws);
                     if (need_b && !gb.defined()) gb = sum(go, {0, 2, 3});
                     return std::vector<Tensor>{gx, gw, gb};
                   }),
                   {x, weight, bias}, {out});
}


}  // namespace

Tensor apply_activation(ConvActivation act, const Tensor& y) {
  switch (act) {
    case ConvActivation::None: return y;
    case ConvActivation::Relu: return relu(y);
    case ConvActivation::Relu6: return relu6(y);
    case ConvActivation::Silu: return silu(y);
    case ConvActivation::Hardswish: return hardswish(y);
  }
  return y;
}

namespace {
// Under autocast in training a convolution multiplied in bfloat16 returns its bf16-rounded result,
// as PyTorch's autocast returns a bf16 tensor, on every device: the CPU's kernels write it in bf16
// (cpu/nn_conv_dnnl.cpp, held between ops in that precision); elsewhere it is rounded here, so that
// a step gives the same values on the GPU as on the CPU.
Tensor rounded_on_device(const ConvCall& c, bool record, Tensor out) {
  if (!record || c.p.compute != DType::BFloat16 || out.device().type == DeviceType::CPU) return out;
  return out.to(DType::BFloat16).to(out.dtype());
}
}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, Conv2dOptions opt) {
  if (x.dim() == 3) return conv2d(x.unsqueeze(0), weight, bias, opt).squeeze(0);  // unbatched (C, H, W), as PyTorch
  ConvCall c = prepare_conv2d(x, weight, bias, opt);
  const bool record = autograd::any_requires_grad({&x, &weight, &bias});
  c.p.out_any_layout = !record;  // nothing keeps out for a backward: the kernel may hold it in its layout
  c.p.keep_layout = record;      // kept: it may still hold it (float32, or bf16 under autocast)
  Tensor out = empty(c.out_shape, {.dtype = x.dtype(), .device = x.device()});
  kernels::conv2d_forward(x.device())(c.xc, c.wc, c.bc, c.p, out);
  out = rounded_on_device(c, record, out);
  if (record) record_conv2d_backward(c, x, weight, bias, out, ConvActivation::None);
  return out;
}

static_assert(int(ConvActivation::Hardswish) == int(kernels::ConvEpilogue::Hardswish) &&
              int(ConvActivation::Relu6) == int(kernels::ConvEpilogue::Relu6));

Tensor conv2d_activation(const Tensor& x, const Tensor& weight, const Tensor& bias, Conv2dOptions opt,
                         ConvActivation act) {
  if (act == ConvActivation::None) return conv2d(x, weight, bias, opt);
  const bool record = autograd::any_requires_grad({&x, &weight, &bias});
  // SiLU's and Hardswish's gradients need the pre-activation values: with autograd recording they
  // run unfused, the convolution's output kept as today.
  const bool mask_from_output = act == ConvActivation::Relu || act == ConvActivation::Relu6;
  if ((!record || mask_from_output) && kernels::conv2d_forward_fused.has(x.device().type)) {
    ConvCall c = prepare_conv2d(x, weight, bias, opt);
    c.p.out_any_layout = !record;
    c.p.keep_layout = record;
    Tensor out = empty(c.out_shape, {.dtype = x.dtype(), .device = x.device()});
    if (kernels::conv2d_forward_fused(x.device())(c.xc, c.wc, c.bc, c.p, kernels::ConvEpilogue(act), out)) {
      out = rounded_on_device(c, record, out);
      if (record) record_conv2d_backward(c, x, weight, bias, out, act);
      return out;
    }
  }
  return apply_activation(act, conv2d(x, weight, bias, opt));
}

}  // namespace ember::nn::functional
