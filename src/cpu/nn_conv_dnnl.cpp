// conv2d on the CPU through oneDNN 2.6 (v2 API): direct convolution primitives for forward,
// backward-data and backward-weights, float32. Tensors stay NCHW (OIHW / GOIHW weights) outside;
// each primitive is created with format `any`, so oneDNN picks its blocked layout (nChw16c on
// AVX-512) and we reorder in and out around it — the reorders cost far less than the im2col
// buffers they replace, and the whole layer is one OpenMP region inside oneDNN instead of one
// small GEMM per image.
//
// Primitive descriptors and primitives are built once per geometry and cached (creating a
// descriptor walks oneDNN's implementation list: tens of microseconds). A geometry oneDNN
// rejects is remembered and served by the im2col kernels. float64 goes to the reference kernels.
//
// A cached primitive is shared by every host thread that convolves that geometry, so it is made
// with scratchpad_mode::user and each call passes a scratchpad of its own. With oneDNN's default
// (library) mode, Debian's libdnnl (built with DNNL_ENABLE_CONCURRENT_EXEC) gives each primitive
// one scratchpad, and two threads running it at once shared it: conv1's weight gradient in lenet5
// came out 0.026 off, or both threads hung in the kernel's barrier (tests/unit/test_cpu_concurrency.cpp).
//
// bfloat16 (p.compute, set under ember::autocast): the same primitives built with bf16
// multiplicands and float32 results — forward src/weights bf16, dst f32 (bf16 where the output is
// held, and always in training: round_output); backward-data diff_dst and
// weights bf16, diff_src f32; backward-weights src and diff_dst bf16, diff_weights f32, so the
// weight gradient is summed over the batch in f32 (AMX / AVX512-BF16 kernels on this hardware;
// taking the f32 kernel on the bf16-rounded values for fewer than 16 input channels was tried and
// measured 13% slower on lenet5's bf16 training on the quiet machine, docs/benchmarks.md). The
// f32 -> bf16 conversion of the activations rides on the layout
// change the f32 path does anyway (for AMX's channels-last operands, layout_nhwc.cpp's
// transposition); a geometry oneDNN rejects in bf16 runs im2col on the bf16-rounded values.
//
// Fused epilogues (conv2d_forward_fused, for nn::functional::conv2d_activation): the same forward
// primitive with ReLU / ReLU6 / SiLU / Hardswish as an eltwise post-op, applied to the float32 result
// (after the bias) before oneDNN writes it, so the activation costs no pass of its own over the
// output; cached under its own key, and declined (false) where oneDNN has no primitive.
#include <oneapi/dnnl/dnnl.hpp>

#include <array>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "cpu/convert_bf16.h"
#include "cpu/dnnl_form.h"
#include "cpu/dnnl_util.h"
#include "cpu/layout_nhwc.h"
#include "cpu/nn_conv.h"
#include "ember/core/settings.h"
#include "ember/core/storage.h"
#include "cpu/reference/nn.h"

