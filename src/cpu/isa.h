// The CPU's instruction sets, asked once: which of the hand-vectorised kernels may run (the library
// is built without -march; each AVX-512 kernel has a plain fallback).
#pragma once

namespace ember::cpu {

inline bool have_avx512() {
  static const bool yes = __builtin_cpu_supports("avx512f");
  return yes;
}

}  // namespace ember::cpu
