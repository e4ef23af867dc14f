// Reference kernels for the neural-network ops: the textbook loops, accumulated in double.
// They are the oracle the fast paths are tested against, and the float64 CPU path.
#include "cpu/nn_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ember::cpu::reference {

using kernels::Conv2dParams;
using kernels::Pool2dParams;

namespace {
using kernels::DimSplit;
using kernels::split_at;
}  // namespace

// ---- conv2d ------------------------------------------------------------------------------------
void conv2d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dParams& p,
                    const Tensor& out) {
  dispatch_floating(x.dtype(), "conv2d", [&]<class T>() {
    const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
    const int64_t CO = weight.size(0), CG = weight.size(1), KH = weight.size(2), KW = weight.size(3);
    const int64_t OH = out.size(2), OW = out.size(3), COG = CO / p.groups;
    const T* xp = x.data_ptr<T>();
    const T* wp = weight.data_ptr<T>();
    const T* bp = bias.defined() ? bias.data_ptr<T>() : nullptr;
    T* op = out.data_ptr<T>();
    for (int64_t n = 0; n < N; ++n)
      for (int64_t co = 0; co < CO; ++co) {
        const int64_t g = co / COG;
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow = 0; ow < OW; ++ow) {
            double acc = bp ? double(bp[co]) : 0.0;
            for (int64_t ci = 0; ci < CG; ++ci)
              for (int64_t i = 0; i < KH; ++i) {
                const int64_t h = oh * p.stride_h - p.pad_h + i * p.dilation_h;
                if (h < 0 || h >= H) continue;
                for (int64_t j = 0; j < KW; ++j) {
                  const int64_t w = ow * p.stride_w - p.pad_w + j * p.dilation_w;
                  if (w < 0 || w >= W) continue;
                  acc += double(xp[((n * C + g * CG + ci) * H + h) * W + w]) *
                         double(wp[((co * CG + ci) * KH + i) * KW + j]);
                }
              }
            op[((n * CO + co) * OH + oh) * OW + ow] = T(acc);
          }
      }
  });
}

void conv2d_backward_data(const Tensor& grad_out, const Tensor& weight, const Conv2dParams& p,
                          const Tensor& grad_x) {
  dispatch_floating(grad_x.dtype(), "conv2d_backward", [&]<class T>() {
    const int64_t N = grad_x.size(0), C = grad_x.size(1), H = grad_x.size(2), W = grad_x.size(3);
    const int64_t CO = weight.size(0), CG = weight.size(1), KH = weight.size(2), KW = weight.size(3);
    const int64_t OH = grad_out.size(2), OW = grad_out.size(3), COG = CO / p.groups;
    const T* gp = grad_out.data_ptr<T>();
    const T* wp = weight.data_ptr<T>();
    std::vector<double> acc(size_t(grad_x.numel()), 0.0);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t co = 0; co < CO; ++co) {
        const int64_t g = co / COG;
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow = 0; ow < OW; ++ow) {
            const double go = double(gp[((n * CO + co) * OH + oh) * OW + ow]);
            for (int64_t ci = 0; ci < CG; ++ci)
              for (int64_t i = 0; i < KH; ++i) {
                const int64_t h = oh * p.stride_h - p.pad_h + i * p.dilation_h;
                if (h < 0 || h >= H) continue;
                for (int64_t j = 0; j < KW; ++j) {
                  const int64_t w = ow * p.stride_w - p.pad_w + j * p.dilation_w;
                  if (w < 0 || w >= W) continue;
                  acc[size_t(((n * C + g * CG + ci) * H + h) * W + w)] +=
                      go * double(wp[((co * CG + ci) * KH + i) * KW + j]);
                }
              }
          }
      }
    T* xp = grad_x.data_ptr<T>();
    for (size_t k = 0; k < acc.size(); ++k) xp[k] = T(acc[k]);
  });
}