namespace ember::cpu {

using kernels::Conv2dParams;

namespace {

using dnnl::memory;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

dnnl::engine& cpu_engine() { return dnnl_cpu_engine(); }

// Everything that decides a primitive: the three shapes and the parameters.
struct ConvKey {
  std::array<int64_t, 16> v;
  bool operator<(const ConvKey& o) const { return v < o.v; }
};
ConvKey make_key(int kind, const Shape& x, const Shape& w, const Shape& out, const Conv2dParams& p,
                 bool bias) {
  if (p.compute == DType::BFloat16) kind += 3;
  return {{kind, x[0], x[1], x[2], x[3], w[0], w[2], w[3], out[2], out[3], p.stride_h, p.stride_w,
           p.pad_h * 1000003 + p.pad_w, (p.dilation_h - 1) * 1000003 + (p.dilation_w - 1), p.groups,
           bias ? 1 : 0}};
}

dt dnnl_type(DType t) { return t == DType::BFloat16 ? dt::bf16 : dt::f32; }

// The primitive's data types for x / weight / out (or their gradients): all f32, or for bf16
// compute the multiplicands bf16 and the one result f32.
struct ConvTypes {
  dt x = dt::f32, w = dt::f32, out = dt::f32;
};
enum class ConvKind { Forward, BackwardData, BackwardWeights };
ConvTypes conv_types(ConvKind k, const Conv2dParams& p) {
  if (p.compute != DType::BFloat16) return {};
  switch (k) {
    case ConvKind::Forward: return {dt::bf16, dt::bf16, dt::f32};
    case ConvKind::BackwardData: return {dt::f32, dt::bf16, dt::bf16};
    case ConvKind::BackwardWeights: return {dt::bf16, dt::f32, dt::bf16};
  }
  return {};
}

struct ConvDescs {
  memory::desc x, w, b, out;  // the NCHW / (G)OIHW / X layouts (and dtypes) our tensors have
  memory::desc x_any, w_any, out_any;
  memory::dims strides, dilates, pad_l, pad_r;
};
// `user`: our tensors' dtypes for x, w, out; `prim`: the primitive's.
ConvDescs make_descs(const Shape& x, const Shape& w, const Shape& out, const Conv2dParams& p, ConvTypes user,
                     ConvTypes prim) {
  ConvDescs d;
  const memory::dims xd{x[0], x[1], x[2], x[3]}, od{out[0], out[1], out[2], out[3]};
  const memory::dims wd = p.groups == 1 ? memory::dims{w[0], w[1], w[2], w[3]}
                                        : memory::dims{p.groups, w[0] / p.groups, w[1], w[2], w[3]};
  d.x = memory::desc(xd, user.x, tag::nchw);
  d.out = memory::desc(od, user.out, tag::nchw);
  d.w = memory::desc(wd, user.w, p.groups == 1 ? tag::oihw : tag::goihw);
  d.b = memory::desc({w[0]}, dt::f32, tag::x);
  d.x_any = memory::desc(xd, prim.x, tag::any);
  d.out_any = memory::desc(od, prim.out, tag::any);
  d.w_any = memory::desc(wd, prim.w, tag::any);
  d.strides = {p.stride_h, p.stride_w};
  d.dilates = {p.dilation_h - 1, p.dilation_w - 1};  // oneDNN counts the gaps, 0 = dense
  d.pad_l = {p.pad_h, p.pad_w};
  // Right padding so that oneDNN's output size equals ours (which floors like PyTorch).
  d.pad_r = {(out[2] - 1) * p.stride_h + (w[2] - 1) * p.dilation_h + 1 - x[2] - p.pad_h,
             (out[3] - 1) * p.stride_w + (w[3] - 1) * p.dilation_w + 1 - x[3] - p.pad_w};
  return d;
}
ConvTypes user_types(const Tensor& x, const Tensor& w, const Tensor& out) {
  return {dnnl_type(x.dtype()), dnnl_type(w.dtype()), dnnl_type(out.dtype())};
}
// The forward descriptors a backward primitive takes as its hint: bf16 throughout for bf16 compute.
ConvDescs hint_descs(const Shape& x, const Shape& w, const Shape& out, const Conv2dParams& p) {
  const ConvTypes t = p.compute == DType::BFloat16 ? ConvTypes{dt::bf16, dt::bf16, dt::bf16} : ConvTypes{};
  return make_descs(x, w, out, p, t, t);
}

// Primitive attributes for a cached primitive: the caller provides the scratchpad (see the top).
dnnl::primitive_attr user_scratchpad_attr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

// The weight gradient of a float32 3x3 / stride 1 convolution with 16 or more input and output
// channels through Winograd F(4x4, 3x3) (oneDNN's jit_wino_4x3, AVX-512): the same sums with 2.25x
// fewer multiplies. mnistnet's conv2 (32 -> 64, 26x26, batch 64; Zen 4, 2 threads, ONEDNN_VERBOSE,
// 2026-12-03) 8.0 -> 4.5 ms; resnet18's 3x3 layers at 112 px (batch 32) 1.5-2x, 216 -> 144 ms a
// step; its 1 -> 32 conv1 took 2.0 ms against 0.2 direct, hence the channel floor. Only the weight
// gradient: Winograd's forward and input gradient were as fast (4.5 and 5.7 ms against 7.1 and 7.3)
// but move the activations by float32-rounding amounts that, through ReLU masks and max-pooling
// choices, moved resnet34's first-layer gradients 1.5e-3 from PyTorch's float64 (the golden
// tolerance is 1e-5; PyTorch's own float32 is 8e-7); the weight gradient feeds nothing else in the
// step and stays within the golden tolerances (tests/unit/test_conv_winograd.cpp bounds it against
// float64). Not under ember::deterministic() (im2col there); EMBER_CONV_WINOGRAD=0 turns it off.
// bfloat16 has no Winograd kernel in oneDNN 2.6.
constexpr int64_t kMinWinogradChannels = 16;
bool winograd_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("EMBER_CONV_WINOGRAD");
    return e == nullptr || std::string_view(e) != "0";
  }();
  return on;
}
dnnl::algorithm conv_algorithm(const ConvDescs& d) {
  const memory::dims w = d.w_any.dims();
  const bool f32 = d.x_any.data_type() == dt::f32 && d.w_any.data_type() == dt::f32;
  const bool fits = w.size() == 4 && w[2] == 3 && w[3] == 3 && w[0] >= kMinWinogradChannels &&
                    w[1] >= kMinWinogradChannels && d.strides == memory::dims{1, 1} && d.dilates == memory::dims{0, 0};
  return f32 && fits && winograd_enabled() && !deterministic() ? dnnl::algorithm::convolution_winograd
                                                               : dnnl::algorithm::convolution_direct;
}

