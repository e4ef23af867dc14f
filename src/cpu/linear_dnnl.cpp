// linear without autograd (inference: eval, predict, NoGradGuard) on the CPU through oneDNN 2.6's
// inner-product primitive, float32, with the weight kept in oneDNN's blocked layout between calls.
//
// Why: OpenBLAS repacks the weight on every call (its sgemm_oncopy was 23% of mlp inference's
// profile) and its transposed-B path is slow for long K. oneDNN's brgemm inner product on
// AVX-512, with the weight reordered once, ran (2026-11-29, 2 threads, quiet machine, /tmp probe):
// 256x784 -> 256 233 GFLOP/s vs OpenBLAS 193; 64x9216 -> 128 193 vs 125. Reordering the weight on
// every call (training, where the weight changes each step) loses that gain, so training takes
// the unpacked products of linear_matmul.cpp (or ember's tiled OpenBLAS: linear_matmul.h says when).
//
// The weight cache: one entry per weight storage, holding a std::weak_ptr to it, the storage
// version and the offset/shape it was made from. Every ember op that writes a tensor in place
// (optimizer steps, copy_, load_state_dict, fill_, the in-place arithmetic) bumps the storage's
// version, so a changed weight is reordered again on its next use; a freed storage's entry is
// recognised by the expired weak_ptr even when a new storage reuses its address. A write through a
// raw data pointer is not seen (as by autograd's saved-tensor checks): bump_version() after one.
// Calls are serialised by one mutex (inference from several threads at once shares the cache).
//
// bfloat16 (ember::autocast): x and w arrive as bf16 tensors (the weight from autocast's per-region
// cast cache, so it is converted once per step). Training's three products run as oneDNN matmuls
// on the plain layouts (linear_matmul.cpp: AMX brgemm, no weight reorder; the forward through
// the linear_forward_training slot); inference runs the inner product below on the packed, cached
// bf16 weight. The inner-product backward primitives serve only a case oneDNN has no matmul for.
#include <oneapi/dnnl/dnnl.hpp>

#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "cpu/dnnl_form.h"
#include "cpu/dnnl_util.h"
#include "cpu/linear_matmul.h"
#include "ember/core/tensor.h"
#include "kernels/kernels.h"