void conv2d_backward_weight(const Tensor& grad_out, const Tensor& x, const Conv2dParams& p,
                            const Tensor& grad_weight) {
  dispatch_floating(x.dtype(), "conv2d_backward", [&]<class T>() {
    const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
    const int64_t CO = grad_weight.size(0), CG = grad_weight.size(1), KH = grad_weight.size(2),
                  KW = grad_weight.size(3);
    const int64_t OH = grad_out.size(2), OW = grad_out.size(3), COG = CO / p.groups;
    const T* gp = grad_out.data_ptr<T>();
    const T* xp = x.data_ptr<T>();
    T* wp = grad_weight.data_ptr<T>();
    for (int64_t co = 0; co < CO; ++co) {
      const int64_t g = co / COG;
      for (int64_t ci = 0; ci < CG; ++ci)
        for (int64_t i = 0; i < KH; ++i)
          for (int64_t j = 0; j < KW; ++j) {
            double acc = 0.0;
            for (int64_t n = 0; n < N; ++n)
              for (int64_t oh = 0; oh < OH; ++oh) {
                const int64_t h = oh * p.stride_h - p.pad_h + i * p.dilation_h;
                if (h < 0 || h >= H) continue;
                for (int64_t ow = 0; ow < OW; ++ow) {
                  const int64_t w = ow * p.stride_w - p.pad_w + j * p.dilation_w;
                  if (w < 0 || w >= W) continue;
                  acc += double(gp[((n * CO + co) * OH + oh) * OW + ow]) *
                         double(xp[((n * C + g * CG + ci) * H + h) * W + w]);
                }
              }
            wp[((co * CG + ci) * KH + i) * KW + j] = T(acc);
          }
    }
  });
}

// ---- pooling -----------------------------------------------------------------------------------
void max_pool2d_forward(const Tensor& x, const Pool2dParams& p, const Tensor& out, const Tensor& indices) {
  dispatch_floating(x.dtype(), "max_pool2d", [&]<class T>() {
    const int64_t NC = x.size(0) * x.size(1), H = x.size(2), W = x.size(3);
    const int64_t OH = out.size(2), OW = out.size(3);
    const T* xp = x.data_ptr<T>();
    T* op = out.data_ptr<T>();
    int64_t* ip = indices.data_ptr<int64_t>();
    for (int64_t nc = 0; nc < NC; ++nc)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          T best = -std::numeric_limits<T>::infinity();
          int64_t arg = -1;
          for (int64_t i = 0; i < p.kernel_h && !(arg >= 0 && std::isnan(best)); ++i) {
            const int64_t h = oh * p.stride_h - p.pad_h + i;
            if (h < 0 || h >= H) continue;
            for (int64_t j = 0; j < p.kernel_w; ++j) {
              const int64_t w = ow * p.stride_w - p.pad_w + j;
              if (w < 0 || w >= W) continue;
              const T v = xp[(nc * H + h) * W + w];
              if (arg < 0 || v > best || std::isnan(v)) {  // NaN propagates, as PyTorch
                best = v;
                arg = h * W + w;
                if (std::isnan(v)) break;
              }
            }
          }
          op[(nc * OH + oh) * OW + ow] = best;
          ip[(nc * OH + oh) * OW + ow] = arg;
        }
  });
}

void max_pool2d_backward(const Tensor& grad_out, const Tensor& indices, const Tensor& grad_x) {
  dispatch_floating(grad_x.dtype(), "max_pool2d_backward", [&]<class T>() {
    const int64_t NC = grad_x.size(0) * grad_x.size(1), HW = grad_x.size(2) * grad_x.size(3);
    const int64_t OHW = grad_out.size(2) * grad_out.size(3);
    const T* gp = grad_out.data_ptr<T>();
    const int64_t* ip = indices.data_ptr<int64_t>();
    T* xp = grad_x.data_ptr<T>();
    std::fill(xp, xp + grad_x.numel(), T(0));
    for (int64_t nc = 0; nc < NC; ++nc)
      for (int64_t k = 0; k < OHW; ++k)
        if (ip[nc * OHW + k] >= 0) xp[nc * HW + ip[nc * OHW + k]] += gp[nc * OHW + k];
  });
}

