// softmax and log_softmax front-ends along any dim; the kernels subtract the row maximum first,
// so large logits never overflow exp().
#include "ember/autograd/node.h"
#include "ember/ops.h"
#include "kernels/nn_kernels.h"
#include "ops/autocast.h"
#include "ops/util.h"

namespace ember::nn::functional {

namespace {
// Backward front-end: the input gradient from the forward output y.
Tensor softmax_backward(const Tensor& grad_out, const Tensor& y, int64_t dim, bool log) {
  Tensor gx = empty(y.sizes(), {.dtype = y.dtype(), .device = y.device()});
  kernels::softmax_backward(gx.device())(grad_out.contiguous(), y, dim, log, gx);
  return gx;
}

Tensor softmax_impl(const Tensor& x_in, int64_t dim_in, bool log) {
  const char* op = log ? "log_softmax" : "softmax";
  const Tensor x = autocast_detail::to_float32(log ? AutocastOp::LogSoftmax : AutocastOp::Softmax, x_in);
  EMBER_CHECK(x.dtype() == DType::Float32 || x.dtype() == DType::Float64, DTypeError, op,
              ": input must be float32 or float64, got ", dtype_name(x.dtype()));
  const int64_t dim = wrap_dim(dim_in, x.dim(), op);
  if (x.dim() == 0) return softmax_impl(x.reshape({1}), 0, log).reshape({});
  Tensor out = empty(x.sizes(), {.dtype = x.dtype(), .device = x.device()});
  kernels::softmax_forward(x.device())(x.detach().contiguous(), dim, log, out);
  if (autograd::any_requires_grad({&x})) {
    autograd::SavedTensor so(out);
    std::string name = log ? "LogSoftmaxBackward" : "SoftmaxBackward";
    autograd::record(autograd::make_node(name, [so, dim, log, name](const std::vector<Tensor>& g) {
                       return std::vector<Tensor>{softmax_backward(g[0], so.unpack(name), dim, log)};
                     }),
                     {x}, {out});
  }
  return out;
}
}  // namespace

Tensor softmax(const Tensor& x, int64_t dim) { return softmax_impl(x, dim, false); }
Tensor log_softmax(const Tensor& x, int64_t dim) { return softmax_impl(x, dim, true); }

}  // namespace ember::nn::functional
