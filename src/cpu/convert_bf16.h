// float32 <-> bfloat16 conversion of contiguous arrays, for the CPU copy kernel (autocast casts
// activations and weights with it every step). Bit for bit the scalar float_to_bf16 /
// bf16_to_float of ember/core/dtype.h: round to nearest even, NaN kept quiet, denormals kept.
#pragma once

#include <cstdint>

namespace ember::cpu {

void f32_to_bf16_array(const float* src, uint16_t* dst, int64_t n);
void bf16_to_f32_array(const uint16_t* src, float* dst, int64_t n);
// v[i] = the bf16 nearest v[i], widened (float_to_bf16 then bf16_to_float), in place.
void round_to_bf16_in_place(float* v, int64_t n);

}  // namespace ember::cpu
