// torch.nn.functional activations beyond ember/ops.h's: leaky_relu, elu, selu, celu, gelu(tanh),
// softplus, hardtanh, logsigmoid, mish, softsign, glu, prelu. Each forward is a composition of ember
// ops run without history, with one backward node holding PyTorch's derivative (its values at the
// kinks, and no NaN from an exp() that overflows in the branch a where() does not take) written with
// ops, so every device runs them; softsign, glu and prelu are plain compositions.
#include <cmath>
#include <functional>
#include <string>

#include "ember/autograd/node.h"
#include "ember/ops.h"
#include "ember/ops_nn.h"
#include "ops/util.h"

namespace ember::nn::functional {

namespace {

void check_floating(const Tensor& x, const char* op) {
  EMBER_CHECK(x.dtype() == DType::Float32 || x.dtype() == DType::Float64, DTypeError, op,
              ": input must be float32 or float64, got ", dtype_name(x.dtype()));
}

using Forward = std::function<Tensor(const Tensor& x)>;
// grad_x from grad_out, the forward input x and output y.
using Backward = std::function<Tensor(const Tensor& g, const Tensor& x, const Tensor& y)>;

// y = fwd(x) without history, and one node "<name>" whose backward is bwd.
Tensor unary_op(const char* op, const char* node, const Tensor& x, const Forward& fwd, const Backward& bwd) {
  check_floating(x, op);
  Tensor y;
  {
    NoGradGuard ng;
    y = fwd(x.detach());
  }
  if (autograd::any_requires_grad({&x})) {
    autograd::SavedTensor sx(x), sy(y);
    std::string name(node);
    autograd::record(autograd::make_node(name, [sx, sy, name, bwd](const std::vector<Tensor>& g) {
                       return std::vector<Tensor>{bwd(g[0], sx.unpack(name), sy.unpack(name))};
                     }),
                     {x}, {y});
  }
  return y;
}

Tensor zero_like_scalar(const Tensor& x) { return scalar_like(x, 0.0); }

// x <= 0 ? (exp(x * in_scale) - 1) * neg_scale : x * pos_scale, ATen's elu with its three
// coefficients (elu: alpha, 1, 1; selu: alpha * scale, scale, 1; celu: alpha, 1, 1 / alpha). The
// exponent is taken of min(x, 0) so the positive side never overflows.
Tensor elu_family(const char* op, const char* node, const Tensor& x, double neg_scale, double pos_scale, double in_scale) {
  return unary_op(
      op, node, x,
      [=](const Tensor& t) {
        Tensor neg_part = mul(add(exp(mul(minimum(t, zero_like_scalar(t)), in_scale)), -1.0), neg_scale);
        Tensor pos_part = pos_scale == 1.0 ? t : mul(t, pos_scale);
        return where(le(t, zero_like_scalar(t)), neg_part, pos_part);
      },
      [=](const Tensor& g, const Tensor& t, const Tensor&) {
        Tensor neg_grad = mul(g, mul(exp(mul(minimum(t, zero_like_scalar(t)), in_scale)), in_scale * neg_scale));
        Tensor pos_grad = pos_scale == 1.0 ? g : mul(g, pos_scale);
        return where(le(t, zero_like_scalar(t)), neg_grad, pos_grad);
      });
}

}  // namespace

Tensor leaky_relu(const Tensor& x, double slope) {
  return unary_op(
      "leaky_relu", "LeakyReluBackward", x,
      [slope](const Tensor& t) { return where(gt(t, 0.0), t, mul(t, slope)); },
      [slope](const Tensor& g, const Tensor& t, const Tensor&) { return where(gt(t, 0.0), g, mul(g, slope)); });
}

Tensor elu(const Tensor& x, double alpha) { return elu_family("elu", "EluBackward", x, alpha, 1.0, 1.0); }

Tensor selu(const Tensor& x) {
  constexpr double kAlpha = 1.6732632423543772848170429916717, kScale = 1.0507009873554804934193349852946;
  return elu_family("selu", "EluBackward", x, kAlpha * kScale, kScale, 1.0);
}

Tensor celu(const Tensor& x, double alpha) {
  EMBER_CHECK(alpha != 0.0, ValueError, "celu: alpha must not be 0 (it divides the input)");
  return elu_family("celu", "EluBackward", x, alpha, 1.0, 1.0 / alpha);
}

Tensor gelu(const Tensor& x, const std::string& approximate) {
  EMBER_CHECK(approximate == "none" || approximate == "tanh", ValueError,
              "gelu: approximate must be \"none\" or \"tanh\", got \"", approximate, "\"");
  if (approximate == "none") return ember::gelu(x);
  // ATen's constants and order: inner = kBeta * (x + kKappa * x^3), kBeta = sqrt(2 / pi).
  const double kBeta = M_SQRT2 * M_2_SQRTPI * 0.5, kKappa = 0.044715;
  return unary_op(
      "gelu", "GeluBackward", x,
      [=](const Tensor& t) {
        Tensor inner = mul(add(t, mul(mul(mul(t, t), t), kKappa)), kBeta);
        return mul(mul(t, 0.5), add(tanh(inner), 1.0));
      },
      [=](const Tensor& g, const Tensor& t, const Tensor&) {
        Tensor x_sq = mul(t, t);
        Tensor inner = mul(add(t, mul(mul(x_sq, t), kKappa)), kBeta);
        Tensor tanh_inner = tanh(inner);
        Tensor left_derivative = mul(add(tanh_inner, 1.0), 0.5);
        Tensor tanh_derivative = add(neg(mul(tanh_inner, tanh_inner)), 1.0);
        Tensor inner_derivative = mul(add(mul(x_sq, 3.0 * kKappa), 1.0), kBeta);
        Tensor right_derivative = mul(mul(mul(t, 0.5), tanh_derivative), inner_derivative);
        return mul(g, add(left_derivative, right_derivative));
      });
}

Tensor softplus(const Tensor& x, double beta, double threshold) {
  EMBER_CHECK(beta != 0.0, ValueError, "softplus: beta must not be 0 (it divides the result)");
  return unary_op(
      "softplus", "SoftplusBackward", x,
      [=](const Tensor& t) {
        // log(1 + exp(beta x)) / beta below the threshold (the exponent clamped there, so the branch
        // where() drops cannot overflow), x above it. No log1p yet: log(1 + e) loses e's low bits
        // where e is below float eps, far under the loss's own size.
        Tensor bx = mul(t, beta);
        Tensor soft = mul(log(add(exp(minimum(bx, scalar_like(bx, threshold))), 1.0)), 1.0 / beta);
        return where(gt(bx, threshold), t, soft);
      },
      [=](const Tensor& g, const Tensor& t, const Tensor&) {
        Tensor bx = mul(t, beta);
        return where(gt(bx, threshold), g, mul(g, sigmoid(bx)));
      });
}

Tensor hardtanh(const Tensor& x, double min_val, double max_val) {
  EMBER_CHECK(max_val >= min_val, ValueError, "hardtanh: max_val (", max_val, ") must be >= min_val (", min_val, ")");
  return unary_op(
      "hardtanh", "HardtanhBackward", x, [=](const Tensor& t) { return clamp(t, min_val, max_val); },
      [=](const Tensor& g, const Tensor& t, const Tensor&) {
        // No gradient at the bounds themselves, as ATen's hardtanh_backward.
        Tensor inside = mul(gt(t, min_val).to(g.dtype()), lt(t, max_val).to(g.dtype()));
        return mul(g, inside);
      });
}

Tensor logsigmoid(const Tensor& x) {
  return unary_op(
      "logsigmoid", "LogSigmoidBackward", x,
      [](const Tensor& t) {
        // min(x, 0) - log(1 + exp(-|x|)): exp never overflows.
        return sub(minimum(t, zero_like_scalar(t)), log(add(exp(neg(abs(t))), 1.0)));
      },
      [](const Tensor& g, const Tensor& t, const Tensor&) {
        // ATen: z = exp(-|x|); x < 0 ? 1 - z / (1 + z) : z / (1 + z)  (= sigmoid(-x) either way).
        Tensor z = exp(neg(abs(t)));
        Tensor frac = div(z, add(z, 1.0));
        return mul(g, where(lt(t, 0.0), add(neg(frac), 1.0), frac));
      });
}

Tensor mish(const Tensor& x) {
  return unary_op(
      "mish", "MishBackward", x,
      [](const Tensor& t) { return mul(t, tanh(log(add(exp(t), 1.0)))); },
      [](const Tensor& g, const Tensor& t, const Tensor&) {
        Tensor s = sigmoid(t);
        Tensor tsp = tanh(log(add(exp(t), 1.0)));
        return mul(g, add(tsp, mul(mul(t, s), add(neg(mul(tsp, tsp)), 1.0))));
      });
}

Tensor softsign(const Tensor& x) {
  check_floating(x, "softsign");
  return div(x, add(abs(x), 1.0));
}

Tensor glu(const Tensor& x, int64_t dim_in) {
  check_floating(x, "glu");
  EMBER_CHECK(x.dim() >= 1, ShapeError, "glu: input must have at least 1 dimension, got a 0-d tensor");
  const int64_t dim = wrap_dim(dim_in, x.dim(), "glu");
  const int64_t n = x.size(dim);
  EMBER_CHECK(n % 2 == 0, ShapeError, "glu: the halved dimension must be even, but dimension ", dim, " of ",
              shape_str(x.sizes()), " has size ", n);
  return mul(x.narrow(dim, 0, n / 2), sigmoid(x.narrow(dim, n / 2, n / 2)));
}

Tensor prelu(const Tensor& x, const Tensor& weight) {
  check_floating(x, "prelu");
  check_same_device(x, weight, "prelu");
  EMBER_CHECK(weight.dtype() == x.dtype(), DTypeError, "prelu: weight must have the input's dtype ",
              dtype_name(x.dtype()), ", got ", dtype_name(weight.dtype()));
  EMBER_CHECK(weight.dim() <= 1, ShapeError, "prelu: weight must be a scalar or 1-D, got shape ", shape_str(weight.sizes()));
  const int64_t channels = x.dim() >= 2 ? x.size(1) : 1;
  EMBER_CHECK(weight.numel() == 1 || weight.numel() == channels, ShapeError, "prelu: weight has ", weight.numel(),
              " values but the input ", shape_str(x.sizes()), " has ", channels,
              " channels (dim 1); give 1 value or one per channel");
  Tensor w = weight;
  if (weight.numel() > 1) {
    Shape s(size_t(x.dim()), 1);
    s[1] = channels;
    w = weight.reshape(s);
  } else {
    w = weight.reshape({});
  }
  return where(gt(x, 0.0), x, mul(w, x));
}

}  // namespace ember::nn::functional
