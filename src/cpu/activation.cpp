// CPU kernels of the activation slots (relu6, hardsigmoid, hardswish, silu; kernels.h): the
// formulas of kernels/activation_math.h in the tensor's dtype over strided rows (loops.h, OpenMP
// over rows). Contiguous float32 rows run in AVX-512 / AVX2 clones (the library is built without
// -march); silu's exp there is a Cephes-style polynomial the compiler can vectorise (glibc's expf
// is not vectorised without -ffast-math), within 2 ulp of expf. Float64 and strided rows take
// the scalar formulas with std::exp. The reference is cpu/reference/activation.cpp.
#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "cpu/dnnl_form.h"
#include "cpu/loops.h"
#include "kernels/activation_math.h"
#include "kernels/kernels.h"

namespace ember::cpu {

using kernels::Activation;
namespace am = activation_math;

namespace {

// exp(x) for float32 in straight-line code: x = n ln2 + r, |r| <= ln2/2, exp(r) by Cephes' degree-6
// polynomial, 2^n through the exponent bits. Inputs are clamped to where exp and 2^n stay normal
// (silu needs exp(-x) only relative to 1, so the clamp changes nothing it returns beyond a
// denormal); NaN passes through the clamps and the polynomial, its n is forced to 0.
inline float exp_poly(float x) {
  x = x < -87.0f ? -87.0f : x;
  x = x > 88.0f ? 88.0f : x;
  float fx = std::floor(x * 1.44269504088896341f + 0.5f);
  fx = fx == fx ? fx : 0.0f;
  float r = x - fx * 0.693359375f;
  r = r - fx * -2.12194440e-4f;
  float y = 1.9875691500e-4f;
  y = y * r + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * r * r + r + 1.0f;
  const float two_n = std::bit_cast<float>(uint32_t(int32_t(fx) + 127) << 23);
  return y * two_n;
}

__attribute__((target_clones("avx512f", "avx2", "default")))
void forward_row_f32(Activation f, const float* x, float* o, int64_t n) {
  switch (f) {
    case Activation::Relu6:
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) o[i] = am::relu6(x[i]);
      return;
    case Activation::Hardsigmoid:
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) o[i] = am::hardsigmoid(x[i]);
      return;
    case Activation::Hardswish:
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) o[i] = am::hardswish(x[i]);
      return;
    case Activation::Silu:
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) o[i] = am::silu_from_exp(x[i], exp_poly(-x[i]));
      return;
  }
}

__attribute__((target_clones("avx512f", "avx2", "default")))
void backward_row_f32(Activation f, const float* g, const float* x, float* gx, int64_t n) {
  switch (f) {
    case Activation::Relu6:
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) gx[i] = am::relu6_grad(g[i], x[i]);
      return;
    case Activation::Hardsigmoid:
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) gx[i] = am::hardsigmoid_grad(g[i], x[i]);
      return;
    case Activation::Hardswish:
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) gx[i] = am::hardswish_grad(g[i], x[i]);
      return;
    case Activation::Silu:
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) gx[i] = am::silu_grad_from_exp(g[i], x[i], exp_poly(-x[i]));
      return;
  }
}

// x (and g) held in one float32 layout (training's activations stay in their convolution's layout,
// dnnl_form.h): the same rows over the held array, out held in it too.
bool forward_held(Activation f, const Tensor& x, const Tensor& out) {
  const DnnlForm* fx = x.storage()->form() == nullptr ? nullptr : common_f32_form(out, {&x}, true);
  if (fx == nullptr) return false;
  Storage buffer = std::make_shared<StorageImpl>(fx->desc().get_size(), Device::cpu());
  const float* in = static_cast<const float*>(fx->data());
  float* o = static_cast<float*>(buffer->data());
  for_chunks(out.numel(), [&](int64_t b, int64_t e) { forward_row_f32(f, in + b, o + b, e - b); });
  hold_array(out, fx->desc(), std::move(buffer));
  return true;
}
bool backward_held(Activation f, const Tensor& grad_out, const Tensor& x, const Tensor& grad_x) {
  const DnnlForm* fx =
      x.storage()->form() == nullptr ? nullptr : common_f32_form(grad_x, {&grad_out, &x}, true);
  if (fx == nullptr) return false;
  Storage buffer = std::make_shared<StorageImpl>(fx->desc().get_size(), Device::cpu());
  const float* g = static_cast<const float*>(dnnl_form_of(grad_out)->data());
  const float* in = static_cast<const float*>(fx->data());
  float* gx = static_cast<float*>(buffer->data());
  for_chunks(grad_x.numel(), [&](int64_t b, int64_t e) { backward_row_f32(f, g + b, in + b, gx + b, e - b); });
  hold_array(grad_x, fx->desc(), std::move(buffer));
  return true;
}

void activation_forward(Activation f, const Tensor& x, const Tensor& out) {
  if (forward_held(f, x, out)) return;
  dispatch_floating(x.dtype(), "activation_forward", [&]<class T>() {
    strided_loop<2>(out.sizes(), {&out, &x}, [f](std::array<char*, 2> p, std::array<int64_t, 2> s, int64_t n) {
      T* o = reinterpret_cast<T*>(p[0]);
      const T* in = reinterpret_cast<const T*>(p[1]);
      if constexpr (std::is_same_v<T, float>)
        if (s[0] == 1 && s[1] == 1) return forward_row_f32(f, in, o, n);
      for (int64_t i = 0; i < n; ++i) o[i * s[0]] = am::forward(f, in[i * s[1]]);
    });
  });
}

void activation_backward(Activation f, const Tensor& grad_out, const Tensor& x, const Tensor& grad_x) {
  if (backward_held(f, grad_out, x, grad_x)) return;
  dispatch_floating(x.dtype(), "activation_backward", [&]<class T>() {
    strided_loop<3>(grad_x.sizes(), {&grad_x, &grad_out, &x},
                    [f](std::array<char*, 3> p, std::array<int64_t, 3> s, int64_t n) {
                      T* gx = reinterpret_cast<T*>(p[0]);
                      const T* g = reinterpret_cast<const T*>(p[1]);
                      const T* in = reinterpret_cast<const T*>(p[2]);
                      if constexpr (std::is_same_v<T, float>)
                        if (s[0] == 1 && s[1] == 1 && s[2] == 1) return backward_row_f32(f, g, in, gx, n);
                      for (int64_t i = 0; i < n; ++i) gx[i * s[0]] = am::backward(f, g[i * s[1]], in[i * s[2]]);
                    });
  });
}

}  // namespace

void register_activation_kernels() {
  kernels::activation_forward.set(DeviceType::CPU, &activation_forward);
  kernels::activation_backward.set(DeviceType::CPU, &activation_backward);
}

}  // namespace ember::cpu