namespace {
// PyTorch's avg-pool window: clipped to the padded input for the divisor, to the input for the sum.
struct AvgWindow {
  int64_t h0, h1, w0, w1;
  double divisor;
};
AvgWindow avg_window(const Pool2dParams& p, int64_t oh, int64_t ow, int64_t H, int64_t W) {
  int64_t h0 = oh * p.stride_h - p.pad_h, w0 = ow * p.stride_w - p.pad_w;
  int64_t h1 = std::min(h0 + p.kernel_h, H + p.pad_h), w1 = std::min(w0 + p.kernel_w, W + p.pad_w);
  const int64_t pool_size = (h1 - h0) * (w1 - w0);
  h0 = std::max<int64_t>(h0, 0);
  w0 = std::max<int64_t>(w0, 0);
  h1 = std::min(h1, H);
  w1 = std::min(w1, W);
  const int64_t inside = (h1 - h0) * (w1 - w0);
  return {h0, h1, w0, w1, double(p.count_include_pad ? pool_size : inside)};
}
}  // namespace

void avg_pool2d_forward(const Tensor& x, const Pool2dParams& p, const Tensor& out) {
  dispatch_floating(x.dtype(), "avg_pool2d", [&]<class T>() {
    const int64_t NC = x.size(0) * x.size(1), H = x.size(2), W = x.size(3);
    const int64_t OH = out.size(2), OW = out.size(3);
    const T* xp = x.data_ptr<T>();
    T* op = out.data_ptr<T>();
    for (int64_t nc = 0; nc < NC; ++nc)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          AvgWindow win = avg_window(p, oh, ow, H, W);
          double acc = 0.0;
          for (int64_t h = win.h0; h < win.h1; ++h)
            for (int64_t w = win.w0; w < win.w1; ++w) acc += double(xp[(nc * H + h) * W + w]);
          op[(nc * OH + oh) * OW + ow] = T(acc / win.divisor);
        }
  });
}

void avg_pool2d_backward(const Tensor& grad_out, const Pool2dParams& p, const Tensor& grad_x) {
  dispatch_floating(grad_x.dtype(), "avg_pool2d_backward", [&]<class T>() {
    const int64_t NC = grad_x.size(0) * grad_x.size(1), H = grad_x.size(2), W = grad_x.size(3);
    const int64_t OH = grad_out.size(2), OW = grad_out.size(3);
    const T* gp = grad_out.data_ptr<T>();
    T* xp = grad_x.data_ptr<T>();
    std::fill(xp, xp + grad_x.numel(), T(0));
    for (int64_t nc = 0; nc < NC; ++nc)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          AvgWindow win = avg_window(p, oh, ow, H, W);
          const T g = T(double(gp[(nc * OH + oh) * OW + ow]) / win.divisor);
          for (int64_t h = win.h0; h < win.h1; ++h)
            for (int64_t w = win.w0; w < win.w1; ++w) xp[(nc * H + h) * W + w] += g;
        }
  });
}

namespace {
int64_t adaptive_start(int64_t i, int64_t in, int64_t out) { return (i * in) / out; }
int64_t adaptive_end(int64_t i, int64_t in, int64_t out) { return ((i + 1) * in + out - 1) / out; }
}  // namespace

void adaptive_avg_pool2d_forward(const Tensor& x, const Tensor& out) {
  dispatch_floating(x.dtype(), "adaptive_avg_pool2d", [&]<class T>() {
    const int64_t NC = x.size(0) * x.size(1), H = x.size(2), W = x.size(3);
    const int64_t OH = out.size(2), OW = out.size(3);
    const T* xp = x.data_ptr<T>();
    T* op = out.data_ptr<T>();
    for (int64_t nc = 0; nc < NC; ++nc)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          const int64_t h0 = adaptive_start(oh, H, OH), h1 = adaptive_end(oh, H, OH);
          const int64_t w0 = adaptive_start(ow, W, OW), w1 = adaptive_end(ow, W, OW);
          double acc = 0.0;
          for (int64_t h = h0; h < h1; ++h)
            for (int64_t w = w0; w < w1; ++w) acc += double(xp[(nc * H + h) * W + w]);
          op[(nc * OH + oh) * OW + ow] = T(acc / double((h1 - h0) * (w1 - w0)));
        }
  });
}

