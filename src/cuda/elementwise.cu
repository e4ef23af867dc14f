// CUDA elementwise kernels: binary/unary math, copy with dtype conversion, fill, where, and the
// Philox random fills -- the twins of src/cpu/elementwise.cpp, with the same numerics: unary and
// binary ops compute in the element type, copies to/from bfloat16/float16 go through float, random
// numbers follow generator.h bit for bit (uniform, randint, bernoulli; normal to float tolerance).
#include <cuda_fp16.h>

#include <cstring>
#include <type_traits>

#include "core/tensor_raw.h"
#include "cuda/cast.h"
#include "cuda/half_convert.cuh"
#include "cuda/loops.cuh"
#include "kernels/kernels.h"

namespace ember::cuda {

using kernels::BinaryOp;
using kernels::RandomDist;
using kernels::UnaryOp;

namespace {

template <class T> inline constexpr bool kFloat = std::is_floating_point_v<T>;

// ---- binary -----------------------------------------------------------------------------------
template <class T>
__device__ T pow_t(T a, T b) {
  if constexpr (kFloat<T>) {
    return ::pow(a, b);
  } else if constexpr (std::is_same_v<T, bool>) {
    return a || !b;
  } else {
    if constexpr (std::is_signed_v<T>) if (b < 0) return a == 1 ? 1 : 0;
    T r = 1;
    for (T e = b; e > 0; --e) r *= a;
    return r;
  }
}

template <class T>
struct CompareFunctor {
  BinaryOp op;
  bool* out;
  const T* a;
  const T* b;
  __device__ void operator()(const int64_t (&o)[3]) const {
    const T x = a[o[1]], y = b[o[2]];
    bool r = false;
    switch (op) {
      case BinaryOp::Eq: r = x == y; break;
      case BinaryOp::Ne: r = x != y; break;
      case BinaryOp::Lt: r = x < y; break;
      case BinaryOp::Le: r = x <= y; break;
      case BinaryOp::Gt: r = x > y; break;
      case BinaryOp::Ge: r = x >= y; break;
      default: break;
    }
    out[o[0]] = r;
  }
};

template <class T>
struct ArithFunctor {
  BinaryOp op;
  T* out;
  const T* a;
  const T* b;
  T alpha;
  int* div_by_zero;  // set when an integer division by zero happens (host throws afterwards)
  __device__ void operator()(const int64_t (&o)[3]) const {
    const T x = a[o[1]], y = b[o[2]];
    T r{};
    if constexpr (std::is_same_v<T, bool>) {
      r = (op == BinaryOp::Add || op == BinaryOp::Max) ? (x || y) : (x && y);
    } else {
      switch (op) {
        case BinaryOp::Add: r = T(x + alpha * y); break;
        case BinaryOp::Sub: r = T(x - alpha * y); break;
        case BinaryOp::Mul: r = T(x * y); break;
        case BinaryOp::Div:
          if constexpr (kFloat<T>) {
            r = T(x / y);
          } else if (y == 0) {
            *div_by_zero = 1;
          } else {
            r = T(x / y);
          }
          break;
        case BinaryOp::Pow: r = pow_t<T>(x, y); break;
        case BinaryOp::Max:
          if constexpr (kFloat<T>) if (::isnan(x) || ::isnan(y)) { r = T(NAN); break; }
          r = x > y ? x : y;
          break;
        case BinaryOp::Min:
          if constexpr (kFloat<T>) if (::isnan(x) || ::isnan(y)) { r = T(NAN); break; }
          r = x < y ? x : y;
          break;
        default: break;
      }
    }
    out[o[0]] = r;
  }
};

void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out, double alpha) {
  dispatch_numeric(a.dtype(), "binary op", [&]<class T>() {
    if (kernels::is_comparison(op)) {
      launch_elementwise<3>(out.sizes(), {&out, &a, &b},
                            CompareFunctor<T>{op, out.data_ptr<bool>(), a.data_ptr<T>(), b.data_ptr<T>()});
      return;
    }
    if constexpr (std::is_same_v<T, bool>) {
      EMBER_CHECK(op == BinaryOp::Add || op == BinaryOp::Max || op == BinaryOp::Mul || op == BinaryOp::Min,
                  DTypeError, "this arithmetic op is not defined for bool tensors");
    }
    // Integer division by zero throws on the CPU; here the kernel raises a flag the host reads.
    const bool int_div = op == BinaryOp::Div && !kFloat<T> && !std::is_same_v<T, bool>;
    Tensor flag;
    if (int_div) {
      flag = core::empty({1}, DType::Int32, out.device());
      kernels::fill(flag.device())(flag, 0.0);
    }
    T al{};
    if constexpr (!std::is_same_v<T, bool>) al = T(alpha);
    launch_elementwise<3>(out.sizes(), {&out, &a, &b},
                          ArithFunctor<T>{op, out.data_ptr<T>(), a.data_ptr<T>(), b.data_ptr<T>(), al,
                                          int_div ? flag.data_ptr<int>() : nullptr});
    if (int_div)
      EMBER_CHECK(*core::to(flag, Device::cpu()).data_ptr<int32_t>() == 0, ValueError, "div: integer division by zero");
  });
}

// ---- unary ------------------------------------------------------------------------------------
template <class T>
__device__ T gelu(T x) { return T(0.5) * x * (T(1) + ::erf(x * T(0.70710678118654752440))); }
template <class T>
__device__ T gelu_grad(T x) {
  T cdf = T(0.5) * (T(1) + ::erf(x * T(0.70710678118654752440)));
  T pdf = ::exp(T(-0.5) * x * x) * T(0.3989422804014327);  // 1/sqrt(2 pi)
  return cdf + x * pdf;
}

template <class T>
struct UnaryFunctor {
  UnaryOp op;
  T* out;
  const T* a;
  double p0, p1;
  __device__ void operator()(const int64_t (&o)[2]) const {
    const T x = a[o[1]];
    T r{};
    switch (op) {
      case UnaryOp::Neg: r = T(-x); break;
      case UnaryOp::Abs:
        if constexpr (std::is_signed_v<T>) r = x < 0 ? T(-x) : x;
        else r = x;
        break;
      case UnaryOp::Sign:
        if constexpr (std::is_signed_v<T>) r = T((T(0) < x) - (x < T(0)));
        else r = T(T(0) < x);
        break;
      case UnaryOp::Relu: r = x > 0 ? x : T(0); break;
      case UnaryOp::AddScalar: r = T(x + T(p0)); break;
      case UnaryOp::MulScalar: r = T(x * T(p0)); break;
      case UnaryOp::Clamp: {
        if constexpr (kFloat<T>) if (::isnan(x)) { r = x; break; }
        double v = double(x);
        v = v < p0 ? p0 : v;
        v = v > p1 ? p1 : v;
        r = T(v);
        break;
      }
      default:
        if constexpr (kFloat<T>) {
          switch (op) {
            case UnaryOp::Exp: r = ::exp(x); break;
            case UnaryOp::Log: r = ::log(x); break;
            case UnaryOp::Sqrt: r = ::sqrt(x); break;
            case UnaryOp::Rsqrt: r = T(1) / ::sqrt(x); break;
            case UnaryOp::Reciprocal: r = T(1) / x; break;
            case UnaryOp::Gelu: r = gelu(x); break;
            case UnaryOp::GeluGrad: r = gelu_grad(x); break;
            case UnaryOp::ReluGrad: r = x > 0 ? T(1) : T(0); break;
            case UnaryOp::Sigmoid:
              if (x >= 0) {
                r = T(1) / (T(1) + ::exp(-x));
              } else {
                T e = ::exp(x);
                r = e / (T(1) + e);
              }
              break;
            case UnaryOp::Tanh: r = ::tanh(x); break;
            case UnaryOp::PowScalar:
              r = p0 == 2.0 ? x * x : p0 == 0.5 ? ::sqrt(x) : ::pow(x, T(p0));
              break;
            default: break;
          }
        }
    }
    out[o[0]] = r;
  }
};

bool defined_for_integers(UnaryOp op) {
  return op == UnaryOp::Neg || op == UnaryOp::Abs || op == UnaryOp::Sign || op == UnaryOp::Clamp ||
         op == UnaryOp::AddScalar || op == UnaryOp::MulScalar || op == UnaryOp::Relu;
}

void unary(UnaryOp op, const Tensor& a, const Tensor& out, double p0, double p1) {
  auto run = [&]<class T>() {
    if constexpr (std::is_same_v<T, bool>) {
      throw DTypeError("this op is not defined for bool tensors");
    } else {
      launch_elementwise<2>(out.sizes(), {&out, &a}, UnaryFunctor<T>{op, out.data_ptr<T>(), a.data_ptr<T>(), p0, p1});
    }
  };
  if (defined_for_integers(op)) dispatch_numeric(a.dtype(), "unary op", run);
  else dispatch_floating(a.dtype(), "unary op", run);
}

// ---- copy with dtype conversion ----------------------------------------------------------------
struct bf16_bits { uint16_t x; };
struct half_bits { uint16_t x; };

template <class S>
__device__ double to_double(S v) {
  if constexpr (std::is_same_v<S, bf16_bits>) return double(bf16_to_float_dev(v.x));
  else if constexpr (std::is_same_v<S, half_bits>) return double(half_to_float_dev(v.x));
  else return double(v);
}
template <class S> inline constexpr bool kHalfish = std::is_same_v<S, bf16_bits> || std::is_same_v<S, half_bits>;

template <class D, class S>
__device__ D convert(S v) {
  if constexpr (std::is_same_v<D, bf16_bits>) {
    return D{float_to_bf16_dev(float(to_double(v)))};
  } else if constexpr (std::is_same_v<D, half_bits>) {
    return D{float_to_half_dev(float(to_double(v)))};
  } else if constexpr (kHalfish<S>) {
    return convert<D, double>(to_double(v));
  } else if constexpr (std::is_same_v<D, bool>) {
    return v != S(0);
  } else {
    return D(v);
  }
}

template <class D, class S>
struct CopyFunctor {
  D* dst;
  const S* src;
  __device__ void operator()(const int64_t (&o)[2]) const { dst[o[0]] = convert<D, S>(src[o[1]]); }
};

template <class F>
void dispatch_all_with_half(DType t, F&& f) {
  switch (t) {
    case DType::BFloat16: return f.template operator()<bf16_bits>();
    case DType::Float16: return f.template operator()<half_bits>();
    default: break;
  }
  dispatch_numeric(t, "copy", [&]<class T>() { f.template operator()<T>(); });
}

void copy(const Tensor& src, const Tensor& dst) {
  if (src.dtype() == dst.dtype() && src.is_contiguous() && dst.is_contiguous() && src.sizes() == dst.sizes()) {
    if (dst.nbytes() > 0 && src.raw_data() != dst.raw_data()) {
      const int dev = dst.device().index;
      DeviceGuard g(dev);
      EMBER_CUDA_CHECK(cudaMemcpyAsync(dst.raw_data(), src.raw_data(), dst.nbytes(), cudaMemcpyDeviceToDevice, stream(dev)));
    }
    return;
  }
  if (cast_contiguous(src, dst)) return;  // float32 <-> bfloat16 / float16, the autocast casts
  dispatch_all_with_half(src.dtype(), [&]<class S>() {
    dispatch_all_with_half(dst.dtype(), [&]<class D>() {
      launch_elementwise<2>(dst.sizes(), {&dst, &src},
                            CopyFunctor<D, S>{static_cast<D*>(dst.raw_data()), static_cast<const S*>(src.raw_data())});
    });
  });
}

// ---- fill -------------------------------------------------------------------------------------
template <class E>
struct FillFunctor {
  E* dst;
  E value;
  __device__ void operator()(const int64_t (&o)[1]) const { dst[o[0]] = value; }
};

// The bytes of `value` in dtype t, converted as the CPU's copy from a float64 scalar does.
uint64_t fill_pattern(DType t, double v) {
  uint64_t bits = 0;
  auto put = [&](auto x) { std::memcpy(&bits, &x, sizeof x); };
  switch (t) {
    case DType::Float32: put(float(v)); break;
    case DType::Float64: put(v); break;
    case DType::Int64: put(int64_t(v)); break;
    case DType::Int32: put(int32_t(v)); break;
    case DType::UInt8: put(uint8_t(v)); break;
    case DType::Bool: put(uint8_t(v != 0)); break;
    case DType::BFloat16: put(float_to_bf16(float(v))); break;
    case DType::Float16: put(float_to_half(float(v))); break;
  }
  return bits;
}

template <class E>
void fill_with(const Tensor& dst, uint64_t bits) {
  E e;
  std::memcpy(&e, &bits, sizeof e);
  launch_elementwise<1>(dst.sizes(), {&dst}, FillFunctor<E>{static_cast<E*>(dst.raw_data()), e});
}

void fill(const Tensor& dst, double value) {
  if (dst.numel() == 0) return;
  const uint64_t bits = fill_pattern(dst.dtype(), value);
  if (bits == 0 && dst.is_contiguous()) {
    const int dev = dst.device().index;
    DeviceGuard g(dev);
    EMBER_CUDA_CHECK(cudaMemsetAsync(dst.raw_data(), 0, dst.nbytes(), stream(dev)));
    return;
  }
  switch (dst.itemsize()) {
    case 1: return fill_with<uint8_t>(dst, bits);
    case 2: return fill_with<uint16_t>(dst, bits);
    case 4: return fill_with<uint32_t>(dst, bits);
    default: return fill_with<uint64_t>(dst, bits);
  }
}

// ---- where ------------------------------------------------------------------------------------
template <class T>
struct WhereFunctor {
  T* out;
  const bool* cond;
  const T* a;
  const T* b;
  __device__ void operator()(const int64_t (&o)[4]) const { out[o[0]] = cond[o[1]] ? a[o[2]] : b[o[3]]; }
};

void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) {
  dispatch_numeric(a.dtype(), "where", [&]<class T>() {
    launch_elementwise<4>(out.sizes(), {&out, &cond, &a, &b},
                          WhereFunctor<T>{out.data_ptr<T>(), cond.data_ptr<bool>(), a.data_ptr<T>(), b.data_ptr<T>()});
  });
}

