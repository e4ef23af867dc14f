// CPU elementwise kernels: binary/unary math, copy with dtype conversion, fill, where, and the
// Philox random fills. The op switch sits outside the loops so each inner loop is one functor.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "core/tensor_raw.h"
#include "cpu/convert_bf16.h"
#include "cpu/dnnl_form.h"
#include "core/isa.h"
#include "cpu/loops.h"
#include "cpu/pool_grad.h"
#include "cpu/rows_f32.h"
#include "ember/core/generator.h"
#include "kernels/kernels.h"

namespace ember::cpu {

// ReLU forward and backward on float32 rows, vectorised with AVX-512 / AVX2 clones (the library is
// built without -march, so the generic loop1 below runs 4 floats per SSE2 step). Same select as the
// generic path (x > 0 ? x : 0, NaN -> 0), so the same bits. They sit between a batch norm or a conv
// and a pooling layer in every zoo CNN: ~10% of a bncnn training step before.
__attribute__((target_clones("avx512f", "avx2", "default")))
void relu_row_f32(const float* x, float* o, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) o[i] = x[i] > 0.f ? x[i] : 0.f;
}
__attribute__((target_clones("avx512f", "avx2", "default")))
void relu_backward_row_f32(const float* g, const float* out, float* gx, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) gx[i] = out[i] > 0.f ? g[i] : 0.f;
}
__attribute__((target_clones("avx512f", "avx2", "default")))
void add_row_f32(const float* x, const float* y, float* o, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) o[i] = x[i] + y[i];
}


using kernels::BinaryOp;
using kernels::RandomDist;
using kernels::UnaryOp;

namespace {

template <class Out, class In1, class In2, class F>
void loop2(const Tensor& a, const Tensor& b, const Tensor& out, F f) {
  strided_loop<3>(out.sizes(), {&out, &a, &b}, [&](std::array<char*, 3> p, std::array<int64_t, 3> s, int64_t n) {
    Out* o = reinterpret_cast<Out*>(p[0]);
    const In1* x = reinterpret_cast<const In1*>(p[1]);
    const In2* y = reinterpret_cast<const In2*>(p[2]);
    if (s[0] == 1 && s[1] == 1 && s[2] == 1) {
      for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], y[i]);
    } else if (s[0] == 1 && s[1] == 1 && s[2] == 0) {
      const In2 yv = *y;
      for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], yv);
    } else {
      for (int64_t i = 0; i < n; ++i) o[i * s[0]] = f(x[i * s[1]], y[i * s[2]]);
    }
  });
}

template <class Out, class In, class F>
void loop1(const Tensor& a, const Tensor& out, F f) {
  strided_loop<2>(out.sizes(), {&out, &a}, [&](std::array<char*, 2> p, std::array<int64_t, 2> s, int64_t n) {
    Out* o = reinterpret_cast<Out*>(p[0]);
    const In* x = reinterpret_cast<const In*>(p[1]);
    if (s[0] == 1 && s[1] == 1) {
      for (int64_t i = 0; i < n; ++i) o[i] = f(x[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) o[i * s[0]] = f(x[i * s[1]]);
    }
  });
}

void relu_f32(const Tensor& a, const Tensor& out) {
  strided_loop<2>(out.sizes(), {&out, &a}, [](std::array<char*, 2> p, std::array<int64_t, 2> s, int64_t n) {
    float* o = reinterpret_cast<float*>(p[0]);
    const float* x = reinterpret_cast<const float*>(p[1]);
    if (s[0] == 1 && s[1] == 1) return relu_row_f32(x, o, n);
    for (int64_t i = 0; i < n; ++i) o[i * s[0]] = x[i * s[1]] > 0.f ? x[i * s[1]] : 0.f;
  });
}

template <class T>
T pow_t(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::pow(a, b);
  } else if constexpr (std::is_same_v<T, bool>) {
    return a || !b;
  } else {
    if (b < 0) return a == 1 ? 1 : 0;
    T r = 1;
    for (T e = b; e > 0; --e) r *= a;
    return r;
  }
}

