// Batch norm on the CPU, twin of src/cuda/nn_norm.cu. float32: OpenMP over channels (statistics,
// backward) or over (n, c) rows (forward), each row walked by vectorised loops with AVX-512 / AVX2
// clones; float64 runs the reference loops (reference/nn_norm.cpp), which stay the test oracle.
//
// Why hand-written loops and not oneDNN's batch_normalization primitive: measured slower. On bncnn's
// layers at batch 128, NCHW float32 (bench/bench_batch_norm.cpp, 2026-12-01 00:25 UTC, 2-core Xeon
// at load 10-12, 4 runs at 1 and 2 threads, median of 60 calls each), oneDNN 2.6 picks its
// plain-layout kernel (ncsp_bnorm) and took 8.9-15.0 ms forward / 12.7-15.3 ms backward on
// (128, 16, 28, 28) against 2.3-4.2 / 2.5-3.9 ms here, and 4.0-7.2 / 5.7-8.0 ms on (128, 32, 14, 14)
// against 0.6-2.5 / 0.6-2.1 ms here: slower in every run, often slower than the reference loops. It
// fits the kernel contract (kernels/nn_kernels.h) badly: the contract splits the batch statistics
// from the normalisation, so that the front-end forms invstd and updates the running statistics
// in between the same way on every backend, while oneDNN's training primitive fuses the two and
// its backward wants the variance instead of invstd.
//
// Numerics. Sums run in float inside a block of at most kBlock elements of one row (vector lanes,
// a few hundred adds each) and in double across blocks. The variance is never E[x^2] - E[x]^2: each
// block is summed once for its approximate mean, then again (from L1) as sums of d = x - shift and
// d^2 with that shift, which leaves no cancellation (the block's M2 = sum d^2 - (sum d)^2 / n with
// sum d near zero); blocks are then merged with Chan et al.'s pairwise update of (count, mean, M2).
// Before (reference loops): batch norm was 36% of a bncnn_fc128 training run (perf, 1 thread);
// after, ~20%, bound by memory traffic (each pass streams the layer once). Numbers in
// docs/benchmarks.md ("Default recipe candidates (issue 12)", "Batch norm and ReLU on the CPU").
#include "cpu/nn_norm.h"

#include <omp.h>

#include <algorithm>
#include <cmath>

#include "core/tensor_raw.h"
#include "cpu/loops.h"
#include "cpu/reference/nn.h"
#include "kernels/activation_math.h"

namespace ember::cpu {

namespace {

constexpr int64_t kBlock = 4096;  // elements summed in float before the sum moves to double

struct Sums2 {
  float a = 0.f, b = 0.f;
};

// ---- row loops: float32, vectorised, one clone per ISA picked at load time --------------------------

__attribute__((target_clones("avx512f", "avx2", "default")))
float row_sum(const float* x, int64_t n) {
  float s = 0.f;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += x[i];
  return s;
}

// sum(x - shift), sum((x - shift)^2)
__attribute__((target_clones("avx512f", "avx2", "default")))
Sums2 row_shifted_sums(const float* x, int64_t n, float shift) {
  float s = 0.f, q = 0.f;
#pragma omp simd reduction(+ : s, q)
  for (int64_t i = 0; i < n; ++i) {
    const float d = x[i] - shift;
    s += d;
    q += d * d;
  }
  return {s, q};
}

// out = (x - m) * scale + shift: x - m first, so a large mean cancels exactly instead of leaving
// the rounding error of x * scale in the result.
__attribute__((target_clones("avx512f", "avx2", "default")))
void row_affine(const float* x, int64_t n, float m, float scale, float shift, float* out) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) out[i] = (x[i] - m) * scale + shift;
}

// sum(g), sum(g * (x - m))
__attribute__((target_clones("avx512f", "avx2", "default")))
Sums2 row_grad_sums(const float* g, const float* x, int64_t n, float m) {
  float s = 0.f, q = 0.f;
#pragma omp simd reduction(+ : s, q)
  for (int64_t i = 0; i < n; ++i) {
    s += g[i];
    q += g[i] * (x[i] - m);
  }
  return {s, q};
}

// Training: gx = (g - mean_g) * k1 - (x - m) * k3 (the batch statistics depend on x).
__attribute__((target_clones("avx512f", "avx2", "default")))
void row_grad_input_training(const float* g, const float* x, int64_t n, float mean_g, float m, float k1, float k3,
                             float* gx) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) gx[i] = (g[i] - mean_g) * k1 - (x[i] - m) * k3;
}

