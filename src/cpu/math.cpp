// CPU element-wise math beyond elementwise.cpp's: sin, cos, log1p, expm1, floor / ceil / trunc /
// round, the NaN / inf predicates, bitwise and logical not (math_unary); Python's // and %, bitwise
// and / or / xor (math_binary). Strided loops over OpenMP threads (cpu/loops.h); the per-element
// formulas PyTorch defines bit for bit come from kernels/math_formulas.h. Twin: cuda/math.cu.
#include <cmath>
#include <type_traits>

#include "cpu/loops.h"
#include "kernels/math_formulas.h"
#include "kernels/tensor_kernels.h"

namespace ember::cpu {

using kernels::MathBinaryOp;
using kernels::MathUnaryOp;

namespace {

template <class Out, class In, class F>
void map1(const Tensor& a, const Tensor& out, F f) {
  strided_loop<2>(out.sizes(), {&out, &a}, [&](std::array<char*, 2> p, std::array<int64_t, 2> s, int64_t n) {
    Out* o = reinterpret_cast<Out*>(p[0]);
    const In* x = reinterpret_cast<const In*>(p[1]);
    for (int64_t i = 0; i < n; ++i) o[i * s[0]] = f(x[i * s[1]]);
  });
}

template <class T, class F>
void map2(const Tensor& a, const Tensor& b, const Tensor& out, F f) {
  strided_loop<3>(out.sizes(), {&out, &a, &b}, [&](std::array<char*, 3> p, std::array<int64_t, 3> s, int64_t n) {
    T* o = reinterpret_cast<T*>(p[0]);
    const T* x = reinterpret_cast<const T*>(p[1]);
    const T* y = reinterpret_cast<const T*>(p[2]);
    for (int64_t i = 0; i < n; ++i) o[i * s[0]] = f(x[i * s[1]], y[i * s[2]]);
  });
}

void math_unary(MathUnaryOp op, const Tensor& a, const Tensor& out, int64_t decimals) {
  if (op == MathUnaryOp::LogicalNot) {
    dispatch_numeric(a.dtype(), "logical_not", [&]<class T>() { map1<bool, T>(a, out, [](T x) { return x == T(0); }); });
    return;
  }
  if (op == MathUnaryOp::BitwiseNot) {
    dispatch_numeric(a.dtype(), "bitwise_not", [&]<class T>() {
      if constexpr (std::is_same_v<T, bool>) map1<T, T>(a, out, [](T x) { return !x; });
      else if constexpr (std::is_integral_v<T>) map1<T, T>(a, out, [](T x) { return T(~x); });
      else throw DTypeError("bitwise_not: expected an integer or bool tensor");
    });
    return;
  }
  dispatch_floating(a.dtype(), "math_unary", [&]<class T>() {
    switch (op) {
      case MathUnaryOp::Sin: return map1<T, T>(a, out, [](T x) { return std::sin(x); });
      case MathUnaryOp::Cos: return map1<T, T>(a, out, [](T x) { return std::cos(x); });
      case MathUnaryOp::Log1p: return map1<T, T>(a, out, [](T x) { return std::log1p(x); });
      case MathUnaryOp::Expm1: return map1<T, T>(a, out, [](T x) { return std::expm1(x); });
      case MathUnaryOp::Floor: return map1<T, T>(a, out, [](T x) { return std::floor(x); });
      case MathUnaryOp::Ceil: return map1<T, T>(a, out, [](T x) { return std::ceil(x); });
      case MathUnaryOp::Trunc: return map1<T, T>(a, out, [](T x) { return std::trunc(x); });
      case MathUnaryOp::Round: {
        if (decimals == 0) return map1<T, T>(a, out, [](T x) { return std::nearbyint(x); });
        const bool neg = decimals < 0;
        const T scale = T(std::pow(10.0, double(neg ? -decimals : decimals)));
        return map1<T, T>(a, out, [scale, neg](T x) { return math_formulas::round_decimals(x, scale, neg); });
      }
      case MathUnaryOp::IsNan: return map1<bool, T>(a, out, [](T x) { return std::isnan(x); });
      case MathUnaryOp::IsInf: return map1<bool, T>(a, out, [](T x) { return std::isinf(x); });
      case MathUnaryOp::IsFinite: return map1<bool, T>(a, out, [](T x) { return std::isfinite(x); });
      default: return;
    }
  });
}

void math_binary(MathBinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  dispatch_numeric(a.dtype(), "math_binary", [&]<class T>() {
    switch (op) {
      case MathBinaryOp::FloorDivide:
      case MathBinaryOp::Remainder:
        if constexpr (std::is_same_v<T, bool>) {
          throw DTypeError("floor_divide / remainder: not defined for bool tensors");
        } else if (op == MathBinaryOp::FloorDivide) {
          return map2<T>(a, b, out, [](T x, T y) { return math_formulas::floor_divide(x, y); });
        } else {
          return map2<T>(a, b, out, [](T x, T y) { return math_formulas::remainder(x, y); });
        }
      case MathBinaryOp::BitwiseAnd:
      case MathBinaryOp::BitwiseOr:
      case MathBinaryOp::BitwiseXor:
        if constexpr (std::is_floating_point_v<T>) {
          throw DTypeError("bitwise ops: expected integer or bool tensors");
        } else if (op == MathBinaryOp::BitwiseAnd) {
          return map2<T>(a, b, out, [](T x, T y) { return T(x & y); });
        } else if (op == MathBinaryOp::BitwiseOr) {
          return map2<T>(a, b, out, [](T x, T y) { return T(x | y); });
        } else {
          return map2<T>(a, b, out, [](T x, T y) { return T(x ^ y); });
        }
    }
  });
}

}  // namespace

void register_math_kernels() {
  kernels::math_unary.set(DeviceType::CPU, &math_unary);
  kernels::math_binary.set(DeviceType::CPU, &math_binary);
}

}  // namespace ember::cpu
