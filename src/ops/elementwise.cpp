// Elementwise front-ends: broadcasting, dtype promotion, device checks, autograd formulas.
#include <cmath>
#include <limits>

#include "ember/autograd/node.h"
#include "ember/ops.h"
#include "kernels/kernels.h"
#include "ops/util.h"

namespace ember {

using autograd::SavedTensor;
using kernels::BinaryOp;
using kernels::UnaryOp;

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    EMBER_CHECK(da == db || da == 1 || db == 1, ShapeError, op, ": shapes ", shape_str(a), " and ",
                shape_str(b), " cannot be broadcast together (dimension ", i, ": ", da, " vs ", db, ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

void check_same_device(const Tensor& a, const Tensor& b, const char* op) {
  EMBER_CHECK(a.device() == b.device(), DeviceError, op,
              ": expected all tensors to be on the same device, but found at least two devices, ",
              a.device().str(), " and ", b.device().str(),
              "; move them with .to(device) (ember's trainer does this for you)");
}

namespace {

Tensor binary_forward(BinaryOp op, const Tensor& a, const Tensor& b, const char* name, double alpha = 1.0) {
  check_same_device(a, b, name);
  Shape shape = broadcast_shapes(a.sizes(), b.sizes(), name);
  DType dt = promote_types(a.dtype(), b.dtype());
  Tensor x = a.dtype() == dt ? a : a.detach().to(dt);
  Tensor y = b.dtype() == dt ? b : b.detach().to(dt);
  Tensor out = empty(shape, {.dtype = kernels::is_comparison(op) ? DType::Bool : dt, .device = a.device()});
  kernels::binary(a.device())(op, x.detach().expand(shape), y.detach().expand(shape), out, alpha);
  return out;
}

Tensor unary_forward(UnaryOp op, const Tensor& a, double p0 = 0, double p1 = 0) {
  Tensor out = empty_like(a);
  kernels::unary(a.device())(op, a, out, p0, p1);
  return out;
}
Tensor unary_raw(UnaryOp op, const Tensor& a, double p0 = 0, double p1 = 0) {
  NoGradGuard g;
  return unary_forward(op, a, p0, p1);
}

// Records a binary node whose formula returns full-shape gradients; they are summed down to
// each input's shape here.
void record_binary(const char* name, const Tensor& a, const Tensor& b, const Tensor& out,
                   std::function<std::pair<Tensor, Tensor>(const Tensor&)> fn) {
  if (!autograd::any_requires_grad({&a, &b})) return;
  Shape sa = a.sizes(), sb = b.sizes();
  bool need_a = a.requires_grad(), need_b = b.requires_grad();
  DType ta = a.dtype(), tb = b.dtype();
  autograd::record(autograd::make_node(name, [=](const std::vector<Tensor>& g) {
                     auto [ga, gb] = fn(g[0]);
                     Tensor ra = need_a && ga.defined() ? sum_to(ga, sa).to(ta) : Tensor();
                     Tensor rb = need_b && gb.defined() ? sum_to(gb, sb).to(tb) : Tensor();
                     return std::vector<Tensor>{ra, rb};
                   }),
                   {a, b}, {out});
}

void record_unary(const char* name, const Tensor& a, const Tensor& out,
                  std::function<Tensor(const Tensor&)> fn) {
  if (!autograd::any_requires_grad({&a})) return;
  autograd::record(autograd::make_node(name, [fn = std::move(fn)](const std::vector<Tensor>& g) {
                     return std::vector<Tensor>{fn(g[0])};
                   }),
                   {a}, {out});
}

void check_inplace(const Tensor& self, const char* op) {
  EMBER_CHECK(!(autograd::grad_mode_enabled() && self.requires_grad()), AutogradError, op,
              ": in-place operations on a tensor that requires grad are not supported while grad "
              "mode is on; use the out-of-place form, or NoGradGuard for parameter updates");
}

Tensor inplace_binary(BinaryOp op, Tensor& self, const Tensor& other, const char* name, double alpha) {
  check_inplace(self, name);
  check_same_device(self, other, name);
  Shape shape = broadcast_shapes(self.sizes(), other.sizes(), name);
  EMBER_CHECK(shape == self.sizes(), ShapeError, name, ": output with shape ", shape_str(self.sizes()),
              " doesn't match the broadcast shape ", shape_str(shape));
  Tensor y = other.dtype() == self.dtype() ? other : other.detach().to(self.dtype());
  kernels::binary(self.device())(op, self, y.detach().expand(shape), self, alpha);
  self.storage()->bump_version();
  return self;
}

}  // namespace

// ---- binary ------------------------------------------------------------------------------------
Tensor add(const Tensor& a, const Tensor& b, double alpha) {
  Tensor out = binary_forward(BinaryOp::Add, a, b, "add", alpha);
  record_binary("AddBackward", a, b, out, [alpha](const Tensor& g) {
    return std::pair{g, alpha == 1.0 ? g : mul(g, alpha)};
  });
  return out;
}
Tensor sub(const Tensor& a, const Tensor& b) {
  Tensor out = binary_forward(BinaryOp::Sub, a, b, "sub");
  record_binary("SubBackward", a, b, out, [](const Tensor& g) { return std::pair{g, neg(g)}; });
  return out;
}
Tensor mul(const Tensor& a, const Tensor& b) {
  Tensor out = binary_forward(BinaryOp::Mul, a, b, "mul");
  if (autograd::any_requires_grad({&a, &b})) {
    SavedTensor sa(a.requires_grad() || b.requires_grad() ? a : Tensor()), sb(b);
    record_binary("MulBackward", a, b, out, [sa, sb](const Tensor& g) {
      return std::pair{mul(g, sb.unpack("MulBackward")), mul(g, sa.unpack("MulBackward"))};
    });
  }
  return out;
}
Tensor div(const Tensor& a, const Tensor& b) {
  Tensor out = binary_forward(BinaryOp::Div, a, b, "div");
  if (autograd::any_requires_grad({&a, &b})) {
    SavedTensor sa(a), sb(b);
    record_binary("DivBackward", a, b, out, [sa, sb](const Tensor& g) {
      Tensor bb = sb.unpack("DivBackward");
      Tensor ga = div(g, bb);
      return std::pair{ga, neg(mul(ga, div(sa.unpack("DivBackward"), bb)))};
    });
  }
  return out;
}
Tensor pow(const Tensor& a, const Tensor& b) {
  Tensor out = binary_forward(BinaryOp::Pow, a, b, "pow");
  if (autograd::any_requires_grad({&a, &b})) {
    SavedTensor sa(a), sb(b), so(out);
    record_binary("PowBackward", a, b, out, [sa, sb, so](const Tensor& g) {
      Tensor x = sa.unpack("PowBackward"), y = sb.unpack("PowBackward");
      Tensor ga = mul(g, mul(y, pow(x, sub(y, ones_like(y)))));
      Tensor gb = mul(g, mul(so.unpack("PowBackward"), log(x)));
      return std::pair{ga, gb};
    });
  }
  return out;
}
Tensor maximum(const Tensor& a, const Tensor& b) {
  Tensor out = binary_forward(BinaryOp::Max, a, b, "maximum");
  if (autograd::any_requires_grad({&a, &b})) {
    SavedTensor sa(a), sb(b);
    record_binary("MaximumBackward", a, b, out, [sa, sb](const Tensor& g) {
      Tensor m = ge(sa.unpack("MaximumBackward"), sb.unpack("MaximumBackward")).to(g.dtype());
      return std::pair{mul(g, m), mul(g, sub(ones_like(m), m))};
    });
  }
  return out;
}
Tensor minimum(const Tensor& a, const Tensor& b) {
  Tensor out = binary_forward(BinaryOp::Min, a, b, "minimum");
  if (autograd::any_requires_grad({&a, &b})) {
    SavedTensor sa(a), sb(b);
    record_binary("MinimumBackward", a, b, out, [sa, sb](const Tensor& g) {
      Tensor m = le(sa.unpack("MinimumBackward"), sb.unpack("MinimumBackward")).to(g.dtype());
      return std::pair{mul(g, m), mul(g, sub(ones_like(m), m))};
    });
  }
  return out;
}

Tensor eq(const Tensor& a, const Tensor& b) { return binary_forward(BinaryOp::Eq, a, b, "eq"); }
Tensor ne(const Tensor& a, const Tensor& b) { return binary_forward(BinaryOp::Ne, a, b, "ne"); }
Tensor lt(const Tensor& a, const Tensor& b) { return binary_forward(BinaryOp::Lt, a, b, "lt"); }
Tensor le(const Tensor& a, const Tensor& b) { return binary_forward(BinaryOp::Le, a, b, "le"); }
Tensor gt(const Tensor& a, const Tensor& b) { return binary_forward(BinaryOp::Gt, a, b, "gt"); }
Tensor ge(const Tensor& a, const Tensor& b) { return binary_forward(BinaryOp::Ge, a, b, "ge"); }
Tensor eq(const Tensor& a, double b) { return eq(a, scalar_like(a, b)); }
Tensor gt(const Tensor& a, double b) { return gt(a, scalar_like(a, b)); }
Tensor lt(const Tensor& a, double b) { return lt(a, scalar_like(a, b)); }

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  check_same_device(cond, a, "where");
  check_same_device(a, b, "where");
  EMBER_CHECK(cond.dtype() == DType::Bool, DTypeError, "where: condition must be a bool tensor, got ",
              dtype_name(cond.dtype()));
  Shape shape = broadcast_shapes(broadcast_shapes(cond.sizes(), a.sizes(), "where"), b.sizes(), "where");
  DType dt = promote_types(a.dtype(), b.dtype());
  Tensor x = a.dtype() == dt ? a : a.to(dt), y = b.dtype() == dt ? b : b.to(dt);
  Tensor out = empty(shape, {.dtype = dt, .device = a.device()});
  kernels::where(a.device())(cond.expand(shape), x.detach().expand(shape), y.detach().expand(shape), out);
  if (autograd::any_requires_grad({&a, &b})) {
    Tensor c = cond;
    record_binary("WhereBackward", a, b, out, [c](const Tensor& g) {
      Tensor z = zeros_like(g);
      return std::pair{where(c, g, z), where(c, z, g)};
    });
  }
  return out;
}

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol) {
  NoGradGuard g;
  Tensor x = a.to(DType::Float64), y = b.to(DType::Float64);
  Tensor diff = abs(sub(x, y));
  Tensor tol = add(mul(abs(y), rtol), atol);
  return le(diff, tol).to(DType::Int64).sum().item<int64_t>() == broadcast_numel(x, y);
}