void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out, double alpha) {
  // Two activations held in oneDNN's layout (a residual block's add in inference): added there.
  if (op == BinaryOp::Add && alpha == 1.0 && (a.storage()->form() != nullptr || b.storage()->form() != nullptr) &&
      add_held(a, b, out))
    return;
  dispatch_numeric(a.dtype(), "binary op", [&]<class T>() {
    if (kernels::is_comparison(op)) {
      switch (op) {
        case BinaryOp::Eq: return loop2<bool, T, T>(a, b, out, [](T x, T y) { return x == y; });
        case BinaryOp::Ne: return loop2<bool, T, T>(a, b, out, [](T x, T y) { return x != y; });
        case BinaryOp::Lt: return loop2<bool, T, T>(a, b, out, [](T x, T y) { return x < y; });
        case BinaryOp::Le: return loop2<bool, T, T>(a, b, out, [](T x, T y) { return x <= y; });
        case BinaryOp::Gt: return loop2<bool, T, T>(a, b, out, [](T x, T y) { return x > y; });
        case BinaryOp::Ge: return loop2<bool, T, T>(a, b, out, [](T x, T y) { return x >= y; });
        default: break;
      }
      return;
    }
    if constexpr (std::is_same_v<T, bool>) {
      switch (op) {
        case BinaryOp::Add: case BinaryOp::Max: return loop2<T, T, T>(a, b, out, [](T x, T y) { return x || y; });
        case BinaryOp::Mul: case BinaryOp::Min: return loop2<T, T, T>(a, b, out, [](T x, T y) { return x && y; });
        default: throw DTypeError("this arithmetic op is not defined for bool tensors");
      }
    } else {
      const T al = T(alpha);
      switch (op) {
        case BinaryOp::Add:
          if (alpha == 1.0) return loop2<T, T, T>(a, b, out, [](T x, T y) { return T(x + y); });
          return loop2<T, T, T>(a, b, out, [al](T x, T y) { return T(x + al * y); });
        case BinaryOp::Sub:
          if (alpha == 1.0) return loop2<T, T, T>(a, b, out, [](T x, T y) { return T(x - y); });
          return loop2<T, T, T>(a, b, out, [al](T x, T y) { return T(x - al * y); });
        case BinaryOp::Mul: return loop2<T, T, T>(a, b, out, [](T x, T y) { return T(x * y); });
        case BinaryOp::Div:
          if constexpr (std::is_integral_v<T>) {
            return loop2<T, T, T>(a, b, out, [](T x, T y) {
              if (y == 0) throw ValueError("div: integer division by zero");
              return T(x / y);
            });
          } else {
            return loop2<T, T, T>(a, b, out, [](T x, T y) { return T(x / y); });
          }
        case BinaryOp::Pow: return loop2<T, T, T>(a, b, out, [](T x, T y) { return pow_t<T>(x, y); });
        case BinaryOp::Max:
          return loop2<T, T, T>(a, b, out, [](T x, T y) {
            if constexpr (std::is_floating_point_v<T>) if (std::isnan(x) || std::isnan(y)) return T(NAN);
            return x > y ? x : y;
          });
        case BinaryOp::Min:
          return loop2<T, T, T>(a, b, out, [](T x, T y) {
            if constexpr (std::is_floating_point_v<T>) if (std::isnan(x) || std::isnan(y)) return T(NAN);
            return x < y ? x : y;
          });
        default: break;
      }
    }
  });
}

template <class T>
T gelu(T x) { return T(0.5) * x * (T(1) + std::erf(x * T(M_SQRT1_2))); }
template <class T>
T gelu_grad(T x) {
  T cdf = T(0.5) * (T(1) + std::erf(x * T(M_SQRT1_2)));
  T pdf = std::exp(T(-0.5) * x * x) * T(0.3989422804014327);  // 1/sqrt(2 pi)
  return cdf + x * pdf;
}

