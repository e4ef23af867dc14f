// CUDA element-wise math beyond elementwise.cu's, the twin of src/cpu/math.cpp: sin, cos, log1p,
// expm1, floor / ceil / trunc / round, the NaN / inf predicates, bitwise and logical not
// (math_unary); Python's // and %, bitwise and / or / xor (math_binary). One strided launch per
// call (cuda/loops.cuh); the formulas PyTorch defines bit for bit from kernels/math_formulas.h.
#include <type_traits>

#include "cuda/loops.cuh"
#include "kernels/math_formulas.h"
#include "kernels/tensor_kernels.h"

namespace ember::cuda {

using kernels::MathBinaryOp;
using kernels::MathUnaryOp;

namespace {

template <class T>
struct FloatUnaryFunctor {
  MathUnaryOp op;
  void* out;  // T, or bool for the predicates
  const T* a;
  T scale;  // Round: 10^|decimals|
  int decimals;
  __device__ void operator()(const int64_t (&o)[2]) const {
    const T x = a[o[1]];
    T* ot = static_cast<T*>(out);
    bool* ob = static_cast<bool*>(out);
    switch (op) {
      case MathUnaryOp::Sin: ot[o[0]] = ::sin(x); break;
      case MathUnaryOp::Cos: ot[o[0]] = ::cos(x); break;
      case MathUnaryOp::Log1p: ot[o[0]] = ::log1p(x); break;
      case MathUnaryOp::Expm1: ot[o[0]] = ::expm1(x); break;
      case MathUnaryOp::Floor: ot[o[0]] = ::floor(x); break;
      case MathUnaryOp::Ceil: ot[o[0]] = ::ceil(x); break;
      case MathUnaryOp::Trunc: ot[o[0]] = ::trunc(x); break;
      case MathUnaryOp::Round:
        ot[o[0]] = decimals == 0 ? ::nearbyint(x) : math_formulas::round_decimals(x, scale, decimals < 0);
        break;
      case MathUnaryOp::IsNan: ob[o[0]] = ::isnan(x); break;
      case MathUnaryOp::IsInf: ob[o[0]] = ::isinf(x); break;
      case MathUnaryOp::IsFinite: ob[o[0]] = ::isfinite(x); break;
      default: break;
    }
  }
};

template <class T>
struct NotFunctor {
  bool logical;  // LogicalNot: out is bool
  void* out;
  const T* a;
  __device__ void operator()(const int64_t (&o)[2]) const {
    const T x = a[o[1]];
    if (logical) {
      static_cast<bool*>(out)[o[0]] = x == T(0);
    } else if constexpr (std::is_same_v<T, bool>) {
      static_cast<T*>(out)[o[0]] = !x;
    } else if constexpr (std::is_integral_v<T>) {
      static_cast<T*>(out)[o[0]] = T(~x);
    }
  }
};

void math_unary(MathUnaryOp op, const Tensor& a, const Tensor& out, int64_t decimals) {
  if (op == MathUnaryOp::LogicalNot || op == MathUnaryOp::BitwiseNot) {
    dispatch_numeric(a.dtype(), "math_unary", [&]<class T>() {
      if constexpr (std::is_floating_point_v<T>) {
        if (op == MathUnaryOp::BitwiseNot) throw DTypeError("bitwise_not: expected an integer or bool tensor");
      }
      launch_elementwise<2>(out.sizes(), {&out, &a},
                            NotFunctor<T>{op == MathUnaryOp::LogicalNot, out.raw_data(), a.data_ptr<T>()});
    });
    return;
  }
  dispatch_floating(a.dtype(), "math_unary", [&]<class T>() {
    const T scale = T(::pow(10.0, double(decimals < 0 ? -decimals : decimals)));
    launch_elementwise<2>(out.sizes(), {&out, &a},
                          FloatUnaryFunctor<T>{op, out.raw_data(), a.data_ptr<T>(), scale, int(decimals)});
  });
}

template <class T>
struct BinaryFunctor {
  MathBinaryOp op;
  T* out;
  const T* a;
  const T* b;
  __device__ void operator()(const int64_t (&o)[3]) const {
    const T x = a[o[1]], y = b[o[2]];
    T r{};
    if constexpr (std::is_same_v<T, bool>) {
      r = op == MathBinaryOp::BitwiseAnd ? (x && y) : op == MathBinaryOp::BitwiseOr ? (x || y) : (x != y);
    } else {
      switch (op) {
        case MathBinaryOp::FloorDivide: r = math_formulas::floor_divide(x, y); break;
        case MathBinaryOp::Remainder: r = math_formulas::remainder(x, y); break;
        default:
          if constexpr (std::is_integral_v<T>) {
            r = op == MathBinaryOp::BitwiseAnd ? T(x & y) : op == MathBinaryOp::BitwiseOr ? T(x | y) : T(x ^ y);
          }
      }
    }
    out[o[0]] = r;
  }
};

void math_binary(MathBinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  const bool bitwise = op != MathBinaryOp::FloorDivide && op != MathBinaryOp::Remainder;
  dispatch_numeric(a.dtype(), "math_binary", [&]<class T>() {
    if (bitwise && std::is_floating_point_v<T>) throw DTypeError("bitwise ops: expected integer or bool tensors");
    if (!bitwise && std::is_same_v<T, bool>) throw DTypeError("floor_divide / remainder: not defined for bool tensors");
    launch_elementwise<3>(out.sizes(), {&out, &a, &b}, BinaryFunctor<T>{op, out.data_ptr<T>(), a.data_ptr<T>(), b.data_ptr<T>()});
  });
}

}  // namespace

void register_math_kernels() {
  kernels::math_unary.set(DeviceType::CUDA, &math_unary);
  kernels::math_binary.set(DeviceType::CUDA, &math_binary);
}

}  // namespace ember::cuda