// Eval: the statistics are constants, gx = g * k1.
__attribute__((target_clones("avx512f", "avx2", "default")))
void row_scale(const float* g, int64_t n, float k1, float* gx) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) gx[i] = g[i] * k1;
}

// ---- batch norm + ReLU / ReLU6 (kernels::batch_norm_forward_act / _backward_act) -------------------
// The forward's pre-activation value t = (x - m) * scale + shift is written as in row_affine, so the
// fused pass gives the unfused ops' values. The backward needs the activation's mask, 0 < t (< 6):
// it computes t again from x with the same expression instead of reading the output, so it streams
// g and x only, as the plain batch-norm backward does, and the activation's backward pass is gone.
// (mask from t equals the mask from the output: act(t) > 0 iff t > 0, and for ReLU6 0 < relu6(t) < 6
// iff 0 < t < 6; NaN fails both.) kRelu6 false: ReLU.
template <bool kRelu6>
inline float act_value(float t) {
  if constexpr (kRelu6) return activation_math::relu6(t);
  else return t > 0.f ? t : 0.f;
}
template <bool kRelu6>
inline float act_masked(float g, float t) {
  if constexpr (kRelu6) return t > 0.f && t < 6.f ? g : 0.f;
  else return t > 0.f ? g : 0.f;
}

template <bool kRelu6>
__attribute__((target_clones("avx512f", "avx2", "default")))
void row_affine_act(const float* x, int64_t n, float m, float scale, float shift, float* out) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) out[i] = act_value<kRelu6>((x[i] - m) * scale + shift);
}

// sum(g'), sum(g' * (x - m)) with g' = g masked by the activation at t.
template <bool kRelu6>
__attribute__((target_clones("avx512f", "avx2", "default")))
Sums2 row_grad_sums_act(const float* g, const float* x, int64_t n, float m, float scale, float shift) {
  float s = 0.f, q = 0.f;
#pragma omp simd reduction(+ : s, q)
  for (int64_t i = 0; i < n; ++i) {
    const float gm = act_masked<kRelu6>(g[i], (x[i] - m) * scale + shift);
    s += gm;
    q += gm * (x[i] - m);
  }
  return {s, q};
}

template <bool kRelu6>
__attribute__((target_clones("avx512f", "avx2", "default")))
void row_grad_input_training_act(const float* g, const float* x, int64_t n, float m, float scale, float shift,
                                 float mean_g, float k1, float k3, float* gx) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i)
    gx[i] = (act_masked<kRelu6>(g[i], (x[i] - m) * scale + shift) - mean_g) * k1 - (x[i] - m) * k3;
}

template <bool kRelu6>
__attribute__((target_clones("avx512f", "avx2", "default")))
void row_scale_act(const float* g, const float* x, int64_t n, float m, float scale, float shift, float k1, float* gx) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) gx[i] = act_masked<kRelu6>(g[i], (x[i] - m) * scale + shift) * k1;
}

// With a residual r added before the activation (a residual block's tail, act(bn(x) + r)): t =
// ((x - m) * scale + shift) + r, the batch norm's value rounded before the add as the unfused ops
// round it. The backward's first pass writes the masked gradient g' (the residual's gradient) and
// the second reads it with the plain loops.
template <bool kRelu6>
__attribute__((target_clones("avx512f", "avx2", "default")))
void row_affine_add_act(const float* x, const float* r, int64_t n, float m, float scale, float shift, float* out) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const float y = (x[i] - m) * scale + shift;
    out[i] = act_value<kRelu6>(y + r[i]);
  }
}

template <bool kRelu6>
__attribute__((target_clones("avx512f", "avx2", "default")))
Sums2 row_grad_sums_add_act(const float* g, const float* x, const float* r, int64_t n, float m, float scale,
                            float shift, float* gm_out) {
  float s = 0.f, q = 0.f;
#pragma omp simd reduction(+ : s, q)
  for (int64_t i = 0; i < n; ++i) {
    const float y = (x[i] - m) * scale + shift;
    const float gm = act_masked<kRelu6>(g[i], y + r[i]);
    gm_out[i] = gm;
    s += gm;
    q += gm * (x[i] - m);
  }
  return {s, q};
}

// Calls f(block pointer offset, length) for the blocks of one row of S elements.
template <class F>
inline void for_blocks(int64_t S, F&& f) {
  for (int64_t off = 0; off < S; off += kBlock) f(off, std::min(kBlock, S - off));
}

bool worth_threads(int64_t elements) {
  return elements >= kParallelGrain && omp_get_max_threads() > 1 && !omp_in_parallel();
}

}  // namespace

