// Per-op overhead: the fixed cost of one small op (argument checks, allocation, dispatch,
// autograd bookkeeping), measured on tensors so small that the arithmetic is negligible.
//   ./build/bench/bench_op_overhead --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <ember/ember.h>

using namespace ember;

static void BM_Add16(benchmark::State& state) {
  set_num_threads(1);
  Tensor a = ones({16}), b = ones({16});
  for (auto _ : state) {
    Tensor c = add(a, b);
    benchmark::DoNotOptimize(c.raw_data());
  }
}
BENCHMARK(BM_Add16);

static void BM_Add16NoGrad(benchmark::State& state) {
  set_num_threads(1);
  NoGradGuard g;
  Tensor a = ones({16}), b = ones({16});
  for (auto _ : state) {
    Tensor c = add(a, b);
    benchmark::DoNotOptimize(c.raw_data());
  }
}
BENCHMARK(BM_Add16NoGrad);

// One 16x16 linear layer, forward + backward (3 ops forward incl. the loss, their backward,
// gradient accumulation into two parameters).
static void BM_Linear16FwdBwd(benchmark::State& state) {
  set_num_threads(1);
  Tensor x = randn({16, 16});
  Tensor w = randn({16, 16}).requires_grad_();
  Tensor b = randn({16}).requires_grad_();
  for (auto _ : state) {
    Tensor y = linear(x, w, b).sum();
    y.backward();
    benchmark::DoNotOptimize(w.grad().raw_data());
  }
}
BENCHMARK(BM_Linear16FwdBwd);

BENCHMARK_MAIN();