void unary(UnaryOp op, const Tensor& a, const Tensor& out, double p0, double p1) {
  if (op == UnaryOp::Relu && a.storage()->form() != nullptr && relu_held(a, out)) return;
  if (op == UnaryOp::Neg || op == UnaryOp::Abs || op == UnaryOp::Sign || op == UnaryOp::Clamp ||
      op == UnaryOp::AddScalar || op == UnaryOp::MulScalar || op == UnaryOp::Relu) {
    // defined for every numeric dtype
    dispatch_numeric(a.dtype(), "unary op", [&]<class T>() {
      if constexpr (std::is_same_v<T, bool>) {
        throw DTypeError("this op is not defined for bool tensors");
      } else {
        switch (op) {
          case UnaryOp::Neg: return loop1<T, T>(a, out, [](T x) { return T(-x); });
          case UnaryOp::Abs: return loop1<T, T>(a, out, [](T x) { return x < 0 ? T(-x) : x; });
          case UnaryOp::Sign: return loop1<T, T>(a, out, [](T x) { return T((T(0) < x) - (x < T(0))); });
          case UnaryOp::Relu:
            if constexpr (std::is_same_v<T, float>) return relu_f32(a, out);
            else return loop1<T, T>(a, out, [](T x) { return x > 0 ? x : T(0); });
          case UnaryOp::AddScalar: return loop1<T, T>(a, out, [v = T(p0)](T x) { return T(x + v); });
          case UnaryOp::MulScalar: return loop1<T, T>(a, out, [v = T(p0)](T x) { return T(x * v); });
          case UnaryOp::Clamp:
            return loop1<T, T>(a, out, [p0, p1](T x) {
              if constexpr (std::is_floating_point_v<T>) if (std::isnan(x)) return x;
              double v = double(x);
              v = v < p0 ? p0 : v;
              v = v > p1 ? p1 : v;
              return T(v);
            });
          default: return;
        }
      }
    });
    return;
  }
  dispatch_floating(a.dtype(), "unary op", [&]<class T>() {
    switch (op) {
      case UnaryOp::Exp: return loop1<T, T>(a, out, [](T x) { return std::exp(x); });
      case UnaryOp::Log: return loop1<T, T>(a, out, [](T x) { return std::log(x); });
      case UnaryOp::Sqrt: return loop1<T, T>(a, out, [](T x) { return std::sqrt(x); });
      case UnaryOp::Rsqrt: return loop1<T, T>(a, out, [](T x) { return T(1) / std::sqrt(x); });
      case UnaryOp::Reciprocal: return loop1<T, T>(a, out, [](T x) { return T(1) / x; });
      case UnaryOp::Gelu: return loop1<T, T>(a, out, [](T x) { return gelu(x); });
      case UnaryOp::GeluGrad: return loop1<T, T>(a, out, [](T x) { return gelu_grad(x); });
      case UnaryOp::ReluGrad: return loop1<T, T>(a, out, [](T x) { return x > 0 ? T(1) : T(0); });
      case UnaryOp::Sigmoid:
        return loop1<T, T>(a, out, [](T x) {
          // stable on both tails
          if (x >= 0) return T(1) / (T(1) + std::exp(-x));
          T e = std::exp(x);
          return e / (T(1) + e);
        });
      case UnaryOp::Tanh: return loop1<T, T>(a, out, [](T x) { return std::tanh(x); });
      case UnaryOp::PowScalar: {
        T e = T(p0);
        if (p0 == 2.0) return loop1<T, T>(a, out, [](T x) { return x * x; });
        if (p0 == 0.5) return loop1<T, T>(a, out, [](T x) { return std::sqrt(x); });
        return loop1<T, T>(a, out, [e](T x) { return std::pow(x, e); });
      }
      default: return;
    }
  });
}

template <class D, class S>
D convert(S v) {
  if constexpr (std::is_same_v<D, bool>) return v != S(0);
  else return D(v);
}

// Conversions between every pair of dtypes; the 16-bit storage types go through float.
template <class D, class S>
D convert_any(S v) {
  constexpr bool s_half = std::is_same_v<S, bfloat16> || std::is_same_v<S, float16>;
  constexpr bool d_half = std::is_same_v<D, bfloat16> || std::is_same_v<D, float16>;
  if constexpr (d_half && s_half) return D(float(v));
  else if constexpr (d_half) return D(float(v));
  else if constexpr (s_half) return convert<D, double>(double(float(v)));
  else return convert<D, S>(v);
}