namespace ember::cpu {

namespace {

using dnnl::memory;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

dnnl::engine& engine() { return dnnl_cpu_engine(); }

// The plain layouts of linear's tensors: x / grad_x (N, I), y / grad_y (N, O), w (O, I), b (O).
struct PlainDescs {
  memory::desc x, y, w, b;
};
// x_dt / w_dt / y_dt: the data types of x (or grad_x), w (or grad_w), y (or grad_y).
PlainDescs plain_descs(int64_t n, int64_t in, int64_t out, dt x_dt = dt::f32, dt w_dt = dt::f32, dt y_dt = dt::f32) {
  return {memory::desc({n, in}, x_dt, tag::nc), memory::desc({n, out}, y_dt, tag::nc),
          memory::desc({out, in}, w_dt, tag::oi), memory::desc({out}, dt::f32, tag::x)};
}
bool f32_or_bf16(DType t) { return t == DType::Float32 || t == DType::BFloat16; }

struct Plan {
  dnnl::inner_product_forward prim;
  memory::desc x, w_plain, w_packed, b, y;
};

struct PackedWeight {
  std::weak_ptr<StorageImpl> owner;
  uint64_t version = 0;
  int64_t offset = 0, out_features = 0, in_features = 0;
  memory packed;  // owns its buffer (oneDNN's allocation), in the plan's weight layout
};

struct Cache {
  std::mutex mu;
  std::map<std::tuple<int64_t, int64_t, int64_t, bool, bool>, std::optional<Plan>> plans;  // (N, I, O, bias, bf16)
  std::unordered_map<const StorageImpl*, PackedWeight> weights;
};
Cache& cache() {
  static Cache c;
  return c;
}
constexpr size_t kMaxWeights = 256;

const Plan* plan_for(Cache& c, int64_t n, int64_t in, int64_t out, bool bias, bool bf16) {
  auto key = std::make_tuple(n, in, out, bias, bf16);
  auto it = c.plans.find(key);
  if (it == c.plans.end()) {
    std::optional<Plan> plan;
    try {
      Plan p;
      const dt mul = bf16 ? dt::bf16 : dt::f32;
      const PlainDescs plain = plain_descs(n, in, out, mul, mul, dt::f32);
      p.x = plain.x, p.y = plain.y, p.w_plain = plain.w, p.b = plain.b;
      const memory::desc w_any({out, in}, mul, tag::any);
      using ip = dnnl::inner_product_forward;
      ip::desc d = bias ? ip::desc(dnnl::prop_kind::forward_inference, p.x, w_any, p.b, p.y)
                        : ip::desc(dnnl::prop_kind::forward_inference, p.x, w_any, p.y);
      ip::primitive_desc pd(d, engine());
      p.w_packed = pd.weights_desc();
      p.prim = ip(pd);
      plan = std::move(p);
    } catch (const dnnl::error&) {
      plan.reset();  // no implementation for this shape: the caller uses the GEMM path
    }
    it = c.plans.emplace(key, std::move(plan)).first;
  }
  return it->second ? &*it->second : nullptr;
}

// The weight in the plan's layout: the cached copy when it is still current, else a fresh reorder.
const memory& packed_weight(Cache& c, const Plan& plan, const Tensor& w, dnnl::stream& s) {
  const Storage& st = w.storage();
  const uint64_t version = st->version();
  auto it = c.weights.find(st.get());
  if (it != c.weights.end()) {
    PackedWeight& e = it->second;
    const auto owner = e.owner.lock();
    if (owner == st && e.version == version && e.offset == w.storage_offset() && e.out_features == w.size(0) &&
        e.in_features == w.size(1) && e.packed.get_desc() == plan.w_packed)
      return e.packed;
    c.weights.erase(it);
  }
  if (c.weights.size() >= kMaxWeights) {
    std::erase_if(c.weights, [](const auto& kv) { return kv.second.owner.expired(); });
    if (c.weights.size() >= kMaxWeights) c.weights.clear();
  }
  PackedWeight e;
  e.owner = st;
  e.version = version;
  e.offset = w.storage_offset();
  e.out_features = w.size(0);
  e.in_features = w.size(1);
  e.packed = memory(plan.w_packed, engine());
  memory user(plan.w_plain, engine(), w.raw_data());
  dnnl::reorder(user, e.packed).execute(s, user, e.packed);
  return c.weights.emplace(st.get(), std::move(e)).first->second.packed;
}

bool contiguous_2d(const Tensor& t) { return t.dim() == 2 && t.is_contiguous(); }

// Runs the inner product of `plan` on src (its plan->x layout), the packed weight and the bias into out.
void run_inner_product(const Plan& plan, void* src, const memory& wp, const Tensor& b, const Tensor& out) {
  dnnl::stream s(engine());
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, memory(plan.x, engine(), src)},
                                       {DNNL_ARG_WEIGHTS, wp},
                                       {DNNL_ARG_DST, memory(plan.y, engine(), out.raw_data())}};
  if (b.defined()) args.emplace(DNNL_ARG_BIAS, memory(plan.b, engine(), b.raw_data()));
  plan.prim.execute(s, args);
  s.wait();
}

// Under bf16 autocast, a flattened activation held in nChw16c bfloat16 (dnnl_form.h: the pooled
// output of the convolutions before a classifier) is read where it is: its rows are
// (C/16, H, W, 16) where linear wants (C, H, W), so the weight's columns are permuted to that order
// once (padding channels get zero columns) and kept packed as the plain weight is. Saves three passes
// over the activation (widening it to float32 and transposing it to NCHW when it is read, then the
// cast back to bfloat16). The same bfloat16 products, summed in float32 in another order: within
// float32 rounding of the plain path. float32 linears read the plain tensor, so float32 inference
// keeps its bits.
struct PermutedWeight {
  std::weak_ptr<StorageImpl> owner;
  uint64_t version = 0;
  int64_t offset = 0, out_features = 0, in_features = 0, channels = 0;
  memory packed;
};

