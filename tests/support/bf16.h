// For tests of bfloat16 mixed precision: skip, with the reason, on a CPU without bf16 hardware
// (AVX512-BF16 or AMX-BF16), where ember refuses --precision bf16 rather than emulate it.
#pragma once

#include <gtest/gtest.h>

#include "ember/autocast.h"

// In a TEST body (GTEST_SKIP returns from the enclosing function).
#define EMBER_SKIP_WITHOUT_FAST_BF16()                                                                  \
  do {                                                                                                  \
    const ::ember::PrecisionSupport bf16_ = ::ember::bf16_support(::ember::Device::cpu());             \
    if (!bf16_.native) GTEST_SKIP() << "this CPU has no bfloat16 hardware, ember refuses bf16 here: " << bf16_.reason; \
  } while (0)