void copy(const Tensor& src, const Tensor& dst) {
  if (src.dtype() == dst.dtype() && src.is_contiguous() && dst.is_contiguous() &&
      src.sizes() == dst.sizes() && src.storage()->data() != nullptr) {
    if (dst.nbytes() > 0 && src.raw_data() != dst.raw_data())
      std::memcpy(dst.raw_data(), src.raw_data(), dst.nbytes());
    return;
  }
  // float32 <-> bfloat16 of whole contiguous tensors (autocast's casts): the vectorised loops.
  if (src.is_contiguous() && dst.is_contiguous() && src.sizes() == dst.sizes()) {
    if (src.dtype() == DType::Float32 && dst.dtype() == DType::BFloat16)
      return f32_to_bf16_array(src.data_ptr<float>(), static_cast<uint16_t*>(dst.raw_data()), dst.numel());
    if (src.dtype() == DType::BFloat16 && dst.dtype() == DType::Float32)
      return bf16_to_f32_array(static_cast<const uint16_t*>(src.raw_data()), dst.data_ptr<float>(), dst.numel());
  }
  dispatch_all(src.dtype(), "copy", [&]<class S>() {
    dispatch_all(dst.dtype(), "copy", [&]<class D>() { loop1<D, S>(src, dst, [](S v) { return convert_any<D, S>(v); }); });
  });
}

void fill(const Tensor& dst, double value) {
  Tensor v = core::empty({}, DType::Float64, Device::cpu());
  *v.data_ptr<double>() = value;
  copy(core::expand(v, dst.sizes()), dst);
}

void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) {
  dispatch_numeric(a.dtype(), "where", [&]<class T>() {
    strided_loop<4>(out.sizes(), {&out, &cond, &a, &b},
                    [](std::array<char*, 4> p, std::array<int64_t, 4> s, int64_t n) {
                      T* o = reinterpret_cast<T*>(p[0]);
                      const bool* c = reinterpret_cast<const bool*>(p[1]);
                      const T* x = reinterpret_cast<const T*>(p[2]);
                      const T* y = reinterpret_cast<const T*>(p[3]);
                      for (int64_t i = 0; i < n; ++i) o[i * s[0]] = c[i * s[1]] ? x[i * s[2]] : y[i * s[3]];
                    });
  });
}

