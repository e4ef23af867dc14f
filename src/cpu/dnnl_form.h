// Activations that stay in oneDNN's layout between CPU ops (issue 24, "layouts that persist").
//
// Without autograd recording, a oneDNN convolution leaves its output in the blocked layout the
// primitive wrote (nChw16c on AVX-512) instead of reordering it to NCHW: the output tensor's storage
// holds a DnnlForm (ember/core/storage.h's StorageForm) and its plain bytes are written only when
// something reads them through data(). The next convolution takes the blocked values as its source
// (converting only the dtype where it multiplies in bfloat16) and max pooling pools them in place
// (nn_pool.cpp), so mnistnet's inference no longer writes and re-reads its two largest activations
// in NCHW. A float32 convolution's form holds exactly the values the plain tensor would; one that
// multiplies in bfloat16 (autocast) writes its output in bfloat16, as PyTorch's autocast returns it,
// and the plain tensor then holds those values widened.
//
// In training (Conv2dParams::keep_layout) a convolution holds its output too (NHWC or nChw16c,
// whatever its primitive wrote) -- at float32, or under autocast in bfloat16, its bf16-rounded
// result as PyTorch's autocast returns it -- and backward its input gradient (float32); batch norm
// (nn_norm_held.cpp: bf16 in, bf16 out), ReLU / ReLU6 / SiLU / Hardswish (activation.cpp), max
// pooling (nn_pool.cpp) and the residual add read and write that layout forward and backward, so a
// conv-BN-ReLU chain reorders to NCHW only where something else reads it (a flatten, the user), and
// under autocast the next convolution and the weight gradient take the bf16 values as they are. A
// held storage gives its plain block back to the allocator until it settles (storage.h).
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <initializer_list>

#include "ember/core/storage.h"
#include "ember/core/tensor.h"

namespace ember::cpu {

class DnnlForm final : public StorageForm {
 public:
  // `desc`: the layout and dtype the values are held in, in `buffer` (>= desc.get_size() bytes);
  // `plain`: the storage's own layout (NCHW, the tensor's dtype).
  DnnlForm(dnnl::memory::desc desc, dnnl::memory::desc plain, Storage buffer)
      : desc_(std::move(desc)), plain_(std::move(plain)), buffer_(std::move(buffer)) {}
  void write_plain(void* plain) const override;
  const dnnl::memory::desc& desc() const { return desc_; }
  void* data() const { return buffer_->data(); }
  dnnl::memory memory() const;