const memory& permuted_weight(Cache& c, const Plan& plan, const Tensor& w, int64_t channels, int64_t hw,
                              dnnl::stream& s) {
  static std::unordered_map<const StorageImpl*, PermutedWeight> kept;  // under c.mu
  const Storage& st = w.storage();
  auto it = kept.find(st.get());
  if (it != kept.end()) {
    PermutedWeight& e = it->second;
    // The owner is tested for null before it is compared (GCC 12's -Wstringop-overflow otherwise
    // flags st->version()'s atomic load on the path where both are null; as ops/autocast.cpp).
    const std::shared_ptr<StorageImpl> owner = e.owner.lock();
    if (owner != nullptr && owner == st && e.version == owner->version() && e.offset == w.storage_offset() &&
        e.out_features == w.size(0) && e.in_features == w.size(1) && e.channels == channels &&
        e.packed.get_desc() == plan.w_packed)
      return e.packed;
    kept.erase(it);
  }
  if (kept.size() >= kMaxWeights) std::erase_if(kept, [](const auto& kv) { return kv.second.owner.expired(); });
  if (kept.size() >= kMaxWeights) kept.clear();
  const int64_t O = w.size(0), K = w.size(1), CB = (channels + 15) / 16, Kp = CB * 16 * hw;
  const size_t item = w.itemsize();
  std::vector<char> plain(size_t(O * Kp) * item, 0);
  const char* src = static_cast<const char*>(w.raw_data());
  for (int64_t o = 0; o < O; ++o)
    for (int64_t ch = 0; ch < channels; ++ch)
      for (int64_t i = 0; i < hw; ++i)
        std::memcpy(plain.data() + size_t(o * Kp + ((ch / 16) * hw + i) * 16 + ch % 16) * item,
                    src + size_t(o * K + ch * hw + i) * item, item);
  PermutedWeight e{st, st->version(), w.storage_offset(), O, K, channels, memory(plan.w_packed, engine())};
  memory user(plan.w_plain, engine(), plain.data());
  dnnl::reorder(user, e.packed).execute(s, user, e.packed);
  s.wait();
  return kept.emplace(st.get(), std::move(e)).first->second.packed;
}

// true when x (N, K) is the whole of a storage held in nChw16c (N, C, H, W) with C*H*W == K, in
// w's dtype, and the product ran on it.
bool linear_inference_held(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& out) {
  if (x.dim() != 2 || x.storage_offset() != 0 || !x.is_contiguous() || !contiguous_2d(w)) return false;
  const StorageForm* f = x.storage()->form();
  const auto* form = dynamic_cast<const DnnlForm*>(f);
  if (form == nullptr || form->desc().data.ndims != 4) return false;
  const memory::dims d(form->desc().data.dims, form->desc().data.dims + 4);
  const dt type = dt::bf16;
  if (w.dtype() != DType::BFloat16 || form->desc() != memory::desc(d, type, tag::nChw16c) || d[0] != x.size(0) || d[1] * d[2] * d[3] != x.size(1) ||
      w.size(1) != x.size(1))
    return false;
  const int64_t n = d[0], hw = d[2] * d[3], kp = (d[1] + 15) / 16 * 16 * hw, o = w.size(0);
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  const Plan* plan = plan_for(c, n, kp, o, b.defined(), true);
  if (plan == nullptr) return false;
  dnnl_call("linear", [&] {
    dnnl::stream s(engine());
    run_inner_product(*plan, form->data(), permuted_weight(c, *plan, w, d[1], hw, s), b, out);
  });
  return true;
}

// out (N, O) = x (N, I) @ w (O, I)^T + b; false (nothing written) when this path does not apply.
bool linear_inference(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& out) {
  if (out.dtype() == DType::Float32 && x.dtype() == DType::Float32 && w.dtype() == DType::BFloat16 &&
      x.storage()->form() != nullptr && forms_enabled() && linear_inference_held(x, w, b, out))
    return true;
  if (!f32_or_bf16(x.dtype()) || x.dtype() != w.dtype() || out.dtype() != DType::Float32) return false;
  const bool bf16 = x.dtype() == DType::BFloat16;
  if (b.defined() && (b.dtype() != DType::Float32 || b.dim() != 1 || !b.is_contiguous())) return false;
  if (!contiguous_2d(x) || !contiguous_2d(w) || !contiguous_2d(out)) return false;
  const int64_t n = x.size(0), in = x.size(1), o = w.size(0);
  if (n == 0 || in == 0 || o == 0) return false;
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  const Plan* plan = plan_for(c, n, in, o, b.defined(), bf16);
  if (plan == nullptr) return false;
  dnnl_call("linear", [&] {
    dnnl::stream s(engine());
    run_inner_product(*plan, x.raw_data(), packed_weight(c, *plan, w, s), b, out);
  });
  return true;
}

// The cached backward primitives (weights and data) of linear.
struct BwdPlan {
  dnnl::primitive prim;
  memory::desc x, w, b, y;     // our tensors' layouts and types
  memory::desc x_p, w_p, y_p;  // the primitive's
};
using BwdKey = std::tuple<int, int64_t, int64_t, int64_t, bool>;  // (kind, N, I, O, bias)

// A memory holding `user`'s data in `want`'s layout and type: `user` itself when they agree, else
// a reordered copy (copy_in) or a fresh buffer (outputs, reordered back by the caller).
memory as_desc(memory user, const memory::desc& want, dnnl::stream& s, bool copy_in) {
  if (user.get_desc() == want) return user;
  memory m(want, engine());
  if (copy_in) dnnl::reorder(user, m).execute(s, user, m);
  return m;
}