dnnl::convolution_forward::primitive_desc forward_pd(const ConvDescs& d, bool bias,
                                                     const dnnl::primitive_attr& attr = {}) {
  using cf = dnnl::convolution_forward;
  auto desc = bias ? cf::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                              d.x_any, d.w_any, d.b, d.out_any, d.strides, d.dilates, d.pad_l, d.pad_r)
                   : cf::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                              d.x_any, d.w_any, d.out_any, d.strides, d.dilates, d.pad_l, d.pad_r);
  return cf::primitive_desc(desc, attr, cpu_engine());
}

// Builds the weight-gradient primitive descriptor with make(alg): Winograd where conv_algorithm picks
// it and oneDNN has it, else direct.
template <class Make>
auto backward_weights_pd(const ConvDescs& d, Make&& make) {
  if (conv_algorithm(d) == dnnl::algorithm::convolution_winograd) {
    try {
      return make(dnnl::algorithm::convolution_winograd);
    } catch (const dnnl::error&) {
      // the direct one below
    }
  }
  return make(dnnl::algorithm::convolution_direct);
}

// One cached plan: the primitive and the layouts it wants for its three tensors.
struct ConvPlan {
  dnnl::primitive prim;
  memory::desc a, b, c;  // forward: x, w, out; backward-data: grad_out, w, grad_x;
                         // backward-weights: grad_out, x, grad_w
  memory::desc scratchpad;  // what one call needs (empty when nothing)
};

// Returns the cached plan for `key`, building it with `build` on first use; nullopt when oneDNN
// has no implementation for it (remembered too).
template <class Build>
const ConvPlan* cached_plan(const ConvKey& key, Build&& build) {
  static std::mutex mu;
  static std::map<ConvKey, std::optional<ConvPlan>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it == cache.end()) {
    std::optional<ConvPlan> plan;
    try {
      plan = build();
    } catch (const dnnl::error&) {
      plan.reset();  // "could not create a primitive descriptor": not supported, use im2col
    }
    it = cache.emplace(key, std::move(plan)).first;
  }
  return it->second ? &*it->second : nullptr;
}

// A memory in layout `want` holding `user`'s data: `user` itself when the layouts agree, else a
// reordered copy (when `copy_in`; an uninitialised buffer otherwise, for outputs). The copy lives
// in a storage block from ember's caching allocator (kept alive in `keep`), so the same large blocked
// buffers are reused every step instead of being mmap'ed, page-faulted and unmapped each call.
memory in_layout(memory user, const memory::desc& want, dnnl::stream& s, bool copy_in,
                 std::vector<Storage>& keep) {
  if (user.get_desc() == want) return user;
  const size_t bytes = (want.get_size() + sizeof(float) - 1) / sizeof(float) * sizeof(float);
  keep.push_back(std::make_shared<StorageImpl>(bytes, Device::cpu()));
  memory m(want, cpu_engine(), keep.back()->data());
  if (copy_in) reorder_into(user, m, s);
  return m;
}

