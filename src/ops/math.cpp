// Element-wise math front-ends beyond elementwise.cpp's, with PyTorch's result dtypes: sin, cos,
// log1p, expm1, reciprocal (integer inputs give float32), floor / ceil / trunc / round (integers
// pass through), floor_divide and remainder (Python's // and %), lerp, the bitwise and logical
// ops, isnan / isinf / isfinite. Kernels: kernels/tensor_kernels.h (math_unary, math_binary).
#include <cmath>

#include "ember/autograd/node.h"
#include "ember/ops.h"
#include "kernels/kernels.h"
#include "kernels/tensor_kernels.h"
#include "ops/ops_detail.h"
#include "ops/util.h"

namespace ember {

using autograd::SavedTensor;
using kernels::MathBinaryOp;
using kernels::MathUnaryOp;
using ops_detail::record_one;
using ops_detail::record_pair;

void ops_detail::record_pair(const char* name, const Tensor& a, const Tensor& b, const Tensor& out,
                             std::function<std::pair<Tensor, Tensor>(const Tensor&)> fn) {
  if (!autograd::any_requires_grad({&a, &b})) return;
  const Shape sa = a.sizes(), sb = b.sizes();
  const bool need_a = a.requires_grad(), need_b = b.requires_grad();
  const DType ta = a.dtype(), tb = b.dtype();
  autograd::record(autograd::make_node(name, [=](const std::vector<Tensor>& g) {
                     auto [ga, gb] = fn(g[0]);
                     Tensor ra = need_a && ga.defined() ? sum_to(ga, sa).to(ta) : Tensor();
                     Tensor rb = need_b && gb.defined() ? sum_to(gb, sb).to(tb) : Tensor();
                     return std::vector<Tensor>{ra, rb};
                   }),
                   {a, b}, {out});
}

namespace {

// PyTorch computes these in the default dtype (float32) for integer and bool inputs.
Tensor as_floating(const Tensor& a) { return is_floating(a.dtype()) ? a : a.to(DType::Float32); }

Tensor unary_raw(MathUnaryOp op, const Tensor& a, DType out_dtype, int64_t decimals = 0) {
  Tensor out = empty(a.sizes(), {.dtype = out_dtype, .device = a.device()});
  kernels::math_unary(a.device())(op, a.detach(), out, decimals);
  return out;
}

// floor, ceil, trunc, round: integers are already whole (a copy, as PyTorch); the gradient is zero
// almost everywhere, so backward gives zeros (PyTorch's FloorBackward and the others).
Tensor rounding(MathUnaryOp op, const Tensor& a, int64_t decimals, const char* name, const char* node) {
  EMBER_CHECK(a.dtype() != DType::Bool, DTypeError, name, ": not defined for bool tensors; convert with "
              ".to(DType::Float32) or .to(DType::Int64) first");
  if (!is_floating(a.dtype())) return a.clone();
  Tensor out = unary_raw(op, a, a.dtype(), decimals);
  record_one(node, a, out, [](const Tensor& g) { return zeros_like(g); });
  return out;
}

// The shared front-end of the binary math ops: devices, broadcast, promotion, the dtype rule of
// the op, the inputs converted and expanded for the kernel.
struct BinaryArgs {
  Shape shape;
  DType dtype;
  Tensor a, b;  // converted to dtype, expanded to shape, detached
};
BinaryArgs binary_args(const Tensor& a, const Tensor& b, const char* name) {
  check_same_device(a, b, name);
  BinaryArgs r;
  r.shape = broadcast_shapes(a.sizes(), b.sizes(), name);
  r.dtype = promote_types(a.dtype(), b.dtype());
  r.a = a.detach().to(r.dtype).expand(r.shape);
  r.b = b.detach().to(r.dtype).expand(r.shape);
  return r;
}
Tensor binary_raw(MathBinaryOp op, const BinaryArgs& args, const Device& device) {
  Tensor out = empty(args.shape, {.dtype = args.dtype, .device = device});
  kernels::math_binary(device)(op, args.a, args.b, out);
  return out;
}

// // and %: every numeric dtype but bool; an integer divisor of zero is refused here (one host read)
// instead of being undefined behaviour in the kernel.
Tensor division_like(MathBinaryOp op, const Tensor& a, const Tensor& b, const char* name) {
  BinaryArgs args = binary_args(a, b, name);
  EMBER_CHECK(args.dtype != DType::Bool, DTypeError, name, ": not defined for bool tensors; convert with "
              ".to(DType::Int64) first");
  if (!is_floating(args.dtype)) {
    NoGradGuard g;
    EMBER_CHECK(sum(eq(args.b, 0.0)).item<int64_t>() == 0, ValueError, name,
                ": integer division by zero (a divisor element is 0); use floating tensors for IEEE "
                "inf / nan results");
  }
  return binary_raw(op, args, a.device());
}

Tensor bitwise(MathBinaryOp op, const Tensor& a, const Tensor& b, const char* name) {
  BinaryArgs args = binary_args(a, b, name);
  EMBER_CHECK(!is_floating(args.dtype), DTypeError, name, ": expected integer or bool tensors, got ",
              dtype_name(a.dtype()), " and ", dtype_name(b.dtype()));
  return binary_raw(op, args, a.device());
}

}  // namespace

Tensor ops_detail::floor_divide_unchecked(const Tensor& a, const Tensor& b) {
  NoGradGuard g;
  return binary_raw(MathBinaryOp::FloorDivide, binary_args(a, b, "floor_divide"), a.device());
}
Tensor ops_detail::remainder_unchecked(const Tensor& a, const Tensor& b) {
  NoGradGuard g;
  return binary_raw(MathBinaryOp::Remainder, binary_args(a, b, "remainder"), a.device());
}

// ---- transcendental -------------------------------------------------------------------------------
Tensor sin(const Tensor& a_in) {
  const Tensor a = as_floating(a_in);
  Tensor out = unary_raw(MathUnaryOp::Sin, a, a.dtype());
  if (autograd::any_requires_grad({&a})) {
    SavedTensor sa(a);
    record_one("SinBackward", a, out, [sa](const Tensor& g) { return mul(g, cos(sa.unpack("SinBackward"))); });
  }
  return out;
}
Tensor cos(const Tensor& a_in) {
  const Tensor a = as_floating(a_in);
  Tensor out = unary_raw(MathUnaryOp::Cos, a, a.dtype());
  if (autograd::any_requires_grad({&a})) {
    SavedTensor sa(a);
    record_one("CosBackward", a, out, [sa](const Tensor& g) { return neg(mul(g, sin(sa.unpack("CosBackward")))); });
  }
  return out;
}
Tensor log1p(const Tensor& a_in) {
  const Tensor a = as_floating(a_in);
  Tensor out = unary_raw(MathUnaryOp::Log1p, a, a.dtype());
  if (autograd::any_requires_grad({&a})) {
    SavedTensor sa(a);
    record_one("Log1pBackward", a, out, [sa](const Tensor& g) { return div(g, add(sa.unpack("Log1pBackward"), 1.0)); });
  }
  return out;
}
Tensor expm1(const Tensor& a_in) {
  const Tensor a = as_floating(a_in);
  Tensor out = unary_raw(MathUnaryOp::Expm1, a, a.dtype());
  if (autograd::any_requires_grad({&a})) {
    SavedTensor so(out);
    record_one("Expm1Backward", a, out, [so](const Tensor& g) { return mul(g, add(so.unpack("Expm1Backward"), 1.0)); });
  }
  return out;
}
Tensor reciprocal(const Tensor& a_in) {
  const Tensor a = as_floating(a_in);
  Tensor out = empty_like(a);
  kernels::unary(a.device())(kernels::UnaryOp::Reciprocal, a.detach(), out, 0, 0);
  if (autograd::any_requires_grad({&a})) {
    SavedTensor so(out);
    record_one("ReciprocalBackward", a, out, [so](const Tensor& g) {
      Tensor r = so.unpack("ReciprocalBackward");
      return neg(mul(g, mul(r, r)));
    });
  }
  return out;
}

// ---- rounding --------------------------------------------------------------------------------------
Tensor floor(const Tensor& a) { return rounding(MathUnaryOp::Floor, a, 0, "floor", "FloorBackward"); }
Tensor ceil(const Tensor& a) { return rounding(MathUnaryOp::Ceil, a, 0, "ceil", "CeilBackward"); }
Tensor trunc(const Tensor& a) { return rounding(MathUnaryOp::Trunc, a, 0, "trunc", "TruncBackward"); }
Tensor round(const Tensor& a, int64_t decimals) {
  EMBER_CHECK(decimals == 0 || is_floating(a.dtype()), DTypeError, "round: decimals (", decimals,
              ") is only defined for floating tensors, got ", dtype_name(a.dtype()));
  return rounding(MathUnaryOp::Round, a, decimals, "round", "RoundBackward");
}

// ---- Python's // and % ------------------------------------------------------------------------------
// floor_divide records no gradient: PyTorch's has none either (its backward is "not implemented").
Tensor floor_divide(const Tensor& a, const Tensor& b) {
  NoGradGuard g;
  return division_like(MathBinaryOp::FloorDivide, a, b, "floor_divide");
}
Tensor remainder(const Tensor& a, const Tensor& b) {
  Tensor out;
  {
    NoGradGuard g;
    out = division_like(MathBinaryOp::Remainder, a, b, "remainder");
  }
  if (autograd::any_requires_grad({&a, &b})) {
    SavedTensor sa(a), sb(b);
    // d/da = 1, d/db = -floor(a / b), as PyTorch's RemainderBackward.
    record_pair("RemainderBackward", a, b, out, [sa, sb](const Tensor& g) {
      Tensor q = floor_divide(sa.unpack("RemainderBackward"), sb.unpack("RemainderBackward"));
      return std::pair{g, neg(mul(g, q))};
    });
  }
  return out;
}

// ---- lerp ------------------------------------------------------------------------------------------
namespace {
void check_lerp(const Tensor& start, const Tensor& end, const Tensor* weight) {
  check_same_device(start, end, "lerp");
  EMBER_CHECK(is_floating(start.dtype()), DTypeError, "lerp: expected floating tensors, got ", dtype_name(start.dtype()));
  EMBER_CHECK(end.dtype() == start.dtype(), DTypeError, "lerp: expected dtype ", dtype_name(start.dtype()),
              " for `end` but got dtype ", dtype_name(end.dtype()));
  if (weight) {
    check_same_device(start, *weight, "lerp");
    EMBER_CHECK(weight->dtype() == start.dtype(), DTypeError, "lerp: expected dtype ", dtype_name(start.dtype()),
                " for `weight` but got dtype ", dtype_name(weight->dtype()));
  }
}
}  // namespace
// start + weight * (end - start) for |weight| < 0.5, else end - (end - start) * (1 - weight): PyTorch's
// two forms, each exact at its own end.
Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight) {
  check_lerp(start, end, &weight);
  broadcast_shapes(broadcast_shapes(start.sizes(), end.sizes(), "lerp"), weight.sizes(), "lerp");
  Tensor diff = sub(end, start);
  Tensor near_start = add(start, mul(weight, diff));
  Tensor near_end = sub(end, mul(diff, add(neg(weight), 1.0)));
  Tensor small;
  {
    NoGradGuard g;
    small = lt(abs(weight), 0.5);
  }
  return where(small, near_start, near_end);
}
Tensor lerp(const Tensor& start, const Tensor& end, double weight) {
  check_lerp(start, end, nullptr);
  Tensor diff = sub(end, start);
  if (std::abs(weight) < 0.5) return add(start, mul(diff, weight));
  return sub(end, mul(diff, 1.0 - weight));
}