 private:
  dnnl::memory::desc desc_, plain_;
  Storage buffer_;
};

// The oneDNN form `t`'s values are held in, when `t` is the whole of its storage as the form
// describes it (offset 0, contiguous, the form's dims, float32); null otherwise (then t.data() is
// the way to its values, which settles any form).
const DnnlForm* dnnl_form_of(const Tensor& t);

// Leaves `out`'s values in `held` (memory in a buffer of `buffer`) instead of its plain bytes. `out`
// must be the whole of a storage no one else has read yet (a fresh kernel output).
void hold_in_form(const Tensor& out, const dnnl::memory& held, Storage buffer);

// `t` (a float32 NCHW tensor, the whole of its storage) made to hold `src`'s values (the same shape,
// contiguous float32) in `layout` and `type`, as a kernel would leave it, oneDNN's own reorder
// filling the form; t's plain bytes are left as they are (stale). For tests of the layouts this
// machine's kernels do not pick (NHWC bf16 is AMX's).
void hold_as(const Tensor& src, const Tensor& t, dnnl::memory::data_type type, dnnl::memory::format_tag layout);

// false when EMBER_PLAIN_LAYOUT=1 is set (read once) or after set_forms_enabled(false): every output
// is then written in NCHW as before (before/after runs of one build; the tests' reference).
bool forms_enabled();
void set_forms_enabled(bool on);

// An activation held channel-blocked, the layouts oneDNN's convolutions write on AVX-512: NHWC (one
// block of all C channels: AMX's bf16 layout) or nChw16c (blocks of 16, C a multiple of 16: without
// AMX), float32 -- or bfloat16, a convolution's output in training under autocast (its values are
// then those bf16 values, as PyTorch's autocast returns a bf16 convolution output). Viewed as
// N * C/V images of S pixels, each pixel V contiguous channels: value (n, c, s) is at
// data[((n * (C / V) + c / V) * S + s) * V + c % V]. Training's batch norm reads and writes it
// (nn_norm_held.cpp), so a convolution's output and input gradient stay in it.
struct ChannelBlocked {
  const DnnlForm* form = nullptr;
  int64_t N = 0, C = 0, S = 0, V = 0;
  bool bf16 = false;  // the values are bfloat16 (uint16_t); float32 otherwise
  dnnl::memory::format_tag layout = dnnl::memory::format_tag::undef;  // nhwc or nChw16c
  float* data() const { return static_cast<float*>(form->data()); }
  const void* raw() const { return form->data(); }
  bool same_layout(const ChannelBlocked& o) const { return form != nullptr && o.form != nullptr && form->desc() == o.form->desc(); }
  // The same layout in float32 (a bf16 activation's gradients are float32).
  dnnl::memory::desc f32_desc() const;
};
// t's channel-blocked form (float32 or bfloat16), when t is the whole of its storage (offset 0,
// contiguous, a float32 tensor) with its first two dims the form's N and C -- the 4-D tensor or an
// (N, C, S) view of it; form null otherwise.
ChannelBlocked channel_blocked(const Tensor& t);
// out is fresh, the whole of its storage, like's N * C * S float32 values in whatever shape: a
// kernel may make it hold its result in like's layout (hold_array).
bool can_hold(const Tensor& out, const ChannelBlocked& like);
// t's values (float32, like's N * C * S of them: the 4-D tensor or an (N, C, S) view, the whole of
// its storage) laid out as like's at float32 (like.f32_desc()): t's own array where it is held so,
// else reordered into `scratch` from its form or its plain bytes (one pass, as reading it plain
// would cost, but the consumer's output stays held). Null where t is not such a tensor.
const float* data_in_layout(const Tensor& t, const ChannelBlocked& like, Storage& scratch);
// The same, but t's bfloat16 array as it is where t is held in like's layout at bfloat16 (*bf16 set
// true): a residual that is the previous block's bf16 output.
const void* operand_in_layout(const Tensor& t, const ChannelBlocked& like, Storage& scratch, bool* bf16);
// The same for any float32 layout `want` (padding channels zeroed): t's float32 form's array where
// it is `want`, else t (held at float32 in another layout, or plain) reordered into scratch.
const float* f32_in_layout(const Tensor& t, const dnnl::memory::desc& want, Storage& scratch);

// For element-wise kernels on held float32 operands (training's activations and gradients stay in
// the layout their convolution wrote): the form every tensor of `ins` is held in -- one desc,
// float32, each of out's sizes, the whole of its storage -- when out is fresh (the whole of a
// storage without a form) and forms are on; null otherwise. `unpadded` also asks that the layout
// has no padding channels (kernels that map 0 to something else: hardsigmoid).
const DnnlForm* common_f32_form(const Tensor& out, std::initializer_list<const Tensor*> ins, bool unpadded = false);
// out made to hold the values of `desc` written into `buffer`.
void hold_array(const Tensor& out, const dnnl::memory::desc& desc, Storage buffer);
// Runs row(begin, end) over [0, n) in chunks, on the threads where n is large.
template <class Row>
void for_chunks(int64_t n, Row&& row) {
  constexpr int64_t kBlock = 16384;
  const int64_t blocks = (n + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (n > 32768)
  for (int64_t b = 0; b < blocks; ++b) row(b * kBlock, std::min(n, (b + 1) * kBlock));
}

// Element-wise ops on held activations, the result held too (false, nothing written, where they do
// not apply; the caller then runs its plain kernel). out must be a fresh tensor, the whole of its
// storage. add_held: out = a + b for
//  - both float32 held in one layout of any kind (training's NHWC / nChw16c activations, the sum of
//    a block input's two gradients): one pass over the arrays, out held in that layout;
//  - one float32 held, the other plain and contiguous or held at float32 in another layout: the
//    other reordered into the first's layout;
//  - both in nChw16c, float32 or bfloat16 (inference under autocast): out nChw16c float32 -- the
//    float32 sums the plain kernel makes (a bfloat16 value widens exactly).
// relu_held: out = a > 0 ? a : 0 in a's layout and dtype (nChw16c, or float32 in any layout).
bool add_held(const Tensor& a, const Tensor& b, const Tensor& out);
bool relu_held(const Tensor& a, const Tensor& out);
// grad_x = out > 0 ? g : 0 for g and out float32 held in one layout (a ReLU's backward in training
// between a batch norm and a convolution that keep it), grad_x held in it too.
bool relu_backward_held(const Tensor& g, const Tensor& out, const Tensor& grad_x);

// from -> to, the same values in another layout and/or dtype: the transpositions ember does faster
// than oneDNN 2.6's generic reorders (layout_nhwc.cpp), a same-layout float32 -> bfloat16
// conversion as one streaming pass, and oneDNN's reorder for everything else.
void reorder_into(dnnl::memory from, dnnl::memory to, dnnl::stream& s);

}  // namespace ember::cpu
