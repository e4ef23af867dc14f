// The ops MobileNet V2/V3 and EfficientNet add, on the CPU, float32 NCHW, median of --reps calls
// after 3 warm-up calls, in ms; bench/mobilenet_ops_torch.py times PyTorch on the same shapes.
//  1. Depthwise 3x3 convolution (groups == C_in == C_out, stride 1, padding 1, no bias: MobileNet
//     V2's middle layer), forward and forward + backward (input and weight gradients), through the
//     kernels ember can take: oneDNN (src/cpu/nn_conv_dnnl.cpp, the registered path) and im2col +
//     OpenBLAS per group (src/cpu/nn_conv.cpp, the fallback).
//  2. Squeeze-and-excitation's channel scaling x (N, C, H, W) * s (N, C, 1, 1), forward + backward.
//  3. hardswish and silu, forward + backward (the activation kernels, src/cpu/activation.cpp).
//   OMP_WAIT_POLICY=passive ./build/bench/bench_mobilenet_ops [--threads 2] [--batch 32] [--reps 10]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <ember/ember.h>

#include "cpu/nn_conv.h"

using namespace ember;

namespace {

template <class F>
double median_ms(F&& f, int reps) {
  for (int i = 0; i < 3; ++i) f();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto a = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, reps = 10;
  int64_t batch = 32;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--batch")) batch = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
  }
  set_num_threads(threads);
  std::printf("depthwise 3x3 conv, stride 1, pad 1, float32, batch %lld, %d threads: forward + backward (ms, median of %d)\n",
              (long long)batch, threads, reps);
  std::printf("%-18s %10s %10s %10s %10s\n", "shape", "dnnl fwd", "dnnl f+b", "im2col fwd", "im2col f+b");
  struct Shape4 { int64_t c, hw; };
  for (Shape4 s : std::vector<Shape4>{{96, 56}, {144, 56}, {192, 28}, {384, 28}}) {
    Generator gen(1);
    Tensor x = randn({batch, s.c, s.hw, s.hw}, {}, &gen), w = randn({s.c, 1, 3, 3}, {}, &gen);
    Tensor g = randn({batch, s.c, s.hw, s.hw}, {}, &gen);
    Tensor out = empty(g.sizes()), gx = empty(x.sizes()), gw = empty(w.sizes());
    kernels::Conv2dParams p{.pad_h = 1, .pad_w = 1, .groups = s.c};
    auto run = [&](bool dnnl, bool backward) {
      if (dnnl) cpu::conv2d_forward_dnnl(x, w, {}, p, out);
      else cpu::conv2d_forward_im2col(x, w, {}, p, out);
      if (!backward) return;
      if (dnnl) {
        cpu::conv2d_backward_data_dnnl(g, w, p, gx);
        cpu::conv2d_backward_weight_dnnl(g, x, p, gw);
      } else {
        cpu::conv2d_backward_data_im2col(g, w, p, gx);
        cpu::conv2d_backward_weight_im2col(g, x, p, gw);
      }
    };
    const double df = median_ms([&] { run(true, false); }, reps), dfb = median_ms([&] { run(true, true); }, reps);
    const double i_f = median_ms([&] { run(false, false); }, reps), ifb = median_ms([&] { run(false, true); }, reps);
    char label[64];
    std::snprintf(label, sizeof label, "%lldx%lldx%lldx%lld", (long long)batch, (long long)s.c, (long long)s.hw, (long long)s.hw);
    std::printf("%-18s %10.2f %10.2f %10.2f %10.2f\n", label, df, dfb, i_f, ifb);
  }
  // Squeeze-and-excitation's scale and the activations, through the front-ends with autograd.
  std::printf("%-18s %10s %10s %10s\n", "shape", "se f+b", "hswish f+b", "silu f+b");
  for (auto [c, hw] : std::vector<std::pair<int64_t, int64_t>>{{96, 56}, {192, 28}}) {
    Generator gen(3);
    Tensor x = randn({batch, c, hw, hw}, {}, &gen).requires_grad_(), s = rand({batch, c, 1, 1}, {}, &gen).requires_grad_();
    Tensor g = randn({batch, c, hw, hw}, {}, &gen);
    auto fb = [&](auto op) {
      return median_ms([&] {
        Tensor y = op();
        autograd::grad({y}, {x}, {g});
      }, reps);
    };
    const double se = median_ms([&] {
      Tensor y = mul(x, s);
      autograd::grad({y}, {x, s}, {g});
    }, reps);
    const double hs = fb([&] { return hardswish(x); }), si = fb([&] { return silu(x); });
    char label[64];
    std::snprintf(label, sizeof label, "%lldx%lldx%lldx%lld", (long long)batch, (long long)c, (long long)hw, (long long)hw);
    std::printf("%-18s %10.2f %10.2f %10.2f\n", label, se, hs, si);
  }
  // The front-end path end to end (what training runs: the registered kernels, autograd included).
  Generator gen(2);
  Tensor x = randn({batch, 144, 56, 56}, {}, &gen).requires_grad_(), w = randn({144, 1, 3, 3}, {}, &gen).requires_grad_();
  const double e2e = median_ms([&] {
    Tensor y = nn::functional::conv2d(x, w, {}, {.padding = {1, 1}, .groups = 144});
    y.sum().backward();
  }, reps);
  std::printf("front-end conv2d + sum + backward, %lldx144x56x56: %.2f ms\n", (long long)batch, e2e);
  return 0;
}