// ---- bitwise, logical, predicates -------------------------------------------------------------------
Tensor bitwise_and(const Tensor& a, const Tensor& b) { return bitwise(MathBinaryOp::BitwiseAnd, a, b, "bitwise_and"); }
Tensor bitwise_or(const Tensor& a, const Tensor& b) { return bitwise(MathBinaryOp::BitwiseOr, a, b, "bitwise_or"); }
Tensor bitwise_xor(const Tensor& a, const Tensor& b) { return bitwise(MathBinaryOp::BitwiseXor, a, b, "bitwise_xor"); }
Tensor bitwise_not(const Tensor& a) {
  EMBER_CHECK(!is_floating(a.dtype()), DTypeError, "bitwise_not: expected an integer or bool tensor, got ",
              dtype_name(a.dtype()));
  return unary_raw(MathUnaryOp::BitwiseNot, a, a.dtype());
}
Tensor logical_not(const Tensor& a) { return unary_raw(MathUnaryOp::LogicalNot, a, DType::Bool); }

Tensor isnan(const Tensor& a) {
  if (!is_floating(a.dtype())) return zeros(a.sizes(), {.dtype = DType::Bool, .device = a.device()});
  return unary_raw(MathUnaryOp::IsNan, a, DType::Bool);
}
Tensor isinf(const Tensor& a) {
  if (!is_floating(a.dtype())) return zeros(a.sizes(), {.dtype = DType::Bool, .device = a.device()});
  return unary_raw(MathUnaryOp::IsInf, a, DType::Bool);
}
Tensor isfinite(const Tensor& a) {
  if (!is_floating(a.dtype())) return ones(a.sizes(), {.dtype = DType::Bool, .device = a.device()});
  return unary_raw(MathUnaryOp::IsFinite, a, DType::Bool);
}