// Bernoulli fills of float32 (dropout's masks), 16 Philox blocks at once on AVX-512: the same
// rounds as philox4x32_10 on 16 counters (the 32x32 -> 64-bit products of the even and the odd
// lanes through two vpmuludq), the draw taken as u < p exactly as the scalar loop (u = m * 2^-24 for
// the word's top 24 bits m, so u < p is m < ceil(p * 2^24)), and the 16 blocks' four words written
// interleaved as the stream's layout has them. Blocks [b0, b1), elements [4 b0, min(4 b1, n)).
// The scalar fill (double arithmetic per element) had been 6.7% of mnistnet's bf16 training step
// for its two dropouts (perf, Zen 5, 2026-12-02).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
__attribute__((target("avx512f"))) inline __m512i mulhi_epu32(__m512i a, __m512i m) {
  const __m512i even = _mm512_srli_epi64(_mm512_mul_epu32(a, m), 32);
  const __m512i odd = _mm512_mul_epu32(_mm512_srli_epi64(a, 32), m);
  return _mm512_mask_blend_epi32(0xAAAA, even, odd);
}
// The multipliers of 16 Philox blocks (64 elements, blocks blk .. blk + 15 of the stream at
// `offset`): tmp[4 b + j] = kept where word j of block blk + b draws u < p (m < threshold), else 0.
__attribute__((target("avx512f"))) inline void bernoulli_blocks16_avx512(float* tmp, int64_t blk,
                                                                          std::array<uint32_t, 2> key,
                                                                          uint64_t offset, uint32_t threshold,
                                                                          float kept) {
  const __m512i m0 = _mm512_set1_epi32(int(0xD2511F53u)), m1 = _mm512_set1_epi32(int(0xCD9E8D57u));
  const __m512i lanes = _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7);
  const __m512i thr = _mm512_set1_epi32(int(threshold));
  const __m512 one = _mm512_set1_ps(kept), zero = _mm512_setzero_ps();
  // Counters offset + blk + lane: low and high words, lanes 0-7 and 8-15 as two int64 vectors.
  const __m512i ca = _mm512_add_epi64(_mm512_set1_epi64(int64_t(offset + uint64_t(blk))), lanes);
  const __m512i cb = _mm512_add_epi64(ca, _mm512_set1_epi64(8));
  const __m512i lo_idx = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i hi_idx = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  __m512i c0 = _mm512_permutex2var_epi32(ca, lo_idx, cb), c1 = _mm512_permutex2var_epi32(ca, hi_idx, cb);
  __m512i c2 = _mm512_setzero_si512(), c3 = _mm512_setzero_si512();
  uint32_t k0 = key[0], k1 = key[1];
  for (int round = 0; round < 10; ++round) {
    const __m512i hi0 = mulhi_epu32(c0, m0), lo0 = _mm512_mullo_epi32(c0, m0);
    const __m512i hi1 = mulhi_epu32(c2, m1), lo1 = _mm512_mullo_epi32(c2, m1);
    const __m512i n0 = _mm512_xor_si512(_mm512_xor_si512(hi1, c1), _mm512_set1_epi32(int(k0)));
    const __m512i n2 = _mm512_xor_si512(_mm512_xor_si512(hi0, c3), _mm512_set1_epi32(int(k1)));
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  const __m512i w[4] = {c0, c1, c2, c3};
  __m512 f[4];
  for (int j = 0; j < 4; ++j)
    f[j] = _mm512_mask_blend_ps(_mm512_cmplt_epu32_mask(_mm512_srli_epi32(w[j], 8), thr), zero, one);
  // Transpose to the stream's order: element 4 * block + word.
  const __m512 t0 = _mm512_unpacklo_ps(f[0], f[1]), t1 = _mm512_unpackhi_ps(f[0], f[1]);
  const __m512 t2 = _mm512_unpacklo_ps(f[2], f[3]), t3 = _mm512_unpackhi_ps(f[2], f[3]);
  const __m512 u[4] = {_mm512_shuffle_ps(t0, t2, 0x44), _mm512_shuffle_ps(t0, t2, 0xEE),
                       _mm512_shuffle_ps(t1, t3, 0x44), _mm512_shuffle_ps(t1, t3, 0xEE)};
  // u[r] holds blocks r, r + 4, r + 8, r + 12 in its four 128-bit chunks.
  for (int r = 0; r < 4; ++r) {
    _mm_store_ps(tmp + 4 * r, _mm512_extractf32x4_ps(u[r], 0));
    _mm_store_ps(tmp + 4 * (r + 4), _mm512_extractf32x4_ps(u[r], 1));
    _mm_store_ps(tmp + 4 * (r + 8), _mm512_extractf32x4_ps(u[r], 2));
    _mm_store_ps(tmp + 4 * (r + 12), _mm512_extractf32x4_ps(u[r], 3));
  }
}

__attribute__((target("avx512f"))) void bernoulli_f32_avx512(float* o, int64_t n, int64_t b0, int64_t b1,
                                                              std::array<uint32_t, 2> key, uint64_t offset,
                                                              uint32_t threshold, float kept) {
  for (int64_t blk = b0; blk < b1; blk += 16) {
    alignas(64) float tmp[64];
    bernoulli_blocks16_avx512(tmp, blk, key, offset, threshold, kept);
    const int64_t first = 4 * blk, count = std::min<int64_t>(64, std::min<int64_t>(4 * b1, n) - first);
    if (count == 64) {
      for (int q = 0; q < 4; ++q) _mm512_storeu_ps(o + first + 16 * q, _mm512_load_ps(tmp + 16 * q));
    } else {
      for (int64_t i = 0; i < count; ++i) o[first + i] = tmp[i];
    }
  }
}

