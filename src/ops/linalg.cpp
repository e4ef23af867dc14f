// matmul and linear. Everything reduces to one differentiable primitive, a batched 3-D GEMM;
// broadcasting and 1-D promotion are views, so their gradients come for free.
#include <tuple>
#include <utility>

#include "ember/autograd/node.h"
#include "ember/ops.h"
#include "kernels/kernels.h"
#include "ops/autocast.h"
#include "ops/util.h"

namespace ember {

namespace {
// (B, M, K) x (B, K, N) -> (B, M, N)
Tensor bmm3(const Tensor& a, const Tensor& b) {
  Tensor out = empty({a.size(0), a.size(1), b.size(2)}, {.dtype = a.dtype(), .device = a.device()});
  kernels::batched_gemm(a.device())(a.detach(), b.detach(), out);
  if (autograd::any_requires_grad({&a, &b})) {
    autograd::SavedTensor sa(a), sb(b);
    bool need_a = a.requires_grad(), need_b = b.requires_grad();
    autograd::record(autograd::make_node("MatmulBackward", [=](const std::vector<Tensor>& g) {
                       Tensor ga, gb;
                       if (need_a) ga = bmm3(g[0], sb.unpack("MatmulBackward").transpose(1, 2));
                       if (need_b) gb = bmm3(sa.unpack("MatmulBackward").transpose(1, 2), g[0]);
                       return std::vector<Tensor>{ga, gb};
                     }),
                     {a, b}, {out});
  }
  return out;
}
// y (N, O) = x (N, I) @ weight (O, I)^T + bias (O) as one GEMM (the weight passed transposed,
// never copied) and one in-place bias add, recorded as a single node. Its backward writes each
// gradient in its final layout: grad_x = g @ W (N, I), grad_W = g^T @ x (O, I), grad_b = sum_0 g;
// the composed matmul + add form made extra views, a transposed weight gradient that
// AccumulateGrad had to copy, and a broadcast-add node.
// Backward front-ends of linear. grad_x (N, I) = grad_out (N, O) @ w (O, I).
// A backend's linear_backward_data may take it (CPU: oneDNN's sgemm for the bigger float32 layers).
Tensor linear_input_grad(const Tensor& go, const Tensor& w) {
  const Device d = go.device();
  Tensor gx = empty({go.size(0), w.size(1)}, {.dtype = go.dtype(), .device = d});
  if (kernels::linear_backward_data.has(d.type) && kernels::linear_backward_data(d)(go, w, gx)) return gx;
  kernels::batched_gemm(d)(go.unsqueeze(0), w.unsqueeze(0), gx.view({1, gx.size(0), gx.size(1)}));
  return gx;
}
// grad_w (O, I) = grad_out^T @ x, and grad_b (O) when need_b and the backend produced it in the
// same pass (CPU: oneDNN); an undefined grad_b otherwise (the caller sums grad_out).
std::pair<Tensor, Tensor> linear_weight_grads(const Tensor& go, const Tensor& xs, bool need_b) {
  const Device d = go.device();
  Tensor gw = empty({go.size(1), xs.size(1)}, {.dtype = go.dtype(), .device = d});
  Tensor gb_out = need_b ? empty({go.size(1)}, {.dtype = go.dtype(), .device = d}) : Tensor();
  if (kernels::linear_backward_weights.has(d.type) && kernels::linear_backward_weights(d)(go, xs, gw, gb_out))
    return {gw, gb_out};  // gb_out undefined when no bias gradient is needed
  kernels::batched_gemm(d)(go.t().unsqueeze(0), xs.unsqueeze(0), gw.view({1, gw.size(0), gw.size(1)}));
  return {gw, Tensor()};
}

// The backward front-ends of the lowered linear: the saved operand may be bfloat16 (the backend's
// half kernels take it as it is; elsewhere it is widened), the gradients are float32.
Tensor linear_backward_input(const Tensor& go, const Tensor& w) {
  const Device d = go.device();
  Tensor gx = empty({go.size(0), w.size(1)}, {.dtype = DType::Float32, .device = d});
  if (kernels::linear_backward_data.has(d.type) && kernels::linear_backward_data(d)(go, w, gx)) return gx;
  return linear_input_grad(go, w.to(DType::Float32));
}
std::pair<Tensor, Tensor> linear_backward_params(const Tensor& go, const Tensor& xs, bool need_b) {
  const Device d = go.device();
  Tensor gw = empty({go.size(1), xs.size(1)}, {.dtype = DType::Float32, .device = d});
  Tensor gb = need_b ? empty({go.size(1)}, {.dtype = DType::Float32, .device = d}) : Tensor();
  if (kernels::linear_backward_weights.has(d.type) && kernels::linear_backward_weights(d)(go, xs, gw, gb))
    return {gw, gb};
  return linear_weight_grads(go, xs.to(DType::Float32), need_b);
}

// linear under autocast (`half` = bfloat16): x and the weight (from the cast cache) in half, the
// bias, output and gradients float32, the products summed in float32 (the backend's half kernels;
// where a backend has none, float32 GEMMs on the half-rounded values, the same numbers slower).
// Autograd sees only the float32 tensors: the node's inputs are x, weight and bias themselves.
Tensor linear_2d_lowered(const Tensor& x, const Tensor& weight, const Tensor& bias, DType half) {
  const int64_t N = x.size(0), O = weight.size(0);
  const Device dev = x.device();
  const Tensor wh = autocast_detail::cast(weight, half);
  const Tensor b = bias.defined() ? bias.detach() : bias;
  Tensor out = empty({N, O}, {.dtype = DType::Float32, .device = dev});
  const bool record = autograd::any_requires_grad({&x, &weight, &bias});
  // Inference on an activation a backend holds in its own layout (already in half, say): the
  // backend may read it there instead of x being cast (which reads its plain bytes).
  if (!record && x.storage()->form() != nullptr && kernels::linear_inference.has(dev.type) &&
      kernels::linear_inference(dev)(x.detach(), wh, b, out))
    return out;
  const Tensor xh = autocast_detail::cast(x, half);
  // Training: the weight is a new cast each step (a backend's matmul on it as it is); inference:
  // the backend may pack the cast weight once and keep it.
  bool done = record && kernels::linear_forward_training.has(dev.type) &&
              kernels::linear_forward_training(dev)(xh, wh, b, out);
  if (!done) done = kernels::linear_inference.has(dev.type) && kernels::linear_inference(dev)(xh, wh, b, out);
  if (!done) {
    const Tensor xf = xh.to(DType::Float32), wf = wh.to(DType::Float32);
    kernels::batched_gemm(dev)(xf.unsqueeze(0), wf.t().unsqueeze(0), out.view({1, N, O}));
    if (b.defined()) kernels::binary(dev)(kernels::BinaryOp::Add, out, b.unsqueeze(0).expand({N, O}), out, 1.0);
  }
  if (record) {
    autograd::SavedTensor sx(weight.requires_grad() ? xh : Tensor()), sw(x.requires_grad() ? wh : Tensor());
    const bool need_x = x.requires_grad(), need_w = weight.requires_grad();
    const bool need_b = bias.defined() && bias.requires_grad();
    autograd::record(
        autograd::make_node("LinearBackward", [=](const std::vector<Tensor>& g) {
          const Tensor go = g[0].contiguous();
          Tensor gx, gw, gb;
          if (need_x) {
            gx = linear_backward_input(go, sw.unpack("LinearBackward"));
          }
          if (need_w) {
            std::tie(gw, gb) = linear_backward_params(go, sx.unpack("LinearBackward"), need_b);
          }
          if (need_b && !gb.defined()) gb = sum(go, {0});
          return std::vector<Tensor>{gx, gw, gb};
        }),
        {x, weight, bias}, {out});
  }
  return out;
}

Tensor linear_2d(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  const DType compute = autocast_detail::linear_compute_dtype(x, weight);
  if (compute != x.dtype()) return linear_2d_lowered(x, weight, bias, compute);
  const int64_t N = x.size(0), O = weight.size(0);
  const Device dev = x.device();
  Tensor out = empty({N, O}, {.dtype = x.dtype(), .device = dev});
  const bool record = autograd::any_requires_grad({&x, &weight, &bias});
  // Inference: a backend may compute it from weights kept in its own layout (CPU: oneDNN, which
  // needs the weight reordered; while training the weight changes every step and the reorder
  // costs what it saves, so training has its own slot: CPU, an unpacked oneDNN matmul where faster).
  const Tensor xd = x.detach(), wd = weight.detach(), bd = bias.defined() ? bias.detach() : bias;
  const auto& slot = record ? kernels::linear_forward_training : kernels::linear_inference;
  const bool done = slot.has(dev.type) && slot(dev)(xd, wd, bd, out);
  if (!done) {
    kernels::batched_gemm(dev)(x.detach().unsqueeze(0), weight.detach().t().unsqueeze(0), out.view({1, N, O}));
    if (bias.defined()) {
      Tensor b = bias.detach().unsqueeze(0).expand({N, O});
      kernels::binary(dev)(kernels::BinaryOp::Add, out, b, out, 1.0);
    }
  }
  if (record) {
    autograd::SavedTensor sx(weight.requires_grad() ? x : Tensor()), sw(x.requires_grad() ? weight : Tensor());
    const bool need_x = x.requires_grad(), need_w = weight.requires_grad();
    const bool need_b = bias.defined() && bias.requires_grad();
    autograd::record(
        autograd::make_node("LinearBackward", [=](const std::vector<Tensor>& g) {
          Tensor go = g[0];
          Tensor gx, gw, gb;
          if (need_x) gx = linear_input_grad(go, sw.unpack("LinearBackward"));
          if (need_w) std::tie(gw, gb) = linear_weight_grads(go, sx.unpack("LinearBackward"), need_b);
          if (need_b && !gb.defined()) gb = sum(go, {0});
          return std::vector<Tensor>{gx, gw, gb};
        }),
        {x, weight, bias}, {out});
  }
  return out;
}
}  // namespace

Tensor matmul(const Tensor& a_in, const Tensor& b_in) {
  check_same_device(a_in, b_in, "matmul");
  EMBER_CHECK(a_in.dim() >= 1 && b_in.dim() >= 1, ShapeError,
              "matmul: both arguments need at least 1 dimension, got ", a_in.dim(), "-d and ",
              b_in.dim(), "-d");
  EMBER_CHECK(a_in.dtype() == b_in.dtype(), DTypeError, "matmul: expected both tensors to have the "
              "same dtype, got ", dtype_name(a_in.dtype()), " and ", dtype_name(b_in.dtype()));
  EMBER_CHECK(is_floating(a_in.dtype()), DTypeError, "matmul: expected float32 or float64, got ",
              dtype_name(a_in.dtype()));
  Tensor a = a_in.dim() == 1 ? a_in.unsqueeze(0) : a_in;
  Tensor b = b_in.dim() == 1 ? b_in.unsqueeze(1) : b_in;
  int64_t M = a.size(-2), K = a.size(-1), K2 = b.size(-2), N = b.size(-1);
  EMBER_CHECK(K == K2, ShapeError, "matmul: shapes ", shape_str(a_in.sizes()), " and ",
              shape_str(b_in.sizes()), " cannot be multiplied (", M, "x", K, " and ", K2, "x", N, ")");
  // Under autocast (policy: lowered): a 2-D right operand makes the product one (rows, K) x (K, N)
  // linear in half; a true batch of products stays float32 (no batched half GEMM yet).
  const DType compute = autocast_detail::compute_dtype(AutocastOp::Matmul, a_in);
  if (compute != a_in.dtype() && b_in.dim() == 2 && a_in.dim() >= 2) {
    Shape os(a_in.sizes().begin(), a_in.sizes().end() - 1);
    const int64_t rows = shape_numel(os);
    os.push_back(N);
    return linear_2d_lowered(a_in.reshape({rows, K}), b_in.t(), Tensor(), compute).reshape(os);
  }
  Shape ba(a.sizes().begin(), a.sizes().end() - 2), bb(b.sizes().begin(), b.sizes().end() - 2);
  Shape batch = broadcast_shapes(ba, bb, "matmul (batch dimensions)");
  int64_t B = shape_numel(batch);
  Shape ea = batch, eb = batch;
  ea.insert(ea.end(), {M, K});
  eb.insert(eb.end(), {K, N});
  Tensor a3 = (ba == batch ? a : a.expand(ea)).reshape({B, M, K});
  Tensor b3;
  if (bb.empty() && B > 1) {
    // Shared right operand (the linear-layer case): fold the batch into M instead.
    Tensor out2 = bmm3(a3.reshape({1, B * M, K}), b.reshape({1, K, N}));
    Shape os = batch;
    os.insert(os.end(), {M, N});
    Tensor out = out2.reshape(os);
    if (a_in.dim() == 1) out = out.squeeze(-2);
    if (b_in.dim() == 1) out = out.squeeze(-1);
    return out;
  }
  b3 = (bb == batch ? b : b.expand(eb)).reshape({B, K, N});
  Shape os = batch;
  os.insert(os.end(), {M, N});
  Tensor out = bmm3(a3, b3).reshape(os);
  if (a_in.dim() == 1) out = out.squeeze(-2);
  if (b_in.dim() == 1) out = out.squeeze(-1);
  return out;
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  EMBER_CHECK(weight.dim() == 2, ShapeError, "linear: weight must be 2-D (out_features, in_features), got ",
              shape_str(weight.sizes()));
  EMBER_CHECK(x.dim() >= 1 && x.size(-1) == weight.size(1), ShapeError, "linear: input has ",
              x.dim() ? x.size(-1) : 0, " features (shape ", shape_str(x.sizes()),
              ") but the layer expects ", weight.size(1), " (weight ", shape_str(weight.sizes()), ")");
  if (bias.defined())
    EMBER_CHECK(bias.dim() == 1 && bias.size(0) == weight.size(0), ShapeError, "linear: bias shape ",
                shape_str(bias.sizes()), " does not match out_features ", weight.size(0));
  const bool same_kind = weight.device() == x.device() && weight.dtype() == x.dtype() &&
                         is_floating(x.dtype()) &&
                         (!bias.defined() || (bias.device() == x.device() && bias.dtype() == x.dtype()));
  if (x.dim() == 2 && same_kind) return linear_2d(x, weight, bias);
  // Other ranks and mixed arguments: the composed form (matmul reports the mismatches).
  Tensor y = matmul(x, weight.t());
  if (bias.defined()) y = add(y, bias);
  return y;
}

Tensor Tensor::matmul(const Tensor& other) const { return ember::matmul(*this, other); }

}  // namespace ember