Tensor operator%(const Tensor& a, const Tensor& b) { return remainder(a, b); }
Tensor operator&(const Tensor& a, const Tensor& b) { return bitwise_and(a, b); }
Tensor operator|(const Tensor& a, const Tensor& b) { return bitwise_or(a, b); }
Tensor operator^(const Tensor& a, const Tensor& b) { return bitwise_xor(a, b); }
Tensor operator~(const Tensor& a) { return bitwise_not(a); }

// ---- Tensor methods ----------------------------------------------------------------------------------
Tensor Tensor::sin() const { return ember::sin(*this); }
Tensor Tensor::cos() const { return ember::cos(*this); }
Tensor Tensor::floor() const { return ember::floor(*this); }
Tensor Tensor::ceil() const { return ember::ceil(*this); }
Tensor Tensor::round(int64_t decimals) const { return ember::round(*this, decimals); }
Tensor Tensor::trunc() const { return ember::trunc(*this); }
Tensor Tensor::log1p() const { return ember::log1p(*this); }
Tensor Tensor::expm1() const { return ember::expm1(*this); }
Tensor Tensor::reciprocal() const { return ember::reciprocal(*this); }
Tensor Tensor::lerp(const Tensor& end, const Tensor& weight) const { return ember::lerp(*this, end, weight); }
Tensor Tensor::lerp(const Tensor& end, double weight) const { return ember::lerp(*this, end, weight); }

}  // namespace ember
