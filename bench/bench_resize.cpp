// data::resize (Pillow's antialiased bilinear, bit for bit) on RandomResizedCrop(224)'s boxes of a
// 500x375 RGB photo-sized image, one thread: the AVX2 passes against the plain loops they are
// tested equal to (cpu::allow_avx2(false)), the work ImageFolder's DataLoader does per picture after
// the decode. Items/s = resized crops per second.
//   build/bench/bench_resize [--benchmark_repetitions=5]
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "core/isa.h"
#include "ember/data/photo_transforms.h"

namespace {

using ember::data::Box;
using ember::data::Image;

void BM_RandomResizedCrop224(benchmark::State& state) {
  const bool vector = state.range(0) != 0;
  const int64_t h = state.range(1), w = state.range(2);
  Image src(w, h, 3);
  uint32_t s = 1;
  for (auto& p : src.pixels) p = uint8_t((s = s * 1664525u + 1013904223u) >> 24);
  std::vector<Box> boxes;
  for (int64_t i = 0; i < 256; ++i) boxes.push_back(ember::data::random_resized_crop_box(h, w, 0, 0, i));
  ember::cpu::allow_avx2(vector);
  size_t i = 0;
  for (auto _ : state) {
    Image out = ember::data::resize(src, 224, 224, boxes[i++ % boxes.size()]);
    benchmark::DoNotOptimize(out.pixels.data());
  }
  ember::cpu::allow_avx2(true);
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(vector ? (ember::cpu::have_avx2() ? "avx2" : "plain (no AVX2 here)") : "plain");
}
BENCHMARK(BM_RandomResizedCrop224)->ArgNames({"vector", "h", "w"})->Args({0, 375, 500})->Args({1, 375, 500});

}  // namespace

BENCHMARK_MAIN();
