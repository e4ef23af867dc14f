// Batch norm on the CPU, three ways, on bncnn's two layers (NCHW float32): the reference loops
// (src/cpu/reference/nn_norm.cpp), ember's CPU kernels (src/cpu/nn_norm.cpp: vectorised loops over
// channels) and oneDNN 2.6's batch_normalization primitive on the same plain NCHW buffers (training
// forward with batch statistics, scale and shift; backward for data, scale and shift). Forward is
// statistics + normalisation, backward is the three gradients. Median of --reps calls after 5
// warm-up calls, in ms; the oneDNN line names the implementation oneDNN picked.
//   ./build/bench/bench_batch_norm [--threads 2] [--batch 128] [--reps 50]
// Then the fused batch norm + ReLU (+ residual add) of issue 24 against the separate ops, through
// autograd, on training layers.
#include <oneapi/dnnl/dnnl.hpp>
#include <omp.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <ember/ember.h>

#include "cpu/nn_norm.h"
#include "cpu/reference/nn.h"

using namespace ember;

namespace {

template <class F>
double median_ms(F&& f, int reps) {
  for (int i = 0; i < 5; ++i) f();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto a = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct Buffers {
  Tensor x, g, w, b, mean, var, invstd, out, gx, gw, gb;
};

Buffers make_buffers(int64_t N, int64_t C, int64_t S) {
  Generator gen(1);
  Buffers B;
  B.x = randn({N, C, S}, {}, &gen);
  B.g = randn({N, C, S}, {}, &gen);
  B.w = add(rand({C}, {}, &gen), 0.5);
  B.b = randn({C}, {}, &gen);
  B.mean = empty({C});
  B.var = empty({C});
  B.invstd = empty({C});
  B.out = empty({N, C, S});
  B.gx = empty({N, C, S});
  B.gw = empty({C});
  B.gb = empty({C});
  return B;
}

using StatsFn = kernels::BatchNormStatsFn;
using ForwardFn = kernels::BatchNormForwardFn;
using BackwardFn = kernels::BatchNormBackwardFn;

void run_ember(const char* name, Buffers& B, StatsFn stats, ForwardFn fwd, BackwardFn bwd, int reps) {
  const int64_t C = B.x.size(1);
  auto forward = [&] {
    stats(B.x, B.mean, B.var);
    float* is = B.invstd.data_ptr<float>();
    const float* v = B.var.data_ptr<float>();
    for (int64_t c = 0; c < C; ++c) is[c] = 1.0f / std::sqrt(v[c] + 1e-5f);
    fwd(B.x, B.mean, B.invstd, B.w, B.b, B.out);
  };
  const double f = median_ms(forward, reps);
  const double b = median_ms([&] { bwd(B.g, B.x, B.mean, B.invstd, B.w, true, B.gx, B.gw, B.gb); }, reps);
  std::printf("  %-10s forward %8.3f ms  backward %8.3f ms\n", name, f, b);
}

void run_dnnl(Buffers& B, int reps) {
  using dnnl::memory;
  using tag = memory::format_tag;
  using dt = memory::data_type;
  const int64_t N = B.x.size(0), C = B.x.size(1), S = B.x.size(2);
  int64_t H = 1;
  while (H * H < S) ++H;  // the planes are square here (28x28, 14x14)
  const int64_t W = S / H;
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  const memory::desc data({N, C, H, W}, dt::f32, tag::nchw), vec({C}, dt::f32, tag::x);
  const auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
  dnnl::batch_normalization_forward::primitive_desc fpd(
      dnnl::batch_normalization_forward::desc(dnnl::prop_kind::forward_training, data, 1e-5f, flags), eng);
  dnnl::batch_normalization_backward::primitive_desc bpd(
      dnnl::batch_normalization_backward::desc(dnnl::prop_kind::backward, data, data, 1e-5f, flags), eng, fpd);
  dnnl::batch_normalization_forward fwd(fpd);
  dnnl::batch_normalization_backward bwd(bpd);
  memory x(data, eng, B.x.raw_data()), out(data, eng, B.out.raw_data()), g(data, eng, B.g.raw_data()),
      gx(data, eng, B.gx.raw_data());
  memory w(vec, eng, B.w.raw_data()), b(vec, eng, B.b.raw_data()), mean(vec, eng, B.mean.raw_data()),
      var(vec, eng, B.var.raw_data()), gw(vec, eng, B.gw.raw_data()), gb(vec, eng, B.gb.raw_data());
  const double f = median_ms(
      [&] {
        fwd.execute(s, {{DNNL_ARG_SRC, x}, {DNNL_ARG_DST, out}, {DNNL_ARG_SCALE, w}, {DNNL_ARG_SHIFT, b},
                        {DNNL_ARG_MEAN, mean}, {DNNL_ARG_VARIANCE, var}});
        s.wait();
      },
      reps);
  const double bk = median_ms(
      [&] {
        bwd.execute(s, {{DNNL_ARG_SRC, x}, {DNNL_ARG_MEAN, mean}, {DNNL_ARG_VARIANCE, var}, {DNNL_ARG_DIFF_DST, g},
                        {DNNL_ARG_SCALE, w}, {DNNL_ARG_SHIFT, b}, {DNNL_ARG_DIFF_SRC, gx}, {DNNL_ARG_DIFF_SCALE, gw},
                        {DNNL_ARG_DIFF_SHIFT, gb}});
        s.wait();
      },
      reps);
  std::printf("  %-10s forward %8.3f ms  backward %8.3f ms  (%s / %s)\n", "onednn", f, bk, fpd.impl_info_str(),
              bpd.impl_info_str());
}

// The op front-ends with autograd, forward + backward of one training step's layer: batch norm
// then ReLU (then the residual's add and ReLU) as separate ops, against batch_norm_activation /
// batch_norm_add_activation (one op; src/cpu/nn_norm.cpp's fused passes).
void run_fused_ops(int64_t N, int64_t C, int64_t H, int reps) {
  namespace F = ember::nn::functional;
  Generator gen(2);
  Tensor x = randn({N, C, H, H}, {}, &gen), r = randn({N, C, H, H}, {}, &gen), seed = randn({N, C, H, H}, {}, &gen);
  Tensor rm = zeros({C}), rv = ones({C}), w = add(rand({C}, {}, &gen), 0.5), b = randn({C}, {}, &gen);
  for (Tensor* t : {&x, &r, &w, &b}) t->requires_grad_(true);
  auto step = [&](auto f) {
    return median_ms([&] { autograd::grad({f()}, {x, w, b}, {seed}); }, reps);
  };
  const double relu_ops = step([&] { return relu(F::batch_norm(x, rm, rv, w, b, true, 0.1, 1e-5)); });
  const double relu_one = step([&] {
    return F::batch_norm_activation(x, rm, rv, w, b, true, 0.1, 1e-5, F::ConvActivation::Relu);
  });
  const double add_ops = step([&] { return relu(add(F::batch_norm(x, rm, rv, w, b, true, 0.1, 1e-5), r)); });
  const double add_one = step([&] {
    return F::batch_norm_add_activation(x, rm, rv, w, b, true, 0.1, 1e-5, r, F::ConvActivation::Relu);
  });
  std::printf("(%lld, %lld, %lld, %lld)  bn+relu: ops %7.3f  one op %7.3f ms (x%.2f)   bn+add+relu: ops %7.3f  one op "
              "%7.3f ms (x%.2f)\n",
              (long long)N, (long long)C, (long long)H, (long long)H, relu_ops, relu_one, relu_ops / relu_one, add_ops,
              add_one, add_ops / add_one);
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, reps = 50;
  int64_t batch = 128;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "bench_batch_norm: %s needs a value\n", a.c_str());
      return 2;
    }
    if (a == "--threads") threads = std::atoi(argv[++i]);
    else if (a == "--batch") batch = std::atoll(argv[++i]);
    else if (a == "--reps") reps = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "bench_batch_norm: unknown option %s (--threads, --batch, --reps)\n", a.c_str());
      return 2;
    }
  }
  omp_set_num_threads(threads);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::printf("batch norm, NCHW float32, %d threads, median of %d\n", threads, reps);
  const std::vector<std::pair<int64_t, int64_t>> layers = {{16, 28 * 28}, {32, 14 * 14}};
  for (auto [C, S] : layers) {
    std::printf("(%lld, %lld, %lld)\n", (long long)batch, (long long)C, (long long)S);
    Buffers B = make_buffers(batch, C, S);
    run_ember("reference", B, &cpu::reference::batch_norm_stats, &cpu::reference::batch_norm_forward,
              &cpu::reference::batch_norm_backward, std::max(5, reps / 10));
    run_ember("channels", B, &cpu::batch_norm_stats_channels, &cpu::batch_norm_forward_channels,
              &cpu::batch_norm_backward_channels, reps);
    run_dnnl(B, reps);
  }
  // Training layers: bncnn48_fc128's first (batch 64), resnet18's stem output and first stage at 112
  // and 224 pixels (batch 32).
  std::printf("fused batch norm + activation, forward + backward through autograd, median of %d\n", reps);
  for (auto [N, C, H] : std::vector<std::array<int64_t, 3>>{{64, 48, 28}, {32, 64, 28}, {32, 64, 56}, {32, 128, 14}})
    run_fused_ops(N, C, H, reps);
  return 0;
}