// ---- scalar forms -------------------------------------------------------------------------------
Tensor add(const Tensor& a, double b) {
  Tensor out = unary_forward(UnaryOp::AddScalar, a, b);
  record_unary("AddBackward", a, out, [](const Tensor& g) { return g; });
  return out;
}
Tensor mul(const Tensor& a, double b) {
  Tensor out = unary_forward(UnaryOp::MulScalar, a, b);
  record_unary("MulBackward", a, out, [b](const Tensor& g) { return mul(g, b); });
  return out;
}
Tensor pow(const Tensor& a, double p) {
  Tensor out = unary_forward(UnaryOp::PowScalar, a, p);
  if (autograd::any_requires_grad({&a})) {
    SavedTensor sa(a);
    record_unary("PowBackward", a, out, [sa, p](const Tensor& g) {
      return mul(g, mul(pow(sa.unpack("PowBackward"), p - 1.0), p));
    });
  }
  return out;
}

// ---- unary ----------------------------------------------------------------------------------------
Tensor neg(const Tensor& a) {
  Tensor out = unary_forward(UnaryOp::Neg, a);
  record_unary("NegBackward", a, out, [](const Tensor& g) { return neg(g); });
  return out;
}
Tensor exp(const Tensor& a) {
  Tensor out = unary_forward(UnaryOp::Exp, a);
  if (autograd::any_requires_grad({&a})) {
    SavedTensor so(out);
    record_unary("ExpBackward", a, out, [so](const Tensor& g) { return mul(g, so.unpack("ExpBackward")); });
  }
  return out;
}
Tensor log(const Tensor& a) {
  Tensor out = unary_forward(UnaryOp::Log, a);
  if (autograd::any_requires_grad({&a})) {
    SavedTensor sa(a);
    record_unary("LogBackward", a, out, [sa](const Tensor& g) { return div(g, sa.unpack("LogBackward")); });
  }
  return out;
}
Tensor sqrt(const Tensor& a) {
  Tensor out = unary_forward(UnaryOp::Sqrt, a);
  if (autograd::any_requires_grad({&a})) {
    SavedTensor so(out);
    record_unary("SqrtBackward", a, out, [so](const Tensor& g) {
      return div(mul(g, 0.5), so.unpack("SqrtBackward"));
    });
  }
  return out;
}
Tensor rsqrt(const Tensor& a) {
  Tensor out = unary_forward(UnaryOp::Rsqrt, a);
  if (autograd::any_requires_grad({&a})) {
    SavedTensor so(out);
    record_unary("RsqrtBackward", a, out, [so](const Tensor& g) {
      return mul(mul(g, pow(so.unpack("RsqrtBackward"), 3.0)), -0.5);
    });
  }
  return out;
}
Tensor abs(const Tensor& a) {
  Tensor out = unary_forward(UnaryOp::Abs, a);
  if (autograd::any_requires_grad({&a})) {
    SavedTensor sa(a);
    record_unary("AbsBackward", a, out, [sa](const Tensor& g) { return mul(g, sign(sa.unpack("AbsBackward"))); });
  }
  return out;
}
Tensor sign(const Tensor& a) { return unary_raw(UnaryOp::Sign, a); }
namespace {
// ReLU's backward front-end, from the forward output: one pass when the backend has the kernel,
// else ReluGrad and a multiply.
Tensor relu_backward(const Tensor& g, const Tensor& out) {
  if (g.dtype() == out.dtype() && g.sizes() == out.sizes() && kernels::relu_backward.has(out.device().type)) {
    Tensor gx = empty(out.sizes(), {.dtype = out.dtype(), .device = out.device()});
    kernels::relu_backward(out.device())(g, out.contiguous(), gx);
    return gx;
  }
  return mul(g, unary_raw(UnaryOp::ReluGrad, out));
}
}  // namespace
Tensor relu(const Tensor& a) {
  Tensor out = unary_forward(UnaryOp::Relu, a);
  if (autograd::any_requires_grad({&a})) {
    SavedTensor so(out);
    record_unary("ReluBackward", a, out, [so](const Tensor& g) { return relu_backward(g, so.unpack("ReluBackward")); });
  }
  return out;
}
Tensor gelu(const Tensor& a) {
  Tensor out = unary_forward(UnaryOp::Gelu, a);
  if (autograd::any_requires_grad({&a})) {
    SavedTensor sa(a);
    record_unary("GeluBackward", a, out, [sa](const Tensor& g) {
      return mul(g, unary_raw(UnaryOp::GeluGrad, sa.unpack("GeluBackward")));
    });
  }
  return out;
}
Tensor sigmoid(const Tensor& a) {
  Tensor out = unary_forward(UnaryOp::Sigmoid, a);
  if (autograd::any_requires_grad({&a})) {
    SavedTensor so(out);
    record_unary("SigmoidBackward", a, out, [so](const Tensor& g) {
      Tensor s = so.unpack("SigmoidBackward");
      return mul(g, mul(s, add(neg(s), 1.0)));
    });
  }
  return out;
}
Tensor tanh(const Tensor& a) {
  Tensor out = unary_forward(UnaryOp::Tanh, a);
  if (autograd::any_requires_grad({&a})) {
    SavedTensor so(out);
    record_unary("TanhBackward", a, out, [so](const Tensor& g) {
      Tensor t = so.unpack("TanhBackward");
      return mul(g, add(neg(mul(t, t)), 1.0));
    });
  }
  return out;
}
Tensor clamp(const Tensor& a, std::optional<double> lo, std::optional<double> hi) {
  double l = lo.value_or(-std::numeric_limits<double>::infinity());
  double h = hi.value_or(std::numeric_limits<double>::infinity());
  EMBER_CHECK(!(lo && hi && l > h), ValueError, "clamp: min ", l, " is greater than max ", h);
  Tensor out = unary_forward(UnaryOp::Clamp, a, l, h);
  if (autograd::any_requires_grad({&a})) {
    SavedTensor sa(a);
    record_unary("ClampBackward", a, out, [sa, l, h](const Tensor& g) {
      Tensor x = sa.unpack("ClampBackward");
      Tensor inside = mul(ge(x, scalar_like(x, l)).to(g.dtype()), le(x, scalar_like(x, h)).to(g.dtype()));
      return mul(g, inside);
    });
  }
  return out;
}