void adaptive_avg_pool2d_backward(const Tensor& grad_out, const Tensor& grad_x) {
  dispatch_floating(grad_x.dtype(), "adaptive_avg_pool2d_backward", [&]<class T>() {
    const int64_t NC = grad_x.size(0) * grad_x.size(1), H = grad_x.size(2), W = grad_x.size(3);
    const int64_t OH = grad_out.size(2), OW = grad_out.size(3);
    const T* gp = grad_out.data_ptr<T>();
    T* xp = grad_x.data_ptr<T>();
    std::fill(xp, xp + grad_x.numel(), T(0));
    for (int64_t nc = 0; nc < NC; ++nc)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          const int64_t h0 = adaptive_start(oh, H, OH), h1 = adaptive_end(oh, H, OH);
          const int64_t w0 = adaptive_start(ow, W, OW), w1 = adaptive_end(ow, W, OW);
          const T g = T(double(gp[(nc * OH + oh) * OW + ow]) / double((h1 - h0) * (w1 - w0)));
          for (int64_t h = h0; h < h1; ++h)
            for (int64_t w = w0; w < w1; ++w) xp[(nc * H + h) * W + w] += g;
        }
  });
}

// ---- batch norm --------------------------------------------------------------------------------
void batch_norm_stats(const Tensor& x, const Tensor& mean, const Tensor& var) {
  dispatch_floating(x.dtype(), "batch_norm", [&]<class T>() {
    const int64_t N = x.size(0), C = x.size(1), S = x.size(2);
    const T* xp = x.data_ptr<T>();
    for (int64_t c = 0; c < C; ++c) {
      double s = 0.0;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t k = 0; k < S; ++k) s += double(xp[(n * C + c) * S + k]);
      const double m = s / double(N * S);
      double q = 0.0;  // two passes: no cancellation in E[x^2] - E[x]^2
      for (int64_t n = 0; n < N; ++n)
        for (int64_t k = 0; k < S; ++k) {
          const double d = double(xp[(n * C + c) * S + k]) - m;
          q += d * d;
        }
      mean.data_ptr<T>()[c] = T(m);
      var.data_ptr<T>()[c] = T(q / double(N * S));
    }
  });
}

void batch_norm_forward(const Tensor& x, const Tensor& mean, const Tensor& invstd, const Tensor& weight,
                        const Tensor& bias, const Tensor& out) {
  dispatch_floating(x.dtype(), "batch_norm", [&]<class T>() {
    const int64_t N = x.size(0), C = x.size(1), S = x.size(2);
    const T *xp = x.data_ptr<T>(), *mp = mean.data_ptr<T>(), *ip = invstd.data_ptr<T>();
    const T *wp = weight.data_ptr<T>(), *bp = bias.data_ptr<T>();
    T* op = out.data_ptr<T>();
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t k = 0; k < S; ++k) {
          const int64_t i = (n * C + c) * S + k;
          op[i] = T((double(xp[i]) - double(mp[c])) * double(ip[c]) * double(wp[c]) + double(bp[c]));
        }
  });
}

void batch_norm_backward(const Tensor& grad_out, const Tensor& x, const Tensor& mean, const Tensor& invstd,
                         const Tensor& weight, bool training, const Tensor& grad_x,
                         const Tensor& grad_weight, const Tensor& grad_bias) {
  dispatch_floating(x.dtype(), "batch_norm_backward", [&]<class T>() {
    const int64_t N = x.size(0), C = x.size(1), S = x.size(2);
    const double M = double(N * S);
    const T *gp = grad_out.data_ptr<T>(), *xp = x.data_ptr<T>(), *mp = mean.data_ptr<T>();
    const T *ip = invstd.data_ptr<T>(), *wp = weight.data_ptr<T>();
    T *gxp = grad_x.data_ptr<T>(), *gwp = grad_weight.data_ptr<T>(), *gbp = grad_bias.data_ptr<T>();
    for (int64_t c = 0; c < C; ++c) {
      const double m = double(mp[c]), is = double(ip[c]), w = double(wp[c]);
      double sum_g = 0.0, sum_gxhat = 0.0;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t k = 0; k < S; ++k) {
          const int64_t i = (n * C + c) * S + k;
          sum_g += double(gp[i]);
          sum_gxhat += double(gp[i]) * (double(xp[i]) - m) * is;
        }
      for (int64_t n = 0; n < N; ++n)
        for (int64_t k = 0; k < S; ++k) {
          const int64_t i = (n * C + c) * S + k;
          double g = double(gp[i]);
          if (training) g -= sum_g / M + (double(xp[i]) - m) * is * sum_gxhat / M;
          gxp[i] = T(w * is * g);
        }
      gwp[c] = T(sum_gxhat);
      gbp[c] = T(sum_g);
    }
  });
}