// bfloat16 compute converts the same float32 tensor twice: grad_out for the backward-data and
// again for the backward-weights primitive, x for the forward and again for the weight gradient.
// The last few conversions stay here (per thread, keyed by the storage, its version, the view and
// the layout wanted), so the second primitive takes the first one's copy: in mnistnet's conv2
// that saves a 64x64x24x24 and a 64x32x26x26 f32 -> bf16 reorder per step. A storage written
// since (its version moved) or freed (the weak_ptr expired) never matches.
struct Converted {
  std::weak_ptr<StorageImpl> owner;
  const StorageImpl* key = nullptr;
  uint64_t version = 0;
  int64_t offset = 0;
  memory::desc want;
  Storage copy;
};
constexpr size_t kConvertedKept = 8;  // a few conv layers' x and grad_out

memory converted_in_layout(const Tensor& t, memory user, const memory::desc& want, dnnl::stream& s,
                           std::vector<Storage>& keep) {
  if (user.get_desc() == want) return user;
  thread_local std::deque<Converted> recent;
  const Storage& st = t.storage();
  for (const Converted& e : recent)
    if (e.key == st.get() && e.version == st->version() && e.offset == t.storage_offset() && e.want == want &&
        e.owner.lock() == st) {
      keep.push_back(e.copy);
      return memory(want, cpu_engine(), e.copy->data());
    }
  memory m = in_layout(user, want, s, true, keep);
  recent.push_front({st, st.get(), st->version(), t.storage_offset(), want, keep.back()});
  if (recent.size() > kConvertedKept) recent.pop_back();
  return m;
}

// x's data in layout `want`: taken from the layout it is held in when the previous op left it
// there (dnnl_form.h; as it is when that is `want`), else from its plain bytes -- for a float32 ->
// bfloat16 conversion through converted_in_layout.
memory input_in_layout(const Tensor& t, const memory::desc& plain, const memory::desc& want, dnnl::stream& s,
                       std::vector<Storage>& keep) {
  if (const DnnlForm* form = dnnl_form_of(t)) {
    // A held activation or gradient converts twice too (forward and weight gradient; backward-data
    // and weight gradient): float32 to bfloat16, or a bf16 activation into a float32 convolution
    // (a depthwise one, which autocast keeps float32 in training).
    if (form->desc().data_type() != want.data_type()) return converted_in_layout(t, form->memory(), want, s, keep);
    return in_layout(form->memory(), want, s, true, keep);
  }
  const memory user(plain, cpu_engine(), t.raw_data());
  if (t.dtype() == DType::Float32 && want.data_type() == dt::bf16) return converted_in_layout(t, user, want, s, keep);
  return in_layout(user, want, s, true, keep);
}

// This call's scratchpad for `plan`, from the caching allocator (kept alive in `keep`); added to
// `args` unless the primitive needs none.
void add_scratchpad(const ConvPlan& plan, std::unordered_map<int, memory>& args, std::vector<Storage>& keep) {
  const size_t bytes = plan.scratchpad.get_size();
  if (bytes == 0) return;
  keep.push_back(std::make_shared<StorageImpl>(bytes, Device::cpu()));
  args.emplace(DNNL_ARG_SCRATCHPAD, memory(plan.scratchpad, cpu_engine(), keep.back()->data()));
}

memory wrap(const memory::desc& md, const Tensor& t) {
  return memory(md, cpu_engine(), t.raw_data());
}

}  // namespace