template <class Build>
const BwdPlan* bwd_plan(const BwdKey& key, Build&& build) {
  static std::mutex mu;
  static std::map<BwdKey, std::optional<BwdPlan>> plans;
  std::lock_guard<std::mutex> lock(mu);
  auto it = plans.find(key);
  if (it == plans.end()) {
    std::optional<BwdPlan> plan;
    try {
      plan = build();
    } catch (const dnnl::error&) {
      plan.reset();  // no implementation: the caller's GEMM path
    }
    it = plans.emplace(key, std::move(plan)).first;
  }
  return it->second ? &*it->second : nullptr;
}

// Training's weight gradient: oneDNN's inner-product backward-weights primitive, the bias gradient
// in the same pass. float32: on the plain layouts (its own JIT GEMM, no reorders); same /tmp probe,
// 2 threads: 64x784 -> 256 207 GFLOP/s vs OpenBLAS's 171 for grad_out^T @ x alone; 64x9216 -> 128
// 211 vs 149; 64x400 -> 120 186 vs 152. bfloat16 x: grad_out converted to bf16, the layouts oneDNN
// picks, grad_w and grad_b f32.
bool linear_backward_weights(const Tensor& go, const Tensor& x, const Tensor& gw, const Tensor& gb) {
  if (go.dtype() != DType::Float32 || !f32_or_bf16(x.dtype()) || gw.dtype() != DType::Float32) return false;
  if (!contiguous_2d(go) || !contiguous_2d(x) || !contiguous_2d(gw)) return false;
  if (gb.defined() && (gb.dtype() != DType::Float32 || !gb.is_contiguous())) return false;
  const int64_t n = x.size(0), in = x.size(1), o = go.size(1);
  if (n == 0 || in == 0 || o == 0) return false;
  const bool bf16 = x.dtype() == DType::BFloat16, bias = gb.defined();
  if (bf16 && linear_backward_weights_matmul_bf16(go, x, gw, gb)) return true;
  const BwdPlan* plan = bwd_plan({bf16 ? 1 : 0, n, in, o, bias}, [&] {
    BwdPlan p;
    const dt mul = bf16 ? dt::bf16 : dt::f32;
    const PlainDescs plain = plain_descs(n, in, o, mul, dt::f32, dt::f32);
    p.x = plain.x, p.y = plain.y, p.w = plain.w, p.b = plain.b;
    using ipf = dnnl::inner_product_forward;
    using ipw = dnnl::inner_product_backward_weights;
    // f32: the plain layouts only; bf16: what oneDNN picks (grad_out has to be converted anyway).
    const memory::desc x_p = bf16 ? memory::desc({n, in}, mul, tag::any) : p.x;
    const memory::desc y_p = bf16 ? memory::desc({n, o}, mul, tag::any) : p.y;
    const memory::desc w_hint = bf16 ? memory::desc({o, in}, mul, tag::any) : p.w;
    ipf::primitive_desc hint(bias ? ipf::desc(dnnl::prop_kind::forward_training, x_p, w_hint, p.b, y_p)
                                  : ipf::desc(dnnl::prop_kind::forward_training, x_p, w_hint, y_p),
                             engine());
    auto make = [&](const memory::desc& w_p) {
      return ipw::primitive_desc(bias ? ipw::desc(x_p, w_p, p.b, y_p) : ipw::desc(x_p, w_p, y_p), engine(), hint);
    };
    // bf16: the gradient straight into our (O, I) f32 tensor when oneDNN can, else its layout and
    // a reorder out (the 256x784 one cost ~0.27 ms a step in mlp).
    std::optional<ipw::primitive_desc> maybe;
    if (bf16) {
      try {
        maybe = make(p.w);
      } catch (const dnnl::error&) {
        maybe = make(memory::desc({o, in}, dt::f32, tag::any));
      }
    } else {
      maybe = make(p.w);
    }
    const ipw::primitive_desc& pd = *maybe;
    // f32: anything but the plain layouts would need reorders that cost what oneDNN saves.
    if (!bf16 && (pd.diff_weights_desc() != p.w || pd.src_desc() != p.x || pd.diff_dst_desc() != p.y))
      throw dnnl::error(dnnl_unimplemented, "layout");
    p.x_p = pd.src_desc(), p.y_p = pd.diff_dst_desc(), p.w_p = pd.diff_weights_desc();
    p.prim = ipw(pd);
    return p;
  });
  if (!plan) return false;
  dnnl_call("linear backward (weight gradient)", [&] {
    dnnl::stream s(engine());
    memory ux(plan->x, engine(), x.raw_data()), uy(plan->y, engine(), go.raw_data());
    memory uw(plan->w, engine(), gw.raw_data());
    memory mx = as_desc(ux, plan->x_p, s, true), my = as_desc(uy, plan->y_p, s, true);
    memory mw = as_desc(uw, plan->w_p, s, false);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, mx}, {DNNL_ARG_DIFF_DST, my}, {DNNL_ARG_DIFF_WEIGHTS, mw}};
    if (gb.defined()) args.emplace(DNNL_ARG_DIFF_BIAS, memory(plan->b, engine(), gb.raw_data()));
    plan->prim.execute(s, args);
    if (mw != uw) dnnl::reorder(mw, uw).execute(s, mw, uw);
    s.wait();
  });
  return true;
}