// Dropout forward in one pass (kernels.h): the multipliers of bernoulli_f32_avx512, applied to x as
// they are made (out = x * multiplier, the product the unfused mul computed) and kept as bits.
__attribute__((target("avx512f"))) void dropout_f32_avx512(const float* x, float* o, uint8_t* bits, int64_t n,
                                                            int64_t b0, int64_t b1, std::array<uint32_t, 2> key,
                                                            uint64_t offset, uint32_t threshold, float kept) {
  const __m512 zero = _mm512_setzero_ps();
  for (int64_t blk = b0; blk < b1; blk += 16) {
    alignas(64) float tmp[64];
    bernoulli_blocks16_avx512(tmp, blk, key, offset, threshold, kept);
    const int64_t first = 4 * blk, count = std::min<int64_t>(64, std::min<int64_t>(4 * b1, n) - first);
    uint64_t word = 0;
    for (int q = 0; q < 4; ++q) {
      const int64_t left = std::clamp<int64_t>(count - 16 * q, 0, 16);
      const __mmask16 live = __mmask16((1u << left) - 1u);
      const __m512 m = _mm512_load_ps(tmp + 16 * q);
      const __m512 v = _mm512_maskz_loadu_ps(live, x + first + 16 * q);
      _mm512_mask_storeu_ps(o + first + 16 * q, live, _mm512_mul_ps(v, m));
      word |= uint64_t(_mm512_mask_cmpneq_ps_mask(live, m, zero)) << (16 * q);
    }
    std::memcpy(bits + first / 8, &word, 8);  // bits holds whole 64-bit words
  }
}

// Dropout backward (kernels.h): grad_x = grad_out * (bit ? kept : 0), the unfused mul's product.
// [i0, i1): i0 a multiple of 64.
__attribute__((target("avx512f"))) void dropout_backward_f32_avx512(const float* g, const uint8_t* bits, float* gx,
                                                                     int64_t i0, int64_t i1, float kept) {
  const __m512 k = _mm512_set1_ps(kept), zero = _mm512_setzero_ps();
  for (int64_t i = i0; i < i1; i += 16) {
    const int64_t left = std::min<int64_t>(16, i1 - i);
    const __mmask16 live = __mmask16((1u << left) - 1u);
    uint16_t b = 0;
    std::memcpy(&b, bits + i / 8, 2);
    const __m512 m = _mm512_mask_blend_ps(__mmask16(b), zero, k);
    _mm512_mask_storeu_ps(gx + i, live, _mm512_mul_ps(_mm512_maskz_loadu_ps(live, g + i), m));
  }
}
#pragma GCC diagnostic pop

// Bernoulli(p)'s draw as an integer compare: u < p for u = m * 2^-24 and integer m in [0, 2^24) is
// m < ceil(p * 2^24) (m: the top 24 bits of a Philox word).
inline uint32_t bernoulli_threshold(double p) { return uint32_t(std::ceil(std::clamp(p, 0.0, 1.0) * 0x1p24)); }

// The Bernoulli fill's and dropout's thread split: `groups` of 16 Philox blocks (64 elements, one
// 64-bit word of dropout's bits) in one contiguous range per OpenMP thread (static schedule), so no
// two threads write the same byte; f(g0, g1) for each non-empty range. Parallel above kParallelGrain
// elements (n).
template <class F>
void per_thread_groups(int64_t groups, int64_t n, F&& f) {
#pragma omp parallel if (n > kParallelGrain)
  {
    const int64_t nt = omp_get_num_threads(), id = omp_get_thread_num();
    const int64_t g0 = groups * id / nt, g1 = groups * (id + 1) / nt;
    if (g1 > g0) f(g0, g1);
  }
}