void batch_norm_stats_channels(const Tensor& x, const Tensor& mean, const Tensor& var) {
  if (x.dtype() != DType::Float32) return reference::batch_norm_stats(x, mean, var);
  if (batch_norm_stats_held(x, mean, var)) return;
  const int64_t N = x.size(0), C = x.size(1), S = x.size(2);
  const float* xp = x.data_ptr<float>();
  float *mp = mean.data_ptr<float>(), *vp = var.data_ptr<float>();
#pragma omp parallel for schedule(static) if (worth_threads(N * C * S))
  for (int64_t c = 0; c < C; ++c) {
    Moments mo;
    for (int64_t n = 0; n < N; ++n) {
      const float* row = xp + (n * C + c) * S;
      for_blocks(S, [&](int64_t off, int64_t len) {
        const float shift = row_sum(row + off, len) / float(len);
        const Sums2 d = row_shifted_sums(row + off, len, shift);
        const double dl = double(len), sd = double(d.a);
        mo.merge(dl, double(shift) + sd / dl, std::max(0.0, double(d.b) - sd * sd / dl));
      });
    }
    mp[c] = float(mo.mean);
    vp[c] = float(mo.m2 / mo.count);
  }
}

void batch_norm_forward_channels(const Tensor& x, const Tensor& mean, const Tensor& invstd, const Tensor& weight,
                                 const Tensor& bias, const Tensor& out) {
  if (x.dtype() != DType::Float32) return reference::batch_norm_forward(x, mean, invstd, weight, bias, out);
  if (batch_norm_forward_held(x, mean, invstd, weight, bias, Tensor(), kernels::ConvEpilogue::None, out)) return;
  const int64_t N = x.size(0), C = x.size(1), S = x.size(2);
  const float *xp = x.data_ptr<float>(), *mp = mean.data_ptr<float>(), *ip = invstd.data_ptr<float>();
  const float *wp = weight.data_ptr<float>(), *bp = bias.data_ptr<float>();
  float* op = out.data_ptr<float>();
#pragma omp parallel for schedule(static) if (worth_threads(N * C * S))
  for (int64_t r = 0; r < N * C; ++r) {
    const int64_t c = r % C;
    const float scale = float(double(ip[c]) * double(wp[c]));
    row_affine(xp + r * S, S, mp[c], scale, bp[c], op + r * S);
  }
}

namespace {

// The backward's channel loop, shared by the plain and the fused kernels: per channel c, pass 1
// sums(c, base, off, len) returns sum(g') and sum(g' * (x - m)) over one block of a row (g' the
// gradient the batch norm sees), then pass 2 writes the input gradient of each row,
// input_training(c, base, mean_g, k1, k3) or input_eval(c, base, k1), and the parameter gradients
// follow from the sums.
template <class Sums, class InputTraining, class InputEval>
void backward_channels(int64_t N, int64_t C, int64_t S, const float* ip, const float* wp, bool training,
                       float* gwp, float* gbp, Sums&& sums, InputTraining&& input_training, InputEval&& input_eval) {
  const double M = double(N * S);
#pragma omp parallel for schedule(static) if (worth_threads(N * C * S))
  for (int64_t c = 0; c < C; ++c) {
    // Pass 1; the channel's rows stay in L2 for pass 2.
    double sum_g = 0.0, sum_gxm = 0.0;
    for (int64_t n = 0; n < N; ++n) {
      const int64_t base = (n * C + c) * S;
      for_blocks(S, [&](int64_t off, int64_t len) {
        const Sums2 s = sums(c, base, off, len);
        sum_g += double(s.a);
        sum_gxm += double(s.b);
      });
    }
    const double is = double(ip[c]), w = double(wp[c]);
    const float k1 = float(w * is);
    // Pass 2: the input gradient.
    if (training) {
      const float mean_g = float(sum_g / M), k3 = float(w * is * is * is * sum_gxm / M);
      for (int64_t n = 0; n < N; ++n) input_training(c, (n * C + c) * S, mean_g, k1, k3);
    } else {
      for (int64_t n = 0; n < N; ++n) input_eval(c, (n * C + c) * S, k1);
    }
    gwp[c] = float(is * sum_gxm);
    gbp[c] = float(sum_g);
  }
}

}  // namespace

