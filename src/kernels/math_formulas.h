// The per-element formulas of the math slots (tensor_kernels.h) whose results PyTorch defines
// bit for bit -- Python's // and %, and round at some decimals -- shared by the CPU reference
// (src/cpu/reference/tensor.cpp), the CPU loops (src/cpu/math.cpp) and the CUDA kernels
// (src/cuda/math.cu) so the twins cannot drift. They follow PyTorch's c10 helpers operation by
// operation (div_floor_floating, div_floor_integer, the remainder kernels).
#pragma once

#include <cmath>
#include <type_traits>

#ifdef __CUDACC__
#define EMBER_MATH_FN __host__ __device__ __forceinline__
#else
#define EMBER_MATH_FN inline
#endif

namespace ember::math_formulas {

// a // b for floats: fmod-based, so that a quotient just below an integer is not rounded up by
// the division (PyTorch's div_floor_floating); a zero divisor gives IEEE's a / b.
template <class T>
EMBER_MATH_FN T floor_divide_floating(T a, T b) {
  using std::copysign;
  using std::floor;
  using std::fmod;
  if (b == T(0)) return a / b;
  T mod = fmod(a, b);
  T div = (a - mod) / b;
  if (mod != T(0) && (b < T(0)) != (mod < T(0))) div -= T(1);
  if (div == T(0)) return copysign(T(0), a / b);
  T floordiv = floor(div);
  if (div - floordiv > T(0.5)) floordiv += T(1);
  return floordiv;
}
// a // b for integers (b != 0): truncation, minus one when the signs differ and the remainder is
// not zero.
template <class T>
EMBER_MATH_FN T floor_divide_integer(T a, T b) {
  if constexpr (std::is_signed_v<T>) {
    if ((a < 0) != (b < 0)) {
      const T q = T(a / b), r = T(a % b);
      return r != 0 ? T(q - 1) : q;
    }
  }
  return T(a / b);
}
template <class T>
EMBER_MATH_FN T floor_divide(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) return floor_divide_floating(a, b);
  else return floor_divide_integer(a, b);
}

// a % b with the sign of b (Python's %, PyTorch's remainder).
template <class T>
EMBER_MATH_FN T remainder(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    using std::fmod;
    T mod = fmod(a, b);
    if (mod != T(0) && (b < T(0)) != (mod < T(0))) mod += b;
    return mod;
  } else {
    T r = T(a % b);
    if constexpr (std::is_signed_v<T>) {
      if (r != 0 && (r < 0) != (b < 0)) r = T(r + b);
    }
    return r;
  }
}

// torch.round(x, decimals=d) for floats; scale = 10^|d| in T. Half to even (nearbyint in the
// default rounding mode).
template <class T>
EMBER_MATH_FN T round_decimals(T x, T scale, bool negative_decimals) {
  using std::nearbyint;
  return negative_decimals ? nearbyint(x / scale) * scale : nearbyint(x * scale) / scale;
}

}  // namespace ember::math_formulas