// linear's input gradient: for a bfloat16 weight grad_x (N, I) f32 = grad_out (N, O) (converted to
// bf16) @ w (O, I) bf16, oneDNN's matmul or inner-product backward-data; float32 on oneDNN's sgemm
// where linear_matmul.h takes it, else batched_gemm.
// Training's forward (the weight changes every step: not packed): bf16 or float32 oneDNN matmuls
// (linear_matmul.h says which float32 products it takes).
bool linear_forward_training(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& out) {
  if (x.dtype() == DType::Float32) return linear_forward_matmul_f32(x, w, b, out);
  return linear_forward_matmul_bf16(x, w, b, out);
}

bool linear_backward_data(const Tensor& go, const Tensor& w, const Tensor& gx) {
  if (w.dtype() == DType::Float32) return linear_backward_data_sgemm_f32(go, w, gx);
  if (go.dtype() != DType::Float32 || w.dtype() != DType::BFloat16 || gx.dtype() != DType::Float32) return false;
  if (!contiguous_2d(go) || !contiguous_2d(w) || !contiguous_2d(gx)) return false;
  const int64_t n = gx.size(0), in = gx.size(1), o = go.size(1);
  if (n == 0 || in == 0 || o == 0) return false;
  if (linear_backward_data_matmul_bf16(go, w, gx)) return true;
  const BwdPlan* plan = bwd_plan({2, n, in, o, false}, [&] {
    BwdPlan p;
    const PlainDescs plain = plain_descs(n, in, o, dt::f32, dt::bf16, dt::f32);
    p.x = plain.x, p.y = plain.y, p.w = plain.w, p.b = plain.b;
    using ipf = dnnl::inner_product_forward;
    using ipd = dnnl::inner_product_backward_data;
    const memory::desc x_p({n, in}, dt::f32, tag::any), y_p({n, o}, dt::bf16, tag::any), w_p({o, in}, dt::bf16, tag::any);
    ipf::primitive_desc hint(ipf::desc(dnnl::prop_kind::forward_training, memory::desc({n, in}, dt::bf16, tag::any),
                                       w_p, y_p),
                             engine());
    ipd::primitive_desc pd(ipd::desc(x_p, w_p, y_p), engine(), hint);
    p.x_p = pd.diff_src_desc(), p.y_p = pd.diff_dst_desc(), p.w_p = pd.weights_desc();
    p.prim = ipd(pd);
    return p;
  });
  if (!plan) return false;
  dnnl_call("linear backward (input gradient)", [&] {
    dnnl::stream s(engine());
    memory ux(plan->x, engine(), gx.raw_data()), uy(plan->y, engine(), go.raw_data());
    memory uw(plan->w, engine(), w.raw_data());
    memory my = as_desc(uy, plan->y_p, s, true), mw = as_desc(uw, plan->w_p, s, true);
    memory mx = as_desc(ux, plan->x_p, s, false);
    plan->prim.execute(s, {{DNNL_ARG_DIFF_DST, my}, {DNNL_ARG_WEIGHTS, mw}, {DNNL_ARG_DIFF_SRC, mx}});
    if (mx != ux) dnnl::reorder(mx, ux).execute(s, mx, ux);
    s.wait();
  });
  return true;
}

}  // namespace

void register_linear_kernels() {
  kernels::linear_inference.set(DeviceType::CPU, &linear_inference);
  kernels::linear_forward_training.set(DeviceType::CPU, &linear_forward_training);
  kernels::linear_backward_weights.set(DeviceType::CPU, &linear_backward_weights);
  kernels::linear_backward_data.set(DeviceType::CPU, &linear_backward_data);
}

}  // namespace ember::cpu
