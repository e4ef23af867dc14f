// Pooling front-ends: max_pool2d, avg_pool2d, adaptive_avg_pool2d. Output sizes follow PyTorch
// (floor or ceil mode; a ceil-mode window must start inside the input or its left padding).
// 3-D inputs (C, H, W) are treated as a batch of one.
#include "ember/autograd/node.h"
#include "ember/ops.h"
#include "kernels/nn_kernels.h"
#include "ops/util.h"

namespace ember::nn::functional {

namespace {

void check_pool_input(const Tensor& x, const char* op) {
  EMBER_CHECK(x.dim() == 4, ShapeError, op, ": input must be 3-D (C, H, W) or 4-D (N, C, H, W), got shape ",
              shape_str(x.sizes()));
  EMBER_CHECK(x.dtype() == DType::Float32 || x.dtype() == DType::Float64, DTypeError, op,
              ": input must be float32 or float64, got ", dtype_name(x.dtype()));
}

int64_t pool_out_size(int64_t in, int64_t k, int64_t s, int64_t pad, bool ceil_mode) {
  int64_t num = in + 2 * pad - (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  int64_t out = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
  if (ceil_mode && (out - 1) * s >= in + pad) --out;
  return out;
}

// Checks the options against x (N, C, H, W) and returns the kernel params and output shape.
std::pair<kernels::Pool2dParams, Shape> pool_geometry(const Tensor& x, const Pool2dOptions& opt, const char* op) {
  const auto& k = opt.kernel;
  std::array<int64_t, 2> s = {opt.stride[0] == 0 ? k[0] : opt.stride[0], opt.stride[1] == 0 ? k[1] : opt.stride[1]};
  EMBER_CHECK(k[0] >= 1 && k[1] >= 1, ValueError, op, ": kernel size must be >= 1, got [", k[0], ", ", k[1], "]");
  EMBER_CHECK(s[0] >= 1 && s[1] >= 1, ValueError, op, ": stride must be >= 1 (or 0 for the kernel size), got [",
              opt.stride[0], ", ", opt.stride[1], "]");
  for (int d = 0; d < 2; ++d)
    EMBER_CHECK(opt.padding[d] >= 0 && opt.padding[d] <= k[d] / 2, ValueError, op,
                ": padding must be between 0 and half the kernel size, got padding [", opt.padding[0], ", ",
                opt.padding[1], "] for kernel [", k[0], ", ", k[1], "]");
  const int64_t H = x.size(2), W = x.size(3);
  const int64_t OH = pool_out_size(H, k[0], s[0], opt.padding[0], opt.ceil_mode);
  const int64_t OW = pool_out_size(W, k[1], s[1], opt.padding[1], opt.ceil_mode);
  EMBER_CHECK(OH >= 1 && OW >= 1, ShapeError, op, ": kernel [", k[0], ", ", k[1], "] is larger than the padded input ",
              H + 2 * opt.padding[0], "x", W + 2 * opt.padding[1], " (input shape ", shape_str(x.sizes()), ")");
  kernels::Pool2dParams p{k[0], k[1], s[0], s[1], opt.padding[0], opt.padding[1], opt.count_include_pad};
  return {p, Shape{x.size(0), x.size(1), OH, OW}};
}

// Backward front-ends: allocate the input gradient (x's shape) and dispatch the backward kernel.
Tensor max_pool2d_backward(const Tensor& grad_out, const Tensor& indices, const Shape& x_shape) {
  Tensor gx = empty(x_shape, {.dtype = grad_out.dtype(), .device = grad_out.device()});
  kernels::max_pool2d_backward(gx.device())(grad_out.contiguous(), indices, gx);
  return gx;
}
// From the pooling's input instead of indices (a backend's max_pool2d_forward_keep_input took it).
Tensor max_pool2d_backward_from_input(const Tensor& grad_out, const Tensor& x, const kernels::Pool2dParams& p) {
  Tensor gx = empty(x.sizes(), {.dtype = grad_out.dtype(), .device = x.device()});
  kernels::max_pool2d_backward_from_input(gx.device())(grad_out.contiguous(), x, p, gx);
  return gx;
}
Tensor avg_pool2d_backward(const Tensor& grad_out, const kernels::Pool2dParams& p, const Shape& x_shape) {
  Tensor gx = empty(x_shape, {.dtype = grad_out.dtype(), .device = grad_out.device()});
  kernels::avg_pool2d_backward(gx.device())(grad_out.contiguous(), p, gx);
  return gx;
}
Tensor adaptive_avg_pool2d_backward(const Tensor& grad_out, const Shape& x_shape) {
  Tensor gx = empty(x_shape, {.dtype = grad_out.dtype(), .device = grad_out.device()});
  kernels::adaptive_avg_pool2d_backward(gx.device())(grad_out.contiguous(), gx);
  return gx;
}

}  // namespace

Tensor max_pool2d(const Tensor& x, Pool2dOptions opt) {
  if (x.dim() == 3) return max_pool2d(x.unsqueeze(0), opt).squeeze(0);
  check_pool_input(x, "max_pool2d");
  auto [p, shape] = pool_geometry(x, opt, "max_pool2d");
  Tensor xc = x.detach().contiguous();
  Tensor out = empty(shape, {.dtype = x.dtype(), .device = x.device()});
  const bool record = autograd::any_requires_grad({&x});
  // Training on a held activation (the CPU, 2x2 windows): no indices; the backward finds the
  // maxima again in x, which it saves (cpu/pool_grad.h).
  if (record && kernels::max_pool2d_forward_keep_input.has(x.device().type) &&
      kernels::max_pool2d_forward_keep_input(x.device())(xc, p, out)) {
    autograd::SavedTensor saved(xc);
    autograd::record(autograd::make_node("MaxPool2dBackward",
                                         [saved, p](const std::vector<Tensor>& g) {
                                           return std::vector<Tensor>{max_pool2d_backward_from_input(
                                               g[0], saved.unpack("MaxPool2dBackward"), p)};
                                         }),
                     {x}, {out});
    return out;
  }
  // Without a backward the CPU kernel writes no indices (8 bytes per output: more than the values).
  Tensor indices = record || x.device().type != DeviceType::CPU
                       ? empty(shape, {.dtype = DType::Int64, .device = x.device()})
                       : Tensor();
  kernels::max_pool2d_forward(x.device())(xc, p, out, indices);
  if (record) {
    Shape xs = x.sizes();
    autograd::record(autograd::make_node("MaxPool2dBackward", [indices, xs](const std::vector<Tensor>& g) {
                       return std::vector<Tensor>{max_pool2d_backward(g[0], indices, xs)};
                     }),
                     {x}, {out});
  }
  return out;
}

Tensor avg_pool2d(const Tensor& x, Pool2dOptions opt) {
  if (x.dim() == 3) return avg_pool2d(x.unsqueeze(0), opt).squeeze(0);
  check_pool_input(x, "avg_pool2d");
  auto [p, shape] = pool_geometry(x, opt, "avg_pool2d");
  Tensor out = empty(shape, {.dtype = x.dtype(), .device = x.device()});
  kernels::avg_pool2d_forward(x.device())(x.detach().contiguous(), p, out);
  if (autograd::any_requires_grad({&x})) {
    Shape xs = x.sizes();
    autograd::record(autograd::make_node("AvgPool2dBackward", [p, xs](const std::vector<Tensor>& g) {
                       return std::vector<Tensor>{avg_pool2d_backward(g[0], p, xs)};
                     }),
                     {x}, {out});
  }
  return out;
}

Tensor adaptive_avg_pool2d(const Tensor& x, std::array<int64_t, 2> output_size) {
  if (x.dim() == 3) return adaptive_avg_pool2d(x.unsqueeze(0), output_size).squeeze(0);
  check_pool_input(x, "adaptive_avg_pool2d");
  EMBER_CHECK(output_size[0] >= 1 && output_size[1] >= 1, ValueError,
              "adaptive_avg_pool2d: output_size must be >= 1, got [", output_size[0], ", ", output_size[1], "]");
  EMBER_CHECK(x.size(2) >= 1 && x.size(3) >= 1, ShapeError, "adaptive_avg_pool2d: input has an empty plane, shape ",
              shape_str(x.sizes()));
  Tensor out = empty({x.size(0), x.size(1), output_size[0], output_size[1]}, {.dtype = x.dtype(), .device = x.device()});
  kernels::adaptive_avg_pool2d_forward(x.device())(x.detach().contiguous(), out);
  if (autograd::any_requires_grad({&x})) {
    Shape xs = x.sizes();
    autograd::record(autograd::make_node("AdaptiveAvgPool2dBackward", [xs](const std::vector<Tensor>& g) {
                       return std::vector<Tensor>{adaptive_avg_pool2d_backward(g[0], xs)};
                     }),
                     {x}, {out});
  }
  return out;
}

}  // namespace ember::nn::functional
