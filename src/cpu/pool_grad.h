// The input gradient of training's 2x2 / stride-2 max pooling, left unwritten until its consumer
// reads it (issue 24: fused epilogues in training).
//
// In mnistnet and LeNet-5 a max pooling follows a convolution with a fused ReLU, whose output is
// held channel-blocked (cpu/dnnl_form.h). Its gradient used to be written plain -- the whole input
// zeroed, the pooled gradient scattered to the recorded maxima -- and then read again, transposed,
// by the activation's backward that masks it for the convolution: a 9.4 MB zero fill and a 9.4 MB
// transposing read per mnistnet step at batch 64, after a forward that wrote 4.7 MB of int64
// indices. Now the forward of such a pooling keeps its input (the convolution's held output, kept
// alive by the convolution's node anyway) instead of indices, and the backward leaves its result as
// a PooledGradForm: the pooled gradient and that input. The consumer that understands it writes
// the gradient in the layout it wants in one pass -- the window's maximum found again from the held
// input (the forward's taps and rule, so the forward's choice), the gradient stored there and zeros
// at the other three taps -- already masked by the convolution's ReLU / ReLU6 and rounded to bf16
// for its primitives where that is the consumer (conv_act_grad.cpp, elementwise.cpp's
// relu_backward); anyone else reads it plain (write_plain: the values of the scatter it replaces).
//
// Values: the scatter's, bit for bit: each input element receives at most one window's gradient,
// added to the zero fill (0 + g: a -0 gradient arrives as +0, as it did).
// Memory: after a convolution the saved input is the output its node keeps anyway; after a batch
// norm (whose backward recomputes its output from its input) it is kept for the pooling alone --
// as many bytes as the indices were in bf16, twice as many in float32.
// Not on CUDA (its pooling keeps indices), not for other windows, not for float64, not with
// EMBER_PLAIN_LAYOUT=1.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>

#include "ember/core/storage.h"
#include "ember/core/tensor.h"
#include "kernels/nn_kernels.h"

namespace ember::cpu {

class PooledGradForm final : public StorageForm {
 public:
  // grad_out: (N, C, OH, OW) float32, contiguous; x: the pooling's input (N, C, H, W), float32,
  // with 2 * OH <= H and 2 * OW <= W (2x2 windows, stride 2, no padding).
  PooledGradForm(Tensor grad_out, Tensor x) : grad_out_(std::move(grad_out)), x_(std::move(x)) {}
  void write_plain(void* plain) const override;
  const Tensor& grad_out() const { return grad_out_; }
  const Tensor& input() const { return x_; }
  // true when `t` is the pooling's input itself (its storage, offset 0, the same sizes): a
  // convolution's output whose activation gradient this is.
  bool pooled(const Tensor& t) const;

 private:
  Tensor grad_out_, x_;
};

// t's pooled-gradient form when t is the whole of its storage (float32, contiguous, offset 0): the
// 4-D tensor or an (N, C, S) view of it (a batch norm's); null otherwise.
const PooledGradForm* pooled_grad_form(const Tensor& t);

// What write_pooled_grad makes of the gradient, in the layout the pooling's input is held in:
// float32 as it is; float32 masked by a ReLU of that input (a fused float32 convolution's
// activation gradient: out > 0 ? g : 0); or masked by its ReLU / ReLU6 and rounded to bfloat16
// (conv_act_grad.cpp's values for the bf16 primitives).
enum class PooledGradOut { F32, F32Relu, Bf16Relu, Bf16Relu6 };
// Writes the gradient into dst, channel-blocked as `layout` (NHWC, or nChw16c for a multiple of 16
// channels; undef: the layout the pooling's input is held in), in `out`'s element type. false,
// nothing written, when the input is not held channel-blocked (then read it plain) or `layout` is
// none of those.
bool write_pooled_grad(const PooledGradForm& f, PooledGradOut out, void* dst,
                       dnnl::memory::format_tag layout = dnnl::memory::format_tag::undef);

// The pooling's two kernel slots (nn_pool.cpp registers them): the forward keeps its input instead
// of indices where it applies, the backward leaves a PooledGradForm.
bool max_pool2d_forward_keep_input(const Tensor& x, const kernels::Pool2dParams& p, const Tensor& out);
void max_pool2d_backward_from_input(const Tensor& grad_out, const Tensor& x, const kernels::Pool2dParams& p,
                                    const Tensor& grad_x);

}  // namespace ember::cpu
