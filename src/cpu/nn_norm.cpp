// The batch-norm kernels of the CPU, twin of src/cuda/nn_norm.cu: batch statistics, forward and
// backward over a contiguous (N, C, S) float32 input, one channel per thread at a time; float64
// runs the reference loops (reference/nn_norm.cpp), which stay the oracle for the parity tests.
#include <omp.h>

#include "cpu/loops.h"
#include "cpu/reference/nn.h"

namespace ember::cpu {

namespace {

// The reductions sum in double with eight interleaved accumulators (one chain of dependent adds
// would cap them at one add per FP-add latency: the reference's scalar loops were a third of a
// bncnn_fc128 training run's profile), over n then s in a fixed order, so a channel's sums do not
// depend on the thread count. The per-element passes run in float and vectorise; the loops are built for AVX-512,
// AVX2 and the baseline (function multiversioning picks one at load time: the library is compiled
// without -march flags).
struct Sum8 {
  double a[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  double total() const { return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7])); }
};

#define EMBER_NORM_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

// sum of x over channel c of (N, C, S)
EMBER_NORM_CLONES double channel_sum(const float* x, int64_t N, int64_t C, int64_t S, int64_t c) {
  Sum8 s;
  for (int64_t n = 0; n < N; ++n) {
    const float* p = x + (n * C + c) * S;
    int64_t k = 0;
    for (; k + 8 <= S; k += 8)
      for (int j = 0; j < 8; ++j) s.a[j] += double(p[k + j]);
    for (; k < S; ++k) s.a[k & 7] += double(p[k]);
  }
  return s.total();
}

// sum of (x - m)^2 over channel c (two passes, as the reference: no cancellation in E[x^2] - m^2)
EMBER_NORM_CLONES double channel_sq_dev(const float* x, int64_t N, int64_t C, int64_t S, int64_t c, double m) {
  Sum8 s;
  for (int64_t n = 0; n < N; ++n) {
    const float* p = x + (n * C + c) * S;
    int64_t k = 0;
    for (; k + 8 <= S; k += 8)
      for (int j = 0; j < 8; ++j) {
        const double d = double(p[k + j]) - m;
        s.a[j] += d * d;
      }
    for (; k < S; ++k) {
      const double d = double(p[k]) - m;
      s.a[k & 7] += d * d;
    }
  }
  return s.total();
}

// out = (x - m) * scale + shift over channel c; (x - m) first: x * scale + (shift - m * scale) would
// cancel where the mean is large against the spread.
EMBER_NORM_CLONES void channel_affine(const float* x, float* out, int64_t N, int64_t C, int64_t S, int64_t c, float m,
                                      float scale, float shift) {
  for (int64_t n = 0; n < N; ++n) {
    const float* p = x + (n * C + c) * S;
    float* o = out + (n * C + c) * S;
    for (int64_t k = 0; k < S; ++k) o[k] = (p[k] - m) * scale + shift;
  }
}

// sum of g and of g * (x - m) over channel c
EMBER_NORM_CLONES void channel_grad_sums(const float* g, const float* x, int64_t N, int64_t C, int64_t S, int64_t c,
                                         double m, double* sum_g, double* sum_gd) {
  Sum8 sg, sgd;
  for (int64_t n = 0; n < N; ++n) {
    const float *gr = g + (n * C + c) * S, *p = x + (n * C + c) * S;
    int64_t k = 0;
    for (; k + 8 <= S; k += 8)
      for (int j = 0; j < 8; ++j) {
        sg.a[j] += double(gr[k + j]);
        sgd.a[j] += double(gr[k + j]) * (double(p[k + j]) - m);
      }
    for (; k < S; ++k) {
      sg.a[k & 7] += double(gr[k]);
      sgd.a[k & 7] += double(gr[k]) * (double(p[k]) - m);
    }
  }
  *sum_g = sg.total(), *sum_gd = sgd.total();
}

// grad_x = a * ((g - g_shift) - (x - m) * x_scale) over channel c
EMBER_NORM_CLONES void channel_grad_x(const float* g, const float* x, float* gx, int64_t N, int64_t C, int64_t S,
                                      int64_t c, float a, float m, float g_shift, float x_scale) {
  for (int64_t n = 0; n < N; ++n) {
    const float *gr = g + (n * C + c) * S, *p = x + (n * C + c) * S;
    float* o = gx + (n * C + c) * S;
    for (int64_t k = 0; k < S; ++k) o[k] = a * ((gr[k] - g_shift) - (p[k] - m) * x_scale);
  }
}