void batch_norm_backward_channels(const Tensor& grad_out, const Tensor& x, const Tensor& mean, const Tensor& invstd,
                                  const Tensor& weight, bool training, const Tensor& grad_x,
                                  const Tensor& grad_weight, const Tensor& grad_bias) {
  if (x.dtype() != DType::Float32)
    return reference::batch_norm_backward(grad_out, x, mean, invstd, weight, training, grad_x, grad_weight,
                                          grad_bias);
  if (batch_norm_backward_held(grad_out, x, Tensor(), mean, invstd, weight, Tensor(), training,
                               kernels::ConvEpilogue::None, grad_x, grad_weight, grad_bias, Tensor()))
    return;
  const int64_t N = x.size(0), C = x.size(1), S = x.size(2);
  const float *gp = grad_out.data_ptr<float>(), *xp = x.data_ptr<float>(), *mp = mean.data_ptr<float>();
  float* gxp = grad_x.data_ptr<float>();
  backward_channels(
      N, C, S, invstd.data_ptr<float>(), weight.data_ptr<float>(), training, grad_weight.data_ptr<float>(),
      grad_bias.data_ptr<float>(),
      [&](int64_t c, int64_t base, int64_t off, int64_t len) {
        return row_grad_sums(gp + base + off, xp + base + off, len, mp[c]);
      },
      [&](int64_t c, int64_t base, float mean_g, float k1, float k3) {
        row_grad_input_training(gp + base, xp + base, S, mean_g, mp[c], k1, k3, gxp + base);
      },
      [&](int64_t, int64_t base, float k1) { row_scale(gp + base, S, k1, gxp + base); });
}

namespace {

template <bool kRelu6>
void batch_norm_forward_act_f32(const Tensor& x, const Tensor& mean, const Tensor& invstd, const Tensor& weight,
                                const Tensor& bias, const Tensor& residual, const Tensor& out) {
  const int64_t N = x.size(0), C = x.size(1), S = x.size(2);
  const float *xp = x.data_ptr<float>(), *mp = mean.data_ptr<float>(), *ip = invstd.data_ptr<float>();
  const float *wp = weight.data_ptr<float>(), *bp = bias.data_ptr<float>();
  const float* rp = residual.defined() ? residual.data_ptr<float>() : nullptr;
  float* op = out.data_ptr<float>();
#pragma omp parallel for schedule(static) if (worth_threads(N * C * S))
  for (int64_t r = 0; r < N * C; ++r) {
    const int64_t c = r % C;
    const float scale = float(double(ip[c]) * double(wp[c]));
    if (rp) row_affine_add_act<kRelu6>(xp + r * S, rp + r * S, S, mp[c], scale, bp[c], op + r * S);
    else row_affine_act<kRelu6>(xp + r * S, S, mp[c], scale, bp[c], op + r * S);
  }
}

// batch_norm_backward_channels with the activation's mask applied to g wherever it is read; with a
// residual, pass 1 also writes the masked gradient (the residual's) and pass 2 reads it back.
template <bool kRelu6>
void batch_norm_backward_act_f32(const Tensor& grad_out, const Tensor& x, const Tensor& residual, const Tensor& mean,
                                 const Tensor& invstd, const Tensor& weight, const Tensor& bias, bool training,
                                 const Tensor& grad_x, const Tensor& grad_weight, const Tensor& grad_bias,
                                 const Tensor& grad_residual) {
  const int64_t N = x.size(0), C = x.size(1), S = x.size(2);
  const float *gp = grad_out.data_ptr<float>(), *xp = x.data_ptr<float>(), *mp = mean.data_ptr<float>();
  const float *ip = invstd.data_ptr<float>(), *wp = weight.data_ptr<float>(), *bp = bias.data_ptr<float>();
  const float* rp = residual.defined() ? residual.data_ptr<float>() : nullptr;
  float* grp = rp ? grad_residual.data_ptr<float>() : nullptr;
  float* gxp = grad_x.data_ptr<float>();
  auto scale = [&](int64_t c) { return float(double(ip[c]) * double(wp[c])); };
  backward_channels(
      N, C, S, ip, wp, training, grad_weight.data_ptr<float>(), grad_bias.data_ptr<float>(),
      [&](int64_t c, int64_t base, int64_t off, int64_t len) {
        const int64_t i = base + off;
        return rp ? row_grad_sums_add_act<kRelu6>(gp + i, xp + i, rp + i, len, mp[c], scale(c), bp[c], grp + i)
                  : row_grad_sums_act<kRelu6>(gp + i, xp + i, len, mp[c], scale(c), bp[c]);
      },
      [&](int64_t c, int64_t base, float mean_g, float k1, float k3) {
        if (rp) row_grad_input_training(grp + base, xp + base, S, mean_g, mp[c], k1, k3, gxp + base);
        else row_grad_input_training_act<kRelu6>(gp + base, xp + base, S, mp[c], scale(c), bp[c], mean_g, k1, k3,
                                                 gxp + base);
      },
      [&](int64_t c, int64_t base, float k1) {
        if (rp) row_scale(grp + base, S, k1, gxp + base);
        else row_scale_act<kRelu6>(gp + base, xp + base, S, mp[c], scale(c), bp[c], k1, gxp + base);
      });
}

}  // namespace

