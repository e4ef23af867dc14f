// oneDNN layouts held between CPU ops (dnnl_form.h) and the reorders between layouts.
#include "cpu/dnnl_form.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "core/tensor_raw.h"
#include "cpu/convert_bf16.h"
#include "cpu/dnnl_util.h"
#include "cpu/layout_nhwc.h"
#include "cpu/pool_grad.h"
#include "cpu/rows_f32.h"
#include "ember/core/dtype.h"

namespace ember::cpu {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

dnnl::memory DnnlForm::memory() const { return dnnl::memory(desc_, dnnl_cpu_engine(), buffer_->data()); }

void DnnlForm::write_plain(void* plain) const {
  dnnl_call("reorder (a held layout to NCHW)", [&] {
    dnnl::stream s(dnnl_cpu_engine());
    reorder_into(memory(), dnnl::memory(plain_, dnnl_cpu_engine(), plain), s);
    s.wait();
  });
}

const DnnlForm* dnnl_form_of(const Tensor& t) {
  if (!t.defined() || t.dtype() != DType::Float32 || t.storage_offset() != 0 || !t.is_contiguous()) return nullptr;
  const StorageForm* f = t.storage()->form();
  if (f == nullptr) return nullptr;
  const auto* form = dynamic_cast<const DnnlForm*>(f);
  if (form == nullptr || form->desc().data.ndims != t.dim()) return nullptr;
  for (int i = 0; i < t.dim(); ++i)
    if (form->desc().data.dims[i] != t.size(i)) return nullptr;
  return form;
}

ChannelBlocked channel_blocked(const Tensor& t) {
  if (!t.defined() || t.dtype() != DType::Float32 || t.dim() < 2 || t.storage_offset() != 0 || !t.is_contiguous())
    return {};
  const auto* form = dynamic_cast<const DnnlForm*>(t.storage()->form());
  if (form == nullptr) return {};
  const memory::desc& d = form->desc();
  const dt type = d.data_type();
  if (d.data.ndims != 4 || (type != dt::f32 && type != dt::bf16)) return {};
  const memory::dims dims(d.data.dims, d.data.dims + 4);
  const int64_t N = dims[0], C = dims[1], S = dims[2] * dims[3];
  if (t.size(0) != N || t.size(1) != C || t.numel() != N * C * S) return {};
  const bool bf16 = type == dt::bf16;
  if (d == memory::desc(dims, type, tag::nhwc)) return {form, N, C, S, C, bf16, tag::nhwc};
  if (C % 16 == 0 && d == memory::desc(dims, type, tag::nChw16c)) return {form, N, C, S, 16, bf16, tag::nChw16c};
  return {};
}

memory::desc ChannelBlocked::f32_desc() const {
  const memory::desc& d = form->desc();
  return memory::desc(memory::dims(d.data.dims, d.data.dims + 4), dt::f32, layout);
}

bool can_hold(const Tensor& out, const ChannelBlocked& like) {
  return out.dtype() == DType::Float32 && out.storage_offset() == 0 && out.is_contiguous() &&
         out.storage()->form() == nullptr && out.numel() == like.N * like.C * like.S &&
         out.storage()->nbytes() == size_t(out.numel()) * sizeof(float);
}

const float* f32_in_layout(const Tensor& t, const memory::desc& want, Storage& scratch) {
  const memory::dims dims(want.data.dims, want.data.dims + want.data.ndims);
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  if (!t.defined() || t.dtype() != DType::Float32 || want.data_type() != dt::f32 || dims.size() != 4 ||
      t.numel() != count)
    return nullptr;
  // t's own float32 form, when t is the whole of its storage (any view shape of it).
  const auto* form = t.storage_offset() == 0 && t.is_contiguous() ? dynamic_cast<const DnnlForm*>(t.storage()->form())
                                                                   : nullptr;
  if (form != nullptr && form->desc().data_type() != dt::f32) form = nullptr;
  if (form != nullptr && form->desc() == want) return static_cast<const float*>(form->data());
  // A max pooling's gradient not yet written (pool_grad.h), wanted channel-blocked (a batch norm's
  // backward under the pooling): written there, in one pass.
  if (const PooledGradForm* pf = pooled_grad_form(t); pf != nullptr) {
    for (tag layout : {tag::nhwc, tag::nChw16c})
      if (want == memory::desc(dims, dt::f32, layout)) {
        scratch = std::make_shared<StorageImpl>(want.get_size(), Device::cpu());
        if (write_pooled_grad(*pf, PooledGradOut::F32, scratch->data(), layout))
          return static_cast<const float*>(scratch->data());
      }
  }
  scratch = std::make_shared<StorageImpl>(want.get_size(), Device::cpu());
  if (want.get_size() != size_t(count) * sizeof(float))  // padding channels: 0, as a convolution leaves them
    std::memset(scratch->data(), 0, want.get_size());
  dnnl_call("reorder (into a held layout)", [&] {
    dnnl::stream s(dnnl_cpu_engine());
    memory dst(want, dnnl_cpu_engine(), scratch->data());
    if (form != nullptr) {
      reorder_into(form->memory(), dst, s);
    } else {
      const Tensor c = core::contiguous(t);  // settles any other form
      reorder_into(memory(memory::desc(dims, dt::f32, tag::nchw), dnnl_cpu_engine(), c.raw_data()), dst, s);
    }
    s.wait();
  });
  return static_cast<const float*>(scratch->data());
}

const float* data_in_layout(const Tensor& t, const ChannelBlocked& like, Storage& scratch) {
  if (!t.defined() || t.dim() < 2 || t.size(0) != like.N || t.size(1) != like.C) return nullptr;
  return f32_in_layout(t, like.f32_desc(), scratch);
}

const void* operand_in_layout(const Tensor& t, const ChannelBlocked& like, Storage& scratch, bool* bf16) {
  *bf16 = false;
  if (like.bf16 && t.defined() && t.dim() >= 2 && t.size(0) == like.N && t.size(1) == like.C) {
    const ChannelBlocked o = channel_blocked(t);
    if (o.form != nullptr && o.bf16 && o.same_layout(like)) {
      *bf16 = true;
      return o.raw();
    }
  }
  return data_in_layout(t, like, scratch);
}

void hold_in_form(const Tensor& out, const dnnl::memory& held, Storage buffer) {
  const memory::desc d = held.get_desc();
  const memory::dims dims(d.data.dims, d.data.dims + d.data.ndims);
  const tag plain = dims.size() == 4 ? tag::nchw : dims.size() == 2 ? tag::ab : tag::a;
  out.storage()->set_form(std::make_unique<DnnlForm>(d, memory::desc(dims, dt::f32, plain), std::move(buffer)));
}

namespace {
std::atomic<bool>& forms_flag() {
  static std::atomic<bool> on{[] {
    const char* v = std::getenv("EMBER_PLAIN_LAYOUT");
    return v == nullptr || std::strcmp(v, "1") != 0;
  }()};
  return on;
}
}  // namespace

void hold_as(const Tensor& src, const Tensor& t, dt type, tag layout) {
  const memory::dims d(t.sizes().begin(), t.sizes().end());
  const memory::desc held(d, type, layout);
  Storage buffer = std::make_shared<StorageImpl>(held.get_size(), Device::cpu());
  dnnl_call("reorder (hold_as)", [&] {
    memory plain(memory::desc(d, dt::f32, tag::nchw), dnnl_cpu_engine(), src.raw_data());
    memory m(held, dnnl_cpu_engine(), buffer->data());
    dnnl::stream s(dnnl_cpu_engine());
    dnnl::reorder(plain, m).execute(s, plain, m);
    s.wait();
    hold_in_form(t, m, buffer);
  });
}

bool forms_enabled() { return forms_flag().load(std::memory_order_relaxed); }
void set_forms_enabled(bool on) { forms_flag().store(on, std::memory_order_relaxed); }

namespace {
// The held element-wise ops run the plain kernels' float32 rows (rows_f32.h) over the held arrays,
// on the threads in blocks (for_chunks).
void add_f32(const float* x, const float* y, float* o, int64_t n) {
  for_chunks(n, [&](int64_t b, int64_t e) { add_row_f32(x + b, y + b, o + b, e - b); });
}

// A fresh float32 tensor that is the whole of its storage, with nothing held yet.
bool fresh_whole(const Tensor& out) {
  return out.dtype() == DType::Float32 && out.storage_offset() == 0 && out.is_contiguous() &&
         out.storage()->form() == nullptr && out.storage()->nbytes() == size_t(out.numel()) * sizeof(float);
}
// t's held nChw16c form (float32 or bfloat16) when t has out's shape; null otherwise.
const DnnlForm* blocked_form(const Tensor& t, const Tensor& out) {
  if (t.dim() != 4 || t.sizes() != out.sizes()) return nullptr;
  const DnnlForm* f = dnnl_form_of(t);
  if (f == nullptr) return nullptr;
  const memory::dims d(f->desc().data.dims, f->desc().data.dims + 4);
  const dt type = f->desc().data_type();
  if ((type != dt::f32 && type != dt::bf16) || f->desc() != memory::desc(d, type, tag::nChw16c)) return nullptr;
  return f;
}
inline float widen(const void* p, dt type, int64_t i) {
  return type == dt::f32 ? static_cast<const float*>(p)[i]
                         : bf16_to_float(static_cast<const uint16_t*>(p)[i]);
}
}  // namespace

const DnnlForm* common_f32_form(const Tensor& out, std::initializer_list<const Tensor*> ins, bool unpadded) {
  if (!forms_enabled() || !fresh_whole(out) || ins.size() == 0) return nullptr;
  const DnnlForm* common = nullptr;
  for (const Tensor* t : ins) {
    if (t->sizes() != out.sizes()) return nullptr;
    const DnnlForm* f = dnnl_form_of(*t);
    if (f == nullptr || f->desc().data_type() != dt::f32 || (common != nullptr && f->desc() != common->desc()))
      return nullptr;
    common = f;
  }
  if (unpadded && common->desc().get_size() != size_t(out.numel()) * sizeof(float)) return nullptr;
  return common;
}

void hold_array(const Tensor& out, const memory::desc& desc, Storage buffer) {
  dnnl::memory held(desc, dnnl_cpu_engine(), buffer->data());  // before the move empties buffer
  hold_in_form(out, held, std::move(buffer));
}

bool add_held(const Tensor& a, const Tensor& b, const Tensor& out) {
  if (!forms_enabled() || !fresh_whole(out) || out.dim() != 4) return false;
  // Float32 with one operand held (training's NHWC / nChw16c activations and gradients): the other
  // -- held in the same layout, in another (two gradients from convolutions whose primitives chose
  // differently), or plain (a residual block's tail without an activation, whose skip input came
  // from a pooling) -- read in the first one's layout, reordered into it where it is not (one pass,
  // as reading the first plain would cost), and the sum stays held. A broadcast operand (an
  // expanded bias) and a bfloat16 form (inference, below) are not taken here.
  if (a.sizes() == out.sizes() && b.sizes() == out.sizes() && a.dtype() == DType::Float32 &&
      b.dtype() == DType::Float32 && a.is_contiguous() && b.is_contiguous()) {
    auto f32_form = [](const Tensor& t) {
      const DnnlForm* f = dnnl_form_of(t);
      return f != nullptr && f->desc().data_type() == dt::f32 ? f : nullptr;
    };
    const DnnlForm* fh = f32_form(a);
    const Tensor* other = &b;
    if (fh == nullptr) {
      fh = f32_form(b);
      other = &a;
    }
    if (fh != nullptr && (other->storage()->form() == nullptr || f32_form(*other) != nullptr)) {
      const memory::desc od = fh->desc();
      Storage scratch;
      const float* y = f32_in_layout(*other, od, scratch);
      if (y != nullptr) {
        Storage buffer = std::make_shared<StorageImpl>(od.get_size(), Device::cpu());
        // a + b or b + a: float addition commutes, the same bits either way
        add_f32(static_cast<const float*>(fh->data()), y, static_cast<float*>(buffer->data()),
                int64_t(od.get_size() / sizeof(float)));
        hold_array(out, od, std::move(buffer));
        return true;
      }
    }
  }
  const DnnlForm* fa = blocked_form(a, out);
  const DnnlForm* fb = fa == nullptr ? nullptr : blocked_form(b, out);
  if (fb == nullptr) return false;
  const memory::dims d(out.sizes().begin(), out.sizes().end());
  const memory::desc od(d, dt::f32, tag::nChw16c);
  Storage buffer = std::make_shared<StorageImpl>(od.get_size(), Device::cpu());
  const int64_t n = int64_t(od.get_size() / sizeof(float));  // the padding channels too (0 + 0)
  const dt ta = fa->desc().data_type(), tb = fb->desc().data_type();
  const void *pa = fa->data(), *pb = fb->data();
  float* po = static_cast<float*>(buffer->data());
  if (ta == dt::f32 && tb == dt::f32) {
    const float* x = static_cast<const float*>(pa);
    const float* y = static_cast<const float*>(pb);
    add_f32(x, y, po, n);
  } else {
#pragma omp parallel for schedule(static) if (n > 32768)
    for (int64_t i = 0; i < n; ++i) po[i] = widen(pa, ta, i) + widen(pb, tb, i);
  }
  hold_in_form(out, dnnl::memory(od, dnnl_cpu_engine(), buffer->data()), buffer);
  return true;
}

bool relu_held(const Tensor& a, const Tensor& out) {
  if (!forms_enabled() || !fresh_whole(out) || out.dim() != 4) return false;
  const DnnlForm* fa = blocked_form(a, out);
  if (fa == nullptr && a.sizes() == out.sizes()) {  // float32 in any layout (training's NHWC too)
    fa = dnnl_form_of(a);
    if (fa != nullptr && fa->desc().data_type() != dt::f32) fa = nullptr;
  }
  if (fa == nullptr) return false;
  const memory::desc od = fa->desc();
  Storage buffer = std::make_shared<StorageImpl>(od.get_size(), Device::cpu());
  if (od.data_type() == dt::f32) {
    const int64_t n = int64_t(od.get_size() / sizeof(float));
    const float* x = static_cast<const float*>(fa->data());
    float* o = static_cast<float*>(buffer->data());
    for_chunks(n, [&](int64_t b, int64_t e) { relu_row_f32(x + b, o + b, e - b); });
  } else {  // bfloat16: the same comparison on the widened value, the bits kept or zeroed
    const int64_t n = int64_t(od.get_size() / sizeof(uint16_t));
    const uint16_t* x = static_cast<const uint16_t*>(fa->data());
    uint16_t* o = static_cast<uint16_t*>(buffer->data());
#pragma omp parallel for schedule(static) if (n > 32768)
    for (int64_t i = 0; i < n; ++i) o[i] = bf16_to_float(x[i]) > 0.f ? x[i] : uint16_t(0);
  }
  hold_in_form(out, dnnl::memory(od, dnnl_cpu_engine(), buffer->data()), buffer);
  return true;
}

bool relu_backward_held(const Tensor& g, const Tensor& out, const Tensor& grad_x) {
  const DnnlForm* fo = common_f32_form(grad_x, {&g, &out});
  if (fo == nullptr) return false;
  Storage buffer = std::make_shared<StorageImpl>(fo->desc().get_size(), Device::cpu());
  const int64_t n = int64_t(fo->desc().get_size() / sizeof(float));  // padding too: 0 stays 0
  const float* pg = static_cast<const float*>(dnnl_form_of(g)->data());
  const float* po = static_cast<const float*>(fo->data());
  float* px = static_cast<float*>(buffer->data());
  for_chunks(n, [&](int64_t b, int64_t e) { relu_backward_row_f32(pg + b, po + b, px + b, e - b); });
  hold_array(grad_x, fo->desc(), std::move(buffer));
  return true;
}

// oneDNN 2.6's reorder for the conversions below is its generic jit:uni kernel, which moved
// mnistnet's 64x64x24x24 conv2 output in 2.2 ms on the 2-core AMX machine (ONEDNN_VERBOSE), 3x the
// time of the f32 path's blocked nChw16c reorders, and 42 ms for NCHW f32 -> nChw16c bf16 of
// mnistnet's bf16 inference step at batch 256 on the Zen 5 -- more than the convolution it feeds.
void reorder_into(memory from, memory to, dnnl::stream& s) {
  const memory::desc fd = from.get_desc(), td = to.get_desc();
  if (fd.data.ndims == 4 && td.data.ndims == 4) {
    const memory::dims dims(fd.data.dims, fd.data.dims + 4);
    const int64_t n = dims[0], c = dims[1], hw = dims[2] * dims[3];
    // NCHW f32 -> NHWC bf16 (x and grad_out into the AMX kernels), NHWC f32 -> NCHW f32 (their outputs back).
    if (fd == memory::desc(dims, dt::f32, tag::nchw) && td == memory::desc(dims, dt::bf16, tag::nhwc)) {
      s.wait();
      return nchw_f32_to_nhwc_bf16(static_cast<const float*>(from.get_data_handle()),
                                   static_cast<uint16_t*>(to.get_data_handle()), n, c, hw);
    }
    if (fd == memory::desc(dims, dt::f32, tag::nhwc) && td == memory::desc(dims, dt::f32, tag::nchw)) {
      s.wait();
      return nhwc_to_nchw_f32(static_cast<const float*>(from.get_data_handle()),
                              static_cast<float*>(to.get_data_handle()), n, c, hw);
    }
    // A plain float32 gradient into a held float32 layout (a pooling's input gradient into the batch
    // norm before it): oneDNN 2.6's jit:blk reorder took 40 ms a step for resnet18's 32x64x112x112
    // stem gradient at 224 px (ONEDNN_VERBOSE, Zen 5), 6% of the bf16 training step.
    if (fd == memory::desc(dims, dt::f32, tag::nchw) && td == memory::desc(dims, dt::f32, tag::nhwc)) {
      s.wait();
      return nchw_to_nhwc_f32(static_cast<const float*>(from.get_data_handle()),
                              static_cast<float*>(to.get_data_handle()), n, c, hw);
    }
    if (c % 16 == 0 && fd == memory::desc(dims, dt::f32, tag::nchw) && td == memory::desc(dims, dt::f32, tag::nChw16c)) {
      s.wait();
      return nchw_to_nhwc_f32(static_cast<const float*>(from.get_data_handle()),
                              static_cast<float*>(to.get_data_handle()), n * c / 16, 16, hw);
    }
    // nChw16c (aBcd16b, oneDNN's blocked layout on AVX-512 without AMX) is NHWC within each group
    // of 16 channels: (N, C/16, 16, HW) <-> (N, C/16, HW, 16) is the transposition above over N*C/16
    // images of 16 channels.
    if (c % 16 == 0 && fd == memory::desc(dims, dt::f32, tag::nchw) &&
        td == memory::desc(dims, dt::bf16, tag::nChw16c)) {
      s.wait();
      return nchw_f32_to_nhwc_bf16(static_cast<const float*>(from.get_data_handle()),
                                   static_cast<uint16_t*>(to.get_data_handle()), n * c / 16, 16, hw);
    }
    if (c % 16 == 0 && fd == memory::desc(dims, dt::f32, tag::nChw16c) &&
        td == memory::desc(dims, dt::f32, tag::nchw)) {
      s.wait();
      return nhwc_to_nchw_f32(static_cast<const float*>(from.get_data_handle()),
                              static_cast<float*>(to.get_data_handle()), n * c / 16, 16, hw);
    }
    // A bf16 activation held in nChw16c (AVX512-BF16) or NHWC (AMX) back to NCHW f32: widened in its
    // layout (exact), then transposed as above.
    const bool blocked16 = c % 16 == 0 && fd == memory::desc(dims, dt::bf16, tag::nChw16c);
    if ((blocked16 || fd == memory::desc(dims, dt::bf16, tag::nhwc)) && td == memory::desc(dims, dt::f32, tag::nchw)) {
      s.wait();
      const int64_t count = n * c * hw;
      Storage wide = std::make_shared<StorageImpl>(size_t(count) * sizeof(float), Device::cpu());
      bf16_to_f32_array(static_cast<const uint16_t*>(from.get_data_handle()), static_cast<float*>(wide->data()), count);
      return blocked16 ? nhwc_to_nchw_f32(static_cast<const float*>(wide->data()),
                                          static_cast<float*>(to.get_data_handle()), n * c / 16, 16, hw)
                       : nhwc_to_nchw_f32(static_cast<const float*>(wide->data()),
                                          static_cast<float*>(to.get_data_handle()), n, c, hw);
    }
    // A held f32 activation into a bf16 convolution that wants the same layout, or (training under
    // autocast) a bf16 one into a float32 depthwise convolution: one streaming conversion of the
    // array, the padding channels (zeros) too. oneDNN's jit:uni reorder took 4x as long for the
    // latter (mobilenet_v2 bf16 training, 224 px, ONEDNN_VERBOSE, Zen 5).
    for (const tag t : {tag::nChw16c, tag::nhwc}) {
      if (fd == memory::desc(dims, dt::f32, t) && td == memory::desc(dims, dt::bf16, t)) {
        s.wait();
        return f32_to_bf16_array(static_cast<const float*>(from.get_data_handle()),
                                 static_cast<uint16_t*>(to.get_data_handle()), int64_t(fd.get_size() / sizeof(float)));
      }
      if (fd == memory::desc(dims, dt::bf16, t) && td == memory::desc(dims, dt::f32, t)) {
        s.wait();
        return bf16_to_f32_array(static_cast<const uint16_t*>(from.get_data_handle()),
                                 static_cast<float*>(to.get_data_handle()), int64_t(fd.get_size() / sizeof(uint16_t)));
      }
    }
  }
  dnnl::reorder(from, to).execute(s, from, to);
}

}  // namespace ember::cpu