namespace {

// A convolution multiplied in bfloat16 in training (autocast, autograd recording) returns the
// bf16-rounded result, as PyTorch's autocast does (its output is a bf16 tensor): held, it is kept in
// bf16 (half the bytes for the batch norm, pooling and next convolution to read, and for the
// backward to keep); written plain, the same values widened. Inference under autocast returns them
// too where its output is held (dnnl_form.h).
bool round_output(const Conv2dParams& p, const Tensor& out) {
  return p.keep_layout && p.compute == DType::BFloat16 && out.dtype() == DType::Float32;
}

// out's values rounded to bf16 where they are: its float32 form (held) or its plain bytes. For the
// rare geometries without a bf16-output primitive.
void round_output_in_place(const Tensor& out) {
  if (const DnnlForm* form = dnnl_form_of(out)) {
    if (form->desc().data_type() == dt::f32)  // else bf16 already
      round_to_bf16_in_place(static_cast<float*>(form->data()), int64_t(form->desc().get_size() / sizeof(float)));
    return;
  }
  round_to_bf16_in_place(out.data_ptr<float>(), out.numel());
}

// The post-op that applies `act` to the convolution's float32 result (after the bias), in the same
// pass that writes it. oneDNN 2.6: ReLU is eltwise_relu with alpha 0 (max(x, 0)), ReLU6
// eltwise_clip_v2 [0, 6], SiLU eltwise_swish with alpha 1 (x * sigmoid(x)), Hardswish
// eltwise_hardswish (x * relu6(x + 3) / 6).
dnnl::primitive_attr epilogue_attr(kernels::ConvEpilogue act) {
  dnnl::primitive_attr attr = user_scratchpad_attr();
  if (act == kernels::ConvEpilogue::None) return attr;
  dnnl::post_ops ops;
  switch (act) {
    case kernels::ConvEpilogue::Relu: ops.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f); break;
    case kernels::ConvEpilogue::Relu6: ops.append_eltwise(1.f, dnnl::algorithm::eltwise_clip_v2, 0.f, 6.f); break;
    case kernels::ConvEpilogue::Silu: ops.append_eltwise(1.f, dnnl::algorithm::eltwise_swish, 1.f, 0.f); break;
    case kernels::ConvEpilogue::Hardswish:
      ops.append_eltwise(1.f, dnnl::algorithm::eltwise_hardswish, 0.f, 0.f);
      break;
    case kernels::ConvEpilogue::None: break;
  }
  attr.set_post_ops(ops);
  return attr;
}