// Random fills follow generator.h's layout: element i uses word i%4 of block (offset + i/4).
void random(RandomDist dist, const Tensor& out, uint64_t seed, uint64_t offset, double p0, double p1) {
  EMBER_ASSERT(out.is_contiguous());
  const int64_t n = out.numel();
  const int64_t blocks = (n + 3) / 4;
  const std::array<uint32_t, 2> key{uint32_t(seed), uint32_t(seed >> 32)};
  const bool avx512 = have_avx512();
  if (dist == RandomDist::Bernoulli && out.dtype() == DType::Float32 && avx512) {
    const uint32_t threshold = bernoulli_threshold(p0);
    float* o = out.data_ptr<float>();
    const float kept = float(p1);
    per_thread_groups((blocks + 15) / 16, n, [&](int64_t g0, int64_t g1) {
      bernoulli_f32_avx512(o, n, 16 * g0, std::min<int64_t>(16 * g1, blocks), key, offset, threshold, kept);
    });
    return;
  }
  dispatch_numeric(out.dtype(), "random", [&]<class T>() {
    T* o = out.data_ptr<T>();
#pragma omp parallel for schedule(static) if (n > kParallelGrain)
    for (int64_t blk = 0; blk < blocks; ++blk) {
      uint64_t ctr = offset + uint64_t(blk);
      auto w = philox4x32_10({uint32_t(ctr), uint32_t(ctr >> 32), 0, 0}, key);
      double v[4];
      switch (dist) {
        case RandomDist::Uniform:
          for (int j = 0; j < 4; ++j) v[j] = p0 + double(w[j] >> 8) * 0x1p-24 * (p1 - p0);
          break;
        case RandomDist::Normal:
          for (int j = 0; j < 4; j += 2) {
            double u1 = double((w[j] >> 8) + 1) * 0x1p-24;
            double u2 = double(w[j + 1] >> 8) * 0x1p-24;
            double r = std::sqrt(-2.0 * std::log(u1));
            v[j] = p0 + p1 * r * std::cos(2.0 * M_PI * u2);
            v[j + 1] = p0 + p1 * r * std::sin(2.0 * M_PI * u2);
          }
          break;
        case RandomDist::RandInt: {
          uint64_t range = uint64_t(int64_t(p1) - int64_t(p0));
          for (int j = 0; j < 4; ++j) v[j] = double(int64_t(p0) + int64_t(w[j] % range));
          break;
        }
        case RandomDist::Bernoulli:
          for (int j = 0; j < 4; ++j) v[j] = double(w[j] >> 8) * 0x1p-24 < p0 ? p1 : 0.0;
          break;
      }
      for (int j = 0; j < 4; ++j) {
        int64_t i = blk * 4 + j;
        if (i < n) o[i] = convert<T, double>(v[j]);
      }
    }
  });
}

// Dropout's two passes (kernels.h), split as the Bernoulli fill (per_thread_groups).
void dropout_forward(const Tensor& x, const Tensor& out, const Tensor& bits, uint64_t seed, uint64_t offset,
                     double keep, double scale) {
  const int64_t n = out.numel(), blocks = (n + 3) / 4;
  const std::array<uint32_t, 2> key{uint32_t(seed), uint32_t(seed >> 32)};
  const uint32_t threshold = bernoulli_threshold(keep);
  const float kept = float(scale);
  const float* xp = x.data_ptr<float>();
  float* o = out.data_ptr<float>();
  uint8_t* b = bits.data_ptr<uint8_t>();
  const bool avx512 = have_avx512();
  per_thread_groups((blocks + 15) / 16, n, [&](int64_t g0, int64_t g1) {
    if (avx512)
      return dropout_f32_avx512(xp, o, b, n, 16 * g0, std::min<int64_t>(16 * g1, blocks), key, offset, threshold,
                                kept);
    for (int64_t grp = g0; grp < g1; ++grp) {
      uint64_t word = 0;
      for (int64_t blk = 16 * grp; blk < std::min<int64_t>(16 * grp + 16, blocks); ++blk) {
        const uint64_t ctr = offset + uint64_t(blk);
        const auto w = philox4x32_10({uint32_t(ctr), uint32_t(ctr >> 32), 0, 0}, key);
        for (int j = 0; j < 4 && 4 * blk + j < n; ++j) {
          const int64_t i = 4 * blk + j;
          const bool on = (w[j] >> 8) < threshold;
          o[i] = xp[i] * (on ? kept : 0.0f);
          word |= uint64_t(on) << (i - 64 * grp);
        }
      }
      std::memcpy(b + 8 * grp, &word, 8);
    }
  });
}