void batch_norm_forward_act_channels(const Tensor& x, const Tensor& mean, const Tensor& invstd, const Tensor& weight,
                                     const Tensor& bias, const Tensor& residual, kernels::ConvEpilogue act,
                                     const Tensor& out) {
  EMBER_CHECK(act == kernels::ConvEpilogue::Relu || act == kernels::ConvEpilogue::Relu6, ValueError,
              "batch_norm_forward_act: only ReLU and ReLU6 fuse");
  const bool relu6 = act == kernels::ConvEpilogue::Relu6;
  if (x.dtype() == DType::Float32 && batch_norm_forward_held(x, mean, invstd, weight, bias, residual, act, out)) return;
  if (x.dtype() == DType::Float32)
    return relu6 ? batch_norm_forward_act_f32<true>(x, mean, invstd, weight, bias, residual, out)
                 : batch_norm_forward_act_f32<false>(x, mean, invstd, weight, bias, residual, out);
  // float64: the reference ops (batch norm, the add, the activation) in place.
  reference::batch_norm_forward(x, mean, invstd, weight, bias, out);
  double* o = out.data_ptr<double>();
  const double* r = residual.defined() ? residual.data_ptr<double>() : nullptr;
  for (int64_t i = 0, n = out.numel(); i < n; ++i) {
    const double t = r ? o[i] + r[i] : o[i];
    o[i] = relu6 ? activation_math::relu6(t) : (t > 0.0 ? t : 0.0);
  }
}

void batch_norm_backward_act_channels(const Tensor& grad_out, const Tensor& x, const Tensor& residual,
                                      const Tensor& mean, const Tensor& invstd, const Tensor& weight,
                                      const Tensor& bias, bool training, kernels::ConvEpilogue act,
                                      const Tensor& grad_x, const Tensor& grad_weight, const Tensor& grad_bias,
                                      const Tensor& grad_residual) {
  EMBER_CHECK(act == kernels::ConvEpilogue::Relu || act == kernels::ConvEpilogue::Relu6, ValueError,
              "batch_norm_backward_act: only ReLU and ReLU6 fuse");
  const bool relu6 = act == kernels::ConvEpilogue::Relu6;
  if (x.dtype() == DType::Float32 && batch_norm_backward_held(grad_out, x, residual, mean, invstd, weight, bias,
                                                              training, act, grad_x, grad_weight, grad_bias,
                                                              grad_residual))
    return;
  if (x.dtype() == DType::Float32)
    return relu6 ? batch_norm_backward_act_f32<true>(grad_out, x, residual, mean, invstd, weight, bias, training,
                                                     grad_x, grad_weight, grad_bias, grad_residual)
                 : batch_norm_backward_act_f32<false>(grad_out, x, residual, mean, invstd, weight, bias, training,
                                                      grad_x, grad_weight, grad_bias, grad_residual);
  // float64: the forward again for the mask (the reference's own values), the masked gradient
  // (the residual's), then the reference backward.
  Tensor y = core::empty_like(x);
  reference::batch_norm_forward(x, mean, invstd, weight, bias, y);
  Tensor gm = residual.defined() ? grad_residual
                                 : core::empty_like(grad_out);
  const double *g = grad_out.data_ptr<double>(), *t = y.data_ptr<double>();
  const double* r = residual.defined() ? residual.data_ptr<double>() : nullptr;
  double* d = gm.data_ptr<double>();
  for (int64_t i = 0, n = gm.numel(); i < n; ++i) {
    const double v = r ? t[i] + r[i] : t[i];
    d[i] = (relu6 ? v > 0.0 && v < 6.0 : v > 0.0) ? g[i] : 0.0;
  }
  reference::batch_norm_backward(gm, x, mean, invstd, weight, training, grad_x, grad_weight, grad_bias);
}

void register_nn_norm_kernels() {
  kernels::batch_norm_stats.set(DeviceType::CPU, &batch_norm_stats_channels);
  kernels::batch_norm_forward.set(DeviceType::CPU, &batch_norm_forward_channels);
  kernels::batch_norm_backward.set(DeviceType::CPU, &batch_norm_backward_channels);
  kernels::batch_norm_forward_act.set(DeviceType::CPU, &batch_norm_forward_act_channels);
  kernels::batch_norm_backward_act.set(DeviceType::CPU, &batch_norm_backward_act_channels);
}

}  // namespace ember::cpu