// ---- softmax -----------------------------------------------------------------------------------
void softmax_forward(const Tensor& x, int64_t dim, bool log, const Tensor& out) {
  dispatch_floating(x.dtype(), log ? "log_softmax" : "softmax", [&]<class T>() {
    const DimSplit s = split_at(x, dim);
    const T* xp = x.data_ptr<T>();
    T* op = out.data_ptr<T>();
    for (int64_t o = 0; o < s.outer; ++o)
      for (int64_t in = 0; in < s.inner; ++in) {
        const int64_t base = o * s.d * s.inner + in;
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t k = 0; k < s.d; ++k) mx = std::max(mx, double(xp[base + k * s.inner]));
        double z = 0.0;  // subtracting the max keeps exp() from overflowing
        for (int64_t k = 0; k < s.d; ++k) z += std::exp(double(xp[base + k * s.inner]) - mx);
        const double lz = std::log(z);
        for (int64_t k = 0; k < s.d; ++k) {
          const double v = double(xp[base + k * s.inner]) - mx;
          op[base + k * s.inner] = T(log ? v - lz : std::exp(v) / z);
        }
      }
  });
}

void softmax_backward(const Tensor& grad_out, const Tensor& out, int64_t dim, bool log, const Tensor& grad_x) {
  dispatch_floating(out.dtype(), log ? "log_softmax_backward" : "softmax_backward", [&]<class T>() {
    const DimSplit s = split_at(out, dim);
    const T *gp = grad_out.data_ptr<T>(), *yp = out.data_ptr<T>();
    T* gxp = grad_x.data_ptr<T>();
    for (int64_t o = 0; o < s.outer; ++o)
      for (int64_t in = 0; in < s.inner; ++in) {
        const int64_t base = o * s.d * s.inner + in;
        double acc = 0.0;  // log: sum(g); softmax: sum(g * y)
        for (int64_t k = 0; k < s.d; ++k) {
          const int64_t i = base + k * s.inner;
          acc += log ? double(gp[i]) : double(gp[i]) * double(yp[i]);
        }
        for (int64_t k = 0; k < s.d; ++k) {
          const int64_t i = base + k * s.inner;
          gxp[i] = log ? T(double(gp[i]) - std::exp(double(yp[i])) * acc)
                       : T(double(yp[i]) * (double(gp[i]) - acc));
        }
      }
  });
}

// ---- nll ---------------------------------------------------------------------------------------
void nll_loss_forward(const Tensor& log_probs, const Tensor& target, int64_t ignore_index, const Tensor& out) {
  dispatch_floating(log_probs.dtype(), "nll_loss", [&]<class T>() {
    const int64_t N = log_probs.size(0), C = log_probs.size(1);
    const T* lp = log_probs.data_ptr<T>();
    const int64_t* tp = target.data_ptr<int64_t>();
    T* op = out.data_ptr<T>();
    for (int64_t i = 0; i < N; ++i) op[i] = tp[i] == ignore_index ? T(0) : -lp[i * C + tp[i]];
  });
}

void nll_loss_backward(const Tensor& grad_out, const Tensor& target, int64_t ignore_index,
                       const Tensor& grad_log_probs) {
  dispatch_floating(grad_log_probs.dtype(), "nll_loss_backward", [&]<class T>() {
    const int64_t N = grad_log_probs.size(0), C = grad_log_probs.size(1);
    const T* gp = grad_out.data_ptr<T>();
    const int64_t* tp = target.data_ptr<int64_t>();
    T* gl = grad_log_probs.data_ptr<T>();
    std::fill(gl, gl + N * C, T(0));
    for (int64_t i = 0; i < N; ++i)
      if (tp[i] != ignore_index) gl[i * C + tp[i]] = -gp[i];
  });
}

}  // namespace ember::cpu::reference