void dropout_backward(const Tensor& grad_out, const Tensor& bits, double scale, const Tensor& grad_x) {
  const int64_t n = grad_x.numel();
  const float kept = float(scale);
  const float* g = grad_out.data_ptr<float>();
  const uint8_t* b = bits.data_ptr<uint8_t>();
  float* gx = grad_x.data_ptr<float>();
  const bool avx512 = have_avx512();
  per_thread_groups((n + 63) / 64, n, [&](int64_t g0, int64_t g1) {
    const int64_t i0 = 64 * g0, i1 = std::min<int64_t>(64 * g1, n);
    if (avx512) return dropout_backward_f32_avx512(g, b, gx, i0, i1, kept);
    for (int64_t i = i0; i < i1; ++i) gx[i] = g[i] * (((b[i / 8] >> (i % 8)) & 1) ? kept : 0.0f);
  });
}

// ReLU backward in one pass (see kernels.h).
void relu_backward(const Tensor& grad_out, const Tensor& out, const Tensor& grad_x) {
  if (out.storage()->form() != nullptr && grad_out.storage()->form() != nullptr &&
      relu_backward_held(grad_out, out, grad_x))
    return;
  // A fused ReLU convolution's output gradient from the 2x2 max pooling over that output, never
  // written (pool_grad.h): made masked in one pass, in the output's layout at float32, where the
  // convolution's backward reads it.
  if (const PooledGradForm* pf = pooled_grad_form(grad_out); pf != nullptr && pf->pooled(out) && forms_enabled()) {
    const ChannelBlocked ob = channel_blocked(out);
    if (ob.form != nullptr && can_hold(grad_x, ob)) {
      const dnnl::memory::desc d = ob.f32_desc();
      Storage buffer = std::make_shared<StorageImpl>(d.get_size(), Device::cpu());
      if (write_pooled_grad(*pf, PooledGradOut::F32Relu, buffer->data())) {
        hold_array(grad_x, d, std::move(buffer));
        return;
      }
    }
  }
  dispatch_floating(out.dtype(), "relu_backward", [&]<class T>() {
    if constexpr (std::is_same_v<T, float>) {
      strided_loop<3>(grad_x.sizes(), {&grad_x, &grad_out, &out},
                      [](std::array<char*, 3> p, std::array<int64_t, 3> s, int64_t n) {
                        float* gx = reinterpret_cast<float*>(p[0]);
                        const float* g = reinterpret_cast<const float*>(p[1]);
                        const float* o = reinterpret_cast<const float*>(p[2]);
                        if (s[0] == 1 && s[1] == 1 && s[2] == 1) return relu_backward_row_f32(g, o, gx, n);
                        for (int64_t i = 0; i < n; ++i) gx[i * s[0]] = o[i * s[2]] > 0.f ? g[i * s[1]] : 0.f;
                      });
    } else {
      loop2<T, T, T>(grad_out, out, grad_x, [](T g, T o) { return o > T(0) ? g : T(0); });
    }
  });
}

}  // namespace

void register_elementwise_kernels() {
  kernels::relu_backward.set(DeviceType::CPU, &relu_backward);
  kernels::binary.set(DeviceType::CPU, &binary);
  kernels::unary.set(DeviceType::CPU, &unary);
  kernels::copy.set(DeviceType::CPU, &copy);
  kernels::fill.set(DeviceType::CPU, &fill);
  kernels::where.set(DeviceType::CPU, &where);
  kernels::random.set(DeviceType::CPU, &random);
  kernels::dropout_forward.set(DeviceType::CPU, &dropout_forward);
  kernels::dropout_backward.set(DeviceType::CPU, &dropout_backward);
}

}  // namespace ember::cpu