// ---- operators ------------------------------------------------------------------------------------
Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator-(const Tensor& a) { return neg(a); }
Tensor operator+(const Tensor& a, double b) { return add(a, b); }
Tensor operator-(const Tensor& a, double b) { return add(a, -b); }
Tensor operator*(const Tensor& a, double b) { return mul(a, b); }
Tensor operator/(const Tensor& a, double b) { return mul(a, 1.0 / b); }
Tensor operator+(double a, const Tensor& b) { return add(b, a); }
Tensor operator-(double a, const Tensor& b) { return add(neg(b), a); }
Tensor operator*(double a, const Tensor& b) { return mul(b, a); }
Tensor operator/(double a, const Tensor& b) { return mul(pow(b, -1.0), a); }

// ---- Tensor methods -------------------------------------------------------------------------------
Tensor Tensor::exp() const { return ember::exp(*this); }
Tensor Tensor::log() const { return ember::log(*this); }
Tensor Tensor::sqrt() const { return ember::sqrt(*this); }
Tensor Tensor::abs() const { return ember::abs(*this); }
Tensor Tensor::relu() const { return ember::relu(*this); }
Tensor Tensor::sigmoid() const { return ember::sigmoid(*this); }
Tensor Tensor::tanh() const { return ember::tanh(*this); }
Tensor Tensor::pow(double e) const { return ember::pow(*this, e); }