// ---- random (Philox 4x32-10, layout in generator.h) ---------------------------------------------
__device__ void philox(uint32_t (&c)[4], uint32_t k0, uint32_t k1) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
#pragma unroll
  for (int round = 0; round < 10; ++round) {
    const uint32_t hi0 = __umulhi(kM0, c[0]), lo0 = kM0 * c[0];
    const uint32_t hi1 = __umulhi(kM1, c[2]), lo1 = kM1 * c[2];
    const uint32_t n0 = hi1 ^ c[1] ^ k0, n2 = hi0 ^ c[3] ^ k1;
    c[0] = n0, c[1] = lo1, c[2] = n2, c[3] = lo0;
    k0 += kW0;
    k1 += kW1;
  }
}

template <class T>
__device__ T from_double(double v) {
  if constexpr (std::is_same_v<T, bool>) return v != 0.0;
  else return T(v);
}

template <class T>
__global__ void random_kernel(T* out, int64_t n, RandomDist dist, uint64_t seed, uint64_t offset, double p0, double p1) {
  const int64_t blocks = (n + 3) / 4;
  for (int64_t blk = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; blk < blocks; blk += int64_t(gridDim.x) * blockDim.x) {
    const uint64_t ctr = offset + uint64_t(blk);
    uint32_t w[4] = {uint32_t(ctr), uint32_t(ctr >> 32), 0, 0};
    philox(w, uint32_t(seed), uint32_t(seed >> 32));
    double v[4];
    // Explicit _rn intrinsics: no FMA contraction, so uniform values equal the CPU's bit for bit.
    switch (dist) {
      case RandomDist::Uniform:
        for (int j = 0; j < 4; ++j)
          v[j] = __dadd_rn(p0, __dmul_rn(__dmul_rn(double(w[j] >> 8), 0x1p-24), __dsub_rn(p1, p0)));
        break;
      case RandomDist::Normal:
        for (int j = 0; j < 4; j += 2) {
          const double u1 = double((w[j] >> 8) + 1) * 0x1p-24;
          const double u2 = double(w[j + 1] >> 8) * 0x1p-24;
          const double r = ::sqrt(-2.0 * ::log(u1));
          double s, c;
          ::sincos(2.0 * 3.14159265358979323846 * u2, &s, &c);
          v[j] = __dadd_rn(p0, __dmul_rn(__dmul_rn(p1, r), c));
          v[j + 1] = __dadd_rn(p0, __dmul_rn(__dmul_rn(p1, r), s));
        }
        break;
      case RandomDist::RandInt: {
        const uint64_t range = uint64_t(int64_t(p1) - int64_t(p0));
        for (int j = 0; j < 4; ++j) v[j] = double(int64_t(p0) + int64_t(w[j] % range));
        break;
      }
      case RandomDist::Bernoulli:
        for (int j = 0; j < 4; ++j) v[j] = double(w[j] >> 8) * 0x1p-24 < p0 ? p1 : 0.0;
        break;
    }
    for (int j = 0; j < 4; ++j) {
      const int64_t i = blk * 4 + j;
      if (i < n) out[i] = from_double<T>(v[j]);
    }
  }
}

void random(RandomDist dist, const Tensor& out, uint64_t seed, uint64_t offset, double p0, double p1) {
  EMBER_ASSERT(out.is_contiguous());
  const int64_t n = out.numel();
  if (n == 0) return;
  dispatch_numeric(out.dtype(), "random", [&]<class T>() {
    const int dev = out.device().index;
    DeviceGuard g(dev);
    random_kernel<T><<<grid_for((n + 3) / 4), kBlockSize, 0, stream(dev)>>>(out.data_ptr<T>(), n, dist, seed, offset, p0, p1);
    EMBER_CUDA_LAUNCH_CHECK();
  });
}

}  // namespace

void register_elementwise_kernels() {
  kernels::binary.set(DeviceType::CUDA, &binary);
  kernels::unary.set(DeviceType::CUDA, &unary);
  kernels::copy.set(DeviceType::CUDA, &copy);
  kernels::fill.set(DeviceType::CUDA, &fill);
  kernels::where.set(DeviceType::CUDA, &where);
  kernels::random.set(DeviceType::CUDA, &random);
}

}  // namespace ember::cuda