// The forward convolution with `act` as its post-op; false (nothing written) when oneDNN has no
// primitive for the geometry (with or without that post-op).
bool conv2d_forward_planned(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dParams& p,
                            kernels::ConvEpilogue act, const Tensor& out, bool half_out_allowed = true) {
  const bool has_bias = bias.defined();
  // An output nothing keeps for a backward may be left in the primitive's layout (dnnl_form.h);
  // multiplied in bfloat16 it is then also written in bfloat16, as PyTorch's autocast returns a
  // bfloat16 convolution output: half the bytes for the next op to read.
  // In training (keep_layout) it may be held too: at float32 for float32 compute, the values the
  // plain tensor has; in bfloat16 under autocast, as inference -- the batch norm, pooling and next
  // convolution read the bf16 values (nn_norm_held.cpp, nn_pool.cpp), the weight gradient takes
  // them as its bf16 operand, and the activation saved for the backward is half the bytes. Its
  // values are then the bf16-rounded results, as PyTorch's autocast keeps them.
  // With forms off (EMBER_PLAIN_LAYOUT=1) a training output is still written in bf16 and widened
  // into the plain tensor: the same values either way (round_output below).
  const bool may_hold = (p.out_any_layout || p.keep_layout) && out.dtype() == DType::Float32 && forms_enabled();
  const bool half_out = half_out_allowed && p.compute == DType::BFloat16 && (may_hold || round_output(p, out));
  ConvTypes prim_types = conv_types(ConvKind::Forward, p);
  if (half_out) prim_types.out = dt::bf16;
  const ConvDescs d = make_descs(x.sizes(), weight.sizes(), out.sizes(), p, user_types(x, weight, out), prim_types);
  // Kinds 0-5 are the three directions in f32 and bf16; a fused forward adds 10 per activation, a
  // bfloat16 output 100.
  const int kind = 10 * static_cast<int>(act) + (half_out ? 100 : 0);
  const ConvPlan* plan = cached_plan(make_key(kind, x.sizes(), weight.sizes(), out.sizes(), p, has_bias), [&] {
    auto pd = forward_pd(d, has_bias, epilogue_attr(act));
    return ConvPlan{dnnl::convolution_forward(pd), pd.src_desc(), pd.weights_desc(), pd.dst_desc(),
                    pd.scratchpad_desc()};
  });
  // No bfloat16-output primitive: the float32-output one, its output held as it is (and rounded
  // where training wants it: round_output).
  if (!plan && half_out) {
    if (!conv2d_forward_planned(x, weight, bias, p, act, out, false)) return false;
    if (round_output(p, out)) round_output_in_place(out);
    return true;
  }
  if (!plan) return false;
  dnnl_call("conv2d", [&] {
    dnnl::stream s(cpu_engine());
    std::vector<Storage> keep;
    memory uw = wrap(d.w, weight);
    memory mx = input_in_layout(x, d.x, plan->a, s, keep), mw = in_layout(uw, plan->b, s, true, keep);
    const bool hold = may_hold && plan->c != d.out;
    memory uo, mo;
    Storage held;
    if (hold) {
      held = std::make_shared<StorageImpl>(plan->c.get_size(), Device::cpu());
      mo = memory(plan->c, cpu_engine(), held->data());
    } else {
      uo = wrap(d.out, out);
      mo = in_layout(uo, plan->c, s, false, keep);
    }
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, mx}, {DNNL_ARG_WEIGHTS, mw}, {DNNL_ARG_DST, mo}};
    if (has_bias) args.emplace(DNNL_ARG_BIAS, wrap(d.b, bias));
    add_scratchpad(*plan, args, keep);
    plan->prim.execute(s, args);
    if (hold) {
      s.wait();
      hold_in_form(out, mo, std::move(held));
    } else if (mo != uo) {
      reorder_into(mo, uo, s);
    }
    s.wait();
  });
  return true;
}

}  // namespace

void conv2d_forward_dnnl(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dParams& p,
                         const Tensor& out) {
  if (x.dtype() == DType::Float64) return reference::conv2d_forward(x, weight, bias, p, out);
  if (conv2d_forward_planned(x, weight, bias, p, kernels::ConvEpilogue::None, out)) return;
  conv2d_forward_im2col(x, weight, bias, p, out);  // bf16: on the rounded values (and rounded in training)
}

bool conv2d_forward_fused_dnnl(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dParams& p,
                               kernels::ConvEpilogue act, const Tensor& out) {
  if (x.dtype() != DType::Float32) return false;
  return conv2d_forward_planned(x, weight, bias, p, act, out);
}

