// Float32 row kernels shared by the plain element-wise kernels (elementwise.cpp) and the held-layout
// ones (dnnl_form.cpp): AVX-512 / AVX2 clones, the library being built without -march.
#pragma once

#include <cstdint>

namespace ember::cpu {

void relu_row_f32(const float* x, float* o, int64_t n);                           // o = x > 0 ? x : 0
void relu_backward_row_f32(const float* g, const float* out, float* gx, int64_t n);  // gx = out > 0 ? g : 0
void add_row_f32(const float* x, const float* y, float* o, int64_t n);               // o = x + y

}  // namespace ember::cpu
