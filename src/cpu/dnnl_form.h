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
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

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

// Element-wise ops on held activations, the result held too (false, nothing written, where they do
// not apply; the caller then runs its plain kernel). out must be a fresh tensor, the whole of its
// storage. add_held: out = a + b for a and b held in the same nChw16c layout (float32 or bfloat16
// each), out held in nChw16c float32 -- the float32 sums the plain kernel makes (a bfloat16 value
// widens exactly); a residual block's add. relu_held: out = a > 0 ? a : 0 in a's layout and dtype.
bool add_held(const Tensor& a, const Tensor& b, const Tensor& out);
bool relu_held(const Tensor& a, const Tensor& out);

// from -> to, the same values in another layout and/or dtype: the transpositions ember does faster
// than oneDNN 2.6's generic reorders (layout_nhwc.cpp), a same-layout float32 -> bfloat16
// conversion as one streaming pass, and oneDNN's reorder for everything else.
void reorder_into(dnnl::memory from, dnnl::memory to, dnnl::stream& s);

}  // namespace ember::cpu