void conv2d_backward_data_dnnl(const Tensor& grad_out, const Tensor& weight, const Conv2dParams& p,
                               const Tensor& grad_x) {
  const bool half = p.compute == DType::BFloat16;
  if (grad_x.dtype() == DType::Float64) return reference::conv2d_backward_data(grad_out, weight, p, grad_x);
  // A depthwise convolution's input gradient under bf16 compute: the float32 primitive on the
  // float32 output gradient and the bf16-rounded weights (widened, exact). oneDNN 2.6's bf16
  // depthwise backward-data kernel took 2.3x the float32 one's time (mobilenet_v2 at 224 px, batch
  // 32, ONEDNN_VERBOSE, Zen 5), and the float32 one needs no conversion of the gradient. The same
  // products with grad_out unrounded: at least as accurate.
  if (half && p.groups > 1 && p.groups == grad_x.size(1) && p.groups == grad_out.size(1))
    return conv2d_backward_data_dnnl(grad_out, bf16_rounded(weight), as_f32(p), grad_x);
  const ConvDescs d = make_descs(grad_x.sizes(), weight.sizes(), grad_out.sizes(), p,
                                 user_types(grad_x, weight, grad_out), conv_types(ConvKind::BackwardData, p));
  const ConvPlan* plan =
      cached_plan(make_key(1, grad_x.sizes(), weight.sizes(), grad_out.sizes(), p, false), [&] {
        auto hint = forward_pd(hint_descs(grad_x.sizes(), weight.sizes(), grad_out.sizes(), p), false);
        using cbd = dnnl::convolution_backward_data;
        cbd::desc desc(dnnl::algorithm::convolution_direct, d.x_any, d.w_any, d.out_any, d.strides,
                       d.dilates, d.pad_l, d.pad_r);
        cbd::primitive_desc pd(desc, user_scratchpad_attr(), cpu_engine(), hint);
        return ConvPlan{cbd(pd), pd.diff_dst_desc(), pd.weights_desc(), pd.diff_src_desc(), pd.scratchpad_desc()};
      });
  if (!plan && half)
    return conv2d_backward_data_im2col(bf16_rounded(grad_out), bf16_rounded(weight), as_f32(p), grad_x);
  if (!plan) return conv2d_backward_data_im2col(grad_out, weight, p, grad_x);
  dnnl_call("conv2d backward (input gradient)", [&] {
    dnnl::stream s(cpu_engine());
    std::vector<Storage> keep;
    memory uw = wrap(d.w, weight);
    memory mg = input_in_layout(grad_out, d.out, plan->a, s, keep), mw = in_layout(uw, plan->b, s, true, keep);
    // In training the input gradient may stay in the primitive's layout (float32), for the batch
    // norm or the convolution before to read as it is (Conv2dParams::keep_layout).
    const bool hold = p.keep_layout && forms_enabled() && grad_x.dtype() == DType::Float32 &&
                      grad_x.storage()->form() == nullptr && plan->c != d.x;
    memory ux, mx;
    Storage held;
    if (hold) {
      held = std::make_shared<StorageImpl>(plan->c.get_size(), Device::cpu());
      mx = memory(plan->c, cpu_engine(), held->data());
    } else {
      ux = wrap(d.x, grad_x);
      mx = in_layout(ux, plan->c, s, false, keep);
    }
    std::unordered_map<int, memory> args{{DNNL_ARG_DIFF_DST, mg}, {DNNL_ARG_WEIGHTS, mw}, {DNNL_ARG_DIFF_SRC, mx}};
    add_scratchpad(*plan, args, keep);
    plan->prim.execute(s, args);
    if (hold) {
      s.wait();
      hold_in_form(grad_x, mx, std::move(held));
    } else if (mx != ux) {
      reorder_into(mx, ux, s);
    }
    s.wait();
  });
}

namespace {
// The backward-weights primitive, with the bias gradient when `grad_bias` is defined; false when
// oneDNN has no primitive for it (nothing written).
bool conv2d_backward_weight_planned(const Tensor& grad_out, const Tensor& x, const Conv2dParams& p,
                                    const Tensor& grad_weight, const Tensor& grad_bias) {
  const bool with_bias = grad_bias.defined();
  const ConvDescs d = make_descs(x.sizes(), grad_weight.sizes(), grad_out.sizes(), p,
                                 user_types(x, grad_weight, grad_out), conv_types(ConvKind::BackwardWeights, p));
  const ConvPlan* plan =
      cached_plan(make_key(2, x.sizes(), grad_weight.sizes(), grad_out.sizes(), p, with_bias), [&] {
        auto hint = forward_pd(hint_descs(x.sizes(), grad_weight.sizes(), grad_out.sizes(), p), with_bias);
        using cbw = dnnl::convolution_backward_weights;
        const cbw::primitive_desc pd = backward_weights_pd(d, [&](dnnl::algorithm alg) {
          cbw::desc desc = with_bias ? cbw::desc(alg, d.x_any, d.w_any, d.b, d.out_any, d.strides, d.dilates,
                                                 d.pad_l, d.pad_r)
                                     : cbw::desc(alg, d.x_any, d.w_any, d.out_any, d.strides, d.dilates, d.pad_l,
                                                 d.pad_r);
          return cbw::primitive_desc(desc, user_scratchpad_attr(), cpu_engine(), hint);
        });
        return ConvPlan{cbw(pd), pd.diff_dst_desc(), pd.src_desc(), pd.diff_weights_desc(), pd.scratchpad_desc()};
      });
  if (!plan) return false;
  dnnl_call("conv2d backward (weight gradient)", [&] {
    dnnl::stream s(cpu_engine());
    std::vector<Storage> keep;
    memory uw = wrap(d.w, grad_weight);
    memory mg = input_in_layout(grad_out, d.out, plan->a, s, keep), mx = input_in_layout(x, d.x, plan->b, s, keep);
    memory mw = in_layout(uw, plan->c, s, false, keep);
    std::unordered_map<int, memory> args{{DNNL_ARG_DIFF_DST, mg}, {DNNL_ARG_SRC, mx}, {DNNL_ARG_DIFF_WEIGHTS, mw}};
    if (with_bias) args.emplace(DNNL_ARG_DIFF_BIAS, wrap(d.b, grad_bias));
    add_scratchpad(*plan, args, keep);
    plan->prim.execute(s, args);
    if (mw != uw) reorder_into(mw, uw, s);
    s.wait();
  });
  return true;
}
}  // namespace