bool parallel(int64_t N, int64_t C, int64_t S) {
  return N * C * S > kParallelGrain && C > 1 && omp_get_max_threads() > 1 && !omp_in_parallel();
}

void batch_norm_stats_f32(const Tensor& x, const Tensor& mean, const Tensor& var) {
  if (x.dtype() != DType::Float32) return reference::batch_norm_stats(x, mean, var);
  const int64_t N = x.size(0), C = x.size(1), S = x.size(2);
  const float* xp = x.data_ptr<float>();
  float *mp = mean.data_ptr<float>(), *vp = var.data_ptr<float>();
  const double M = double(N * S);
#pragma omp parallel for schedule(static) if (parallel(N, C, S))
  for (int64_t c = 0; c < C; ++c) {
    const double m = channel_sum(xp, N, C, S, c) / M;
    mp[c] = float(m);
    vp[c] = float(channel_sq_dev(xp, N, C, S, c, m) / M);
  }
}

void batch_norm_forward_f32(const Tensor& x, const Tensor& mean, const Tensor& invstd, const Tensor& weight,
                            const Tensor& bias, const Tensor& out) {
  if (x.dtype() != DType::Float32) return reference::batch_norm_forward(x, mean, invstd, weight, bias, out);
  const int64_t N = x.size(0), C = x.size(1), S = x.size(2);
  const float *xp = x.data_ptr<float>(), *mp = mean.data_ptr<float>(), *ip = invstd.data_ptr<float>();
  const float *wp = weight.data_ptr<float>(), *bp = bias.data_ptr<float>();
  float* op = out.data_ptr<float>();
#pragma omp parallel for schedule(static) if (parallel(N, C, S))
  for (int64_t c = 0; c < C; ++c)
    channel_affine(xp, op, N, C, S, c, mp[c], float(double(ip[c]) * double(wp[c])), bp[c]);
}

void batch_norm_backward_f32(const Tensor& grad_out, const Tensor& x, const Tensor& mean, const Tensor& invstd,
                             const Tensor& weight, bool training, const Tensor& grad_x, const Tensor& grad_weight,
                             const Tensor& grad_bias) {
  if (x.dtype() != DType::Float32)
    return reference::batch_norm_backward(grad_out, x, mean, invstd, weight, training, grad_x, grad_weight, grad_bias);
  const int64_t N = x.size(0), C = x.size(1), S = x.size(2);
  const double M = double(N * S);
  const float *gp = grad_out.data_ptr<float>(), *xp = x.data_ptr<float>(), *mp = mean.data_ptr<float>();
  const float *ip = invstd.data_ptr<float>(), *wp = weight.data_ptr<float>();
  float *gxp = grad_x.data_ptr<float>(), *gwp = grad_weight.data_ptr<float>(), *gbp = grad_bias.data_ptr<float>();
#pragma omp parallel for schedule(static) if (parallel(N, C, S))
  for (int64_t c = 0; c < C; ++c) {
    const double m = double(mp[c]), is = double(ip[c]), w = double(wp[c]);
    double sum_g = 0, sum_gd = 0;
    channel_grad_sums(gp, xp, N, C, S, c, m, &sum_g, &sum_gd);
    const double sum_gxhat = sum_gd * is;
    // grad_x = w * is * (g - sum_g / M - (x - mean) * is * sum_gxhat / M) in training, w * is * g in eval.
    channel_grad_x(gp, xp, gxp, N, C, S, c, float(w * is), float(m), training ? float(sum_g / M) : 0.0f,
                   training ? float(is * sum_gxhat / M) : 0.0f);
    gwp[c] = float(sum_gxhat);
    gbp[c] = float(sum_g);
  }
}

#undef EMBER_NORM_CLONES

}  // namespace

void register_nn_norm_kernels() {
  kernels::batch_norm_stats.set(DeviceType::CPU, &batch_norm_stats_f32);
  kernels::batch_norm_forward.set(DeviceType::CPU, &batch_norm_forward_f32);
  kernels::batch_norm_backward.set(DeviceType::CPU, &batch_norm_backward_f32);
}

}  // namespace ember::cpu
