// This CPU's arithmetic ceiling: the multiply-add rate of a loop that does nothing else, per thread
// count, in float32 (AVX-512 FMA, or AVX2 FMA where AVX-512 is missing) and in bfloat16 (AVX512-BF16's
// dot product, two bf16 pairs into each float32 lane). The figure every "at this CPU's rate"
// statement in docs/benchmarks.md is measured against: a layer at 95% of it has nothing left to win
// without fewer multiplications (Winograd) or another unit (AMX, a GPU).
//
// Twelve independent accumulators per thread hide the instruction latency (4-6 cycles at one or two
// per cycle); each thread runs the loop for ~0.2 s and the best of --reps runs is kept, since other
// tenants can only slow a run down. AMX tiles are not measured (the line says so where the CPU has
// them).
//   ./build/bench/cpu_peak [--threads 2] [--reps 5]
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr long kIters = 20'000'000;  // 12 instructions each: ~0.1-0.2 s per run at 3-4 GHz

// The loop: 12 accumulators `a0..a11` of TYPE kept in registers (the empty asm, constraint C, stops
// the compiler from folding the chain or keeping the accumulators in memory), each updated by
// STEP(a) once per iteration. One macro for the three instruction sets, since each function needs its
// own target attribute. The functions return FLOP (multiply and add counted apart).
#define EMBER_PEAK_LOOP(TYPE, ZERO, STEP, C)                                                                  \
  TYPE a0 = ZERO, a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0, a8 = a0, a9 = a0, a10 = a0, \
       a11 = a0;                                                                                            \
  for (long n = 0; n < iters; ++n) {                                                                        \
    STEP(a0) STEP(a1) STEP(a2) STEP(a3) STEP(a4) STEP(a5) STEP(a6) STEP(a7) STEP(a8) STEP(a9) STEP(a10)     \
    STEP(a11)                                                                                               \
    asm volatile("" : C(a0), C(a1), C(a2), C(a3), C(a4), C(a5), C(a6), C(a7), C(a8), C(a9), C(a10), C(a11)); \
  }

// Makes the accumulators' values observable, so the loop is not removed.
__attribute__((target("avx512f"))) void keep(__m512 a, __m512 b, __m512 c) {
  volatile float sink = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a, b), c));
  (void)sink;
}

__attribute__((target("avx512f"))) double fma_avx512(long iters) {
  const __m512 x = _mm512_set1_ps(1e-7f), y = _mm512_set1_ps(1.0f);
#define EMBER_STEP(a) a = _mm512_fmadd_ps(x, y, a);
#define EMBER_REG(a) "+v"(a)
  EMBER_PEAK_LOOP(__m512, _mm512_setzero_ps(), EMBER_STEP, EMBER_REG)
#undef EMBER_STEP
#undef EMBER_REG
  keep(a0, a5, a11);
  return double(iters) * 12 * 16 * 2;
}

__attribute__((target("avx2,fma"))) double fma_avx2(long iters) {
  const __m256 x = _mm256_set1_ps(1e-7f), y = _mm256_set1_ps(1.0f);
#define EMBER_STEP(a) a = _mm256_fmadd_ps(x, y, a);
#define EMBER_REG(a) "+x"(a)
  EMBER_PEAK_LOOP(__m256, _mm256_setzero_ps(), EMBER_STEP, EMBER_REG)
#undef EMBER_STEP
#undef EMBER_REG
  float out[8];
  _mm256_storeu_ps(out, _mm256_add_ps(a0, a11));
  volatile float sink = out[0];
  (void)sink;
  return double(iters) * 12 * 8 * 2;
}

// vdpbf16ps: per float32 lane, two bf16 products added to the accumulator (4 FLOP per lane).
__attribute__((target("avx512f,avx512bf16"))) double dot_bf16(long iters) {
  const __m512bh x = (__m512bh)_mm512_set1_epi16(0x3f80);  // 1.0
  const __m512bh y = (__m512bh)_mm512_set1_epi16(0x3300);  // ~3e-8
#define EMBER_STEP(a) a = _mm512_dpbf16_ps(a, x, y);
#define EMBER_REG(a) "+v"(a)
  EMBER_PEAK_LOOP(__m512, _mm512_setzero_ps(), EMBER_STEP, EMBER_REG)
#undef EMBER_STEP
#undef EMBER_REG
  keep(a0, a5, a11);
  return double(iters) * 12 * 16 * 4;
}
#undef EMBER_PEAK_LOOP

// GFLOP/s of `threads` threads each running body(kIters) at once: total FLOP over the slowest
// thread's time.
double run(double (*body)(long), int threads) {
  std::vector<double> flop(threads), secs(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      const auto a = std::chrono::steady_clock::now();
      flop[t] = body(kIters);
      secs[t] = std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
    });
  for (auto& th : pool) th.join();
  double total = 0;
  for (double f : flop) total += f;
  return total / *std::max_element(secs.begin(), secs.end()) / 1e9;
}

// The model name, family and model number (to record beside the figures) and whether AMX-BF16 is
// there, from one read of /proc/cpuinfo; fields it lacks read "unknown".
struct CpuInfo {
  std::string label;
  bool amx_bf16 = false;
};
CpuInfo cpu_info() {
  std::ifstream f("/proc/cpuinfo");
  std::string line, name, family, model;
  bool amx = false;
  while (std::getline(f, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = line.substr(0, line.find_first_of("\t:"));
    const std::string value = line.substr(std::min(colon + 2, line.size()));
    if (key == "model name" && name.empty()) name = value;
    if (key == "cpu family" && family.empty()) family = value;
    if (key == "model" && model.empty()) model = value;
    if (key == "flags") amx = amx || (" " + value + " ").find(" amx_bf16 ") != std::string::npos;
  }
  auto or_unknown = [](const std::string& v) { return v.empty() ? std::string("unknown") : v; };
  return {or_unknown(name) + " (family " + or_unknown(family) + " model " + or_unknown(model) + ")", amx};
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, reps = 5;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--threads N] [--reps R]\n", argv[0]);
      return 2;
    }
  }
  if (threads < 1 || threads > 1024 || reps < 1 || reps > 1000) {
    std::fprintf(stderr, "cpu_peak: --threads must be 1-1024 and --reps 1-1000 (got %d and %d)\n", threads, reps);
    return 2;
  }
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f");
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool bf16 = avx512 && __builtin_cpu_supports("avx512bf16");
  const CpuInfo cpu = cpu_info();
  std::printf("CPU: %s\n", cpu.label.c_str());
  struct Kind {
    const char* name;
    double (*body)(long);
    bool here;
  };
  const Kind kinds[] = {{avx512 ? "float32 FMA (AVX-512)" : "float32 FMA (AVX2)", avx512 ? fma_avx512 : fma_avx2,
                         avx512 || avx2},
                        {"bfloat16 dot (AVX512-BF16 vdpbf16ps)", dot_bf16, bf16}};
  for (const Kind& k : kinds) {
    if (!k.here) {
      std::printf("%-40s not on this CPU\n", k.name);
      continue;
    }
    for (int t = 1; t <= threads; t = t < threads && t * 2 > threads ? threads : t * 2) {
      double best = 0;
      for (int r = 0; r < reps; ++r) best = std::max(best, run(k.body, t));
      std::printf("%-40s %2d thread%s %8.1f GFLOP/s (best of %d)\n", k.name, t, t == 1 ? " " : "s", best, reps);
    }
  }
  if (cpu.amx_bf16)
    std::printf("AMX-BF16 present: its tile rate is not measured here (oneDNN's brgemm uses it)\n");
  return 0;
}