void conv2d_backward_weight_dnnl(const Tensor& grad_out, const Tensor& x, const Conv2dParams& p,
                                 const Tensor& grad_weight) {
  const bool half = p.compute == DType::BFloat16;
  if (x.dtype() == DType::Float64) return reference::conv2d_backward_weight(grad_out, x, p, grad_weight);
  // oneDNN's weight-gradient reduction is partitioned by thread; under ember::deterministic() the
  // im2col path sums fixed groups of images instead (thread-count independent), in bf16 compute
  // on the bf16-rounded values (the same products, summed in f32).
  if (deterministic() && half)
    return conv2d_backward_weight_im2col(bf16_rounded(grad_out), bf16_rounded(x), as_f32(p), grad_weight);
  if (deterministic()) return conv2d_backward_weight_im2col(grad_out, x, p, grad_weight);
  if (half && conv2d_backward_weight_gemm_bf16(grad_out, x, p, grad_weight)) return;
  if (conv2d_backward_weight_planned(grad_out, x, p, grad_weight, Tensor())) return;
  if (half) return conv2d_backward_weight_im2col(bf16_rounded(grad_out), bf16_rounded(x), as_f32(p), grad_weight);
  conv2d_backward_weight_im2col(grad_out, x, p, grad_weight);
}

// The bias gradient summed by oneDNN while it reads grad_out for the weight gradient: mnistnet's
// separate sum over its two convolutions' output gradients was ~5% of a bf16 training step on the
// Zen 5 (perf, 2026-12-02). The sums are float32 in oneDNN's order (ember's reduce sums in double):
// within float32 rounding of the separate sum; under bf16 compute they are of the bf16-rounded
// grad_out the weight gradient multiplies, as PyTorch's autocast sums its bf16 output gradient.
bool conv2d_backward_weight_bias_dnnl(const Tensor& grad_out, const Tensor& x, const Conv2dParams& p,
                                      const Tensor& grad_weight, const Tensor& grad_bias) {
  if (x.dtype() != DType::Float32 || deterministic()) return false;
  if (grad_bias.dtype() != DType::Float32 || grad_bias.dim() != 1 || !grad_bias.is_contiguous()) return false;
  return conv2d_backward_weight_planned(grad_out, x, p, grad_weight, grad_bias);
}

// The conv2d slots of the CPU: oneDNN, which falls back to im2col (nn_conv.cpp) for a geometry it
// cannot build a primitive for and to the reference (reference/nn_conv.cpp) for float64.
void register_nn_conv_kernels() {
  kernels::conv2d_forward.set(DeviceType::CPU, &conv2d_forward_dnnl);
  kernels::conv2d_forward_fused.set(DeviceType::CPU, &conv2d_forward_fused_dnnl);
  register_conv_activation_grad_kernel();
  kernels::conv2d_backward_data.set(DeviceType::CPU, &conv2d_backward_data_dnnl);
  kernels::conv2d_backward_weight.set(DeviceType::CPU, &conv2d_backward_weight_dnnl);
  kernels::conv2d_backward_weight_bias.set(DeviceType::CPU, &conv2d_backward_weight_bias_dnnl);
}

}  // namespace ember::cpu
