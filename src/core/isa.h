// The CPU's instruction sets, asked once: which of the hand-vectorised kernels may run (the library
// is built without -march; each AVX-512 or AVX2 kernel has a plain fallback). In core: the CPU kernels
// (src/cpu) and the photo resize (src/data) both ask it.
#pragma once

namespace ember::cpu {

namespace isa_detail {
inline bool& avx512_allowed() {
  static bool on = true;
  return on;
}
inline bool& avx2_allowed() {
  static bool on = true;
  return on;
}
}  // namespace isa_detail

inline bool have_avx512() {
  static const bool yes = __builtin_cpu_supports("avx512f");
  return yes && isa_detail::avx512_allowed();
}

inline bool have_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2");
  return yes && isa_detail::avx2_allowed();
}

// For tests: false makes have_avx2() say no, so the plain loops run on an AVX2 machine.
inline void allow_avx2(bool on) { isa_detail::avx2_allowed() = on; }

// For tests: false makes have_avx512() say no, so the plain fallbacks run on an AVX-512 machine (as
// on a CPU without it). Set it only while no kernel runs.
inline void allow_avx512(bool on) { isa_detail::avx512_allowed() = on; }

}  // namespace ember::cpu