Tensor& Tensor::add_(const Tensor& other, double alpha) {
  inplace_binary(BinaryOp::Add, *this, other, "add_", alpha);
  return *this;
}
Tensor& Tensor::mul_(const Tensor& other) {
  inplace_binary(BinaryOp::Mul, *this, other, "mul_", 1.0);
  return *this;
}
Tensor& Tensor::div_(const Tensor& other) {
  inplace_binary(BinaryOp::Div, *this, other, "div_", 1.0);
  return *this;
}
Tensor& Tensor::mul_(double v) {
  check_inplace(*this, "mul_");
  kernels::unary(device())(UnaryOp::MulScalar, *this, *this, v, 0);
  storage()->bump_version();
  return *this;
}
Tensor& Tensor::add_(double v) {
  check_inplace(*this, "add_");
  kernels::unary(device())(UnaryOp::AddScalar, *this, *this, v, 0);
  storage()->bump_version();
  return *this;
}
Tensor& Tensor::clamp_(std::optional<double> lo, std::optional<double> hi) {
  check_inplace(*this, "clamp_");
  kernels::unary(device())(UnaryOp::Clamp, *this, *this,
                           lo.value_or(-std::numeric_limits<double>::infinity()),
                           hi.value_or(std::numeric_limits<double>::infinity()));
  storage()->bump_version();
  return *this;
}
Tensor& Tensor::relu_() {
  check_inplace(*this, "relu_");
  kernels::unary(device())(UnaryOp::Relu, *this, *this, 0, 0);
  storage()->bump_version();
  return *this;
}

}  // namespace ember
