// linear without autograd (inference: eval, predict, NoGradGuard) on the CPU through oneDNN 2.6's
// inner-product primitive, float32, with the weight kept in oneDNN's blocked layout between calls.
//
// Why: OpenBLAS repacks the weight on every call (its sgemm_oncopy was 23% of mlp inference's
// profile) and its transposed-B path is slow for long K. oneDNN's brgemm inner product on
// AVX-512, with the weight reordered once, ran (2026-11-29, 2 threads, quiet machine, /tmp probe):
// 256x784 -> 256 233 GFLOP/s vs OpenBLAS 193; 64x9216 -> 128 193 vs 125. Reordering the weight on
// every call (training, where the weight changes each step) loses that gain, so the training
// path stays on OpenBLAS (src/ops/linalg.cpp records gradients only there).
//
// The weight cache: one entry per weight storage, holding a std::weak_ptr to it, the storage
// version and the offset/shape it was made from. Every ember op that writes a tensor in place
// (optimizer steps, copy_, load_state_dict, fill_, the in-place arithmetic) bumps the storage's
// version, so a changed weight is reordered again on its next use; a freed storage's entry is
// recognised by the expired weak_ptr even when a new storage reuses its address. A write through a
// raw data pointer is not seen (as by autograd's saved-tensor checks): bump_version() after one.
// Calls are serialised by one mutex (inference from several threads at once shares the cache).
#include <oneapi/dnnl/dnnl.hpp>

#include <map>
#include <mutex>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "cpu/dnnl_util.h"
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
PlainDescs plain_descs(int64_t n, int64_t in, int64_t out) {
  return {memory::desc({n, in}, dt::f32, tag::nc), memory::desc({n, out}, dt::f32, tag::nc),
          memory::desc({out, in}, dt::f32, tag::oi), memory::desc({out}, dt::f32, tag::x)};
}

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
  std::map<std::tuple<int64_t, int64_t, int64_t, bool>, std::optional<Plan>> plans;  // (N, I, O, bias)
  std::unordered_map<const StorageImpl*, PackedWeight> weights;
};
Cache& cache() {
  static Cache c;
  return c;
}
constexpr size_t kMaxWeights = 256;

const Plan* plan_for(Cache& c, int64_t n, int64_t in, int64_t out, bool bias) {
  auto key = std::make_tuple(n, in, out, bias);
  auto it = c.plans.find(key);
  if (it == c.plans.end()) {
    std::optional<Plan> plan;
    try {
      Plan p;
      const PlainDescs plain = plain_descs(n, in, out);
      p.x = plain.x, p.y = plain.y, p.w_plain = plain.w, p.b = plain.b;
      const memory::desc w_any({out, in}, dt::f32, tag::any);
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

// out (N, O) = x (N, I) @ w (O, I)^T + b; false (nothing written) when this path does not apply.
bool linear_inference(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& out) {
  if (x.dtype() != DType::Float32 || w.dtype() != DType::Float32 || out.dtype() != DType::Float32) return false;
  if (b.defined() && (b.dtype() != DType::Float32 || b.dim() != 1 || !b.is_contiguous())) return false;
  if (!contiguous_2d(x) || !contiguous_2d(w) || !contiguous_2d(out)) return false;
  const int64_t n = x.size(0), in = x.size(1), o = w.size(0);
  if (n == 0 || in == 0 || o == 0) return false;
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  const Plan* plan = plan_for(c, n, in, o, b.defined());
  if (plan == nullptr) return false;
  dnnl_call("linear", [&] {
    dnnl::stream s(engine());
    const memory& wp = packed_weight(c, *plan, w, s);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, memory(plan->x, engine(), x.raw_data())},
                                         {DNNL_ARG_WEIGHTS, wp},
                                         {DNNL_ARG_DST, memory(plan->y, engine(), out.raw_data())}};
    if (b.defined()) args.emplace(DNNL_ARG_BIAS, memory(plan->b, engine(), b.raw_data()));
    plan->prim.execute(s, args);
    s.wait();
  });
  return true;
}

// Training's weight gradient: oneDNN's inner-product backward-weights primitive on the plain
// layouts (its own JIT GEMM, no reorders), the bias gradient in the same pass. Same /tmp probe,
// 2 threads: 64x784 -> 256 207 GFLOP/s vs OpenBLAS's 171 for grad_out^T @ x alone; 64x9216 -> 128
// 211 vs 149; 64x400 -> 120 186 vs 152.
struct BwdPlan {
  dnnl::inner_product_backward_weights prim;
  memory::desc x, w, b, y;
};
bool linear_backward_weights(const Tensor& go, const Tensor& x, const Tensor& gw, const Tensor& gb) {
  if (go.dtype() != DType::Float32 || x.dtype() != DType::Float32 || gw.dtype() != DType::Float32) return false;
  if (!contiguous_2d(go) || !contiguous_2d(x) || !contiguous_2d(gw)) return false;
  if (gb.defined() && (gb.dtype() != DType::Float32 || !gb.is_contiguous())) return false;
  const int64_t n = x.size(0), in = x.size(1), o = go.size(1);
  if (n == 0 || in == 0 || o == 0) return false;
  static std::mutex mu;
  static std::map<std::tuple<int64_t, int64_t, int64_t, bool>, std::optional<BwdPlan>> plans;
  std::lock_guard<std::mutex> lock(mu);
  auto key = std::make_tuple(n, in, o, gb.defined());
  auto it = plans.find(key);
  if (it == plans.end()) {
    std::optional<BwdPlan> plan;
    try {
      BwdPlan p;
      const PlainDescs plain = plain_descs(n, in, o);
      p.x = plain.x, p.y = plain.y, p.w = plain.w, p.b = plain.b;
      using ipf = dnnl::inner_product_forward;
      using ipw = dnnl::inner_product_backward_weights;
      const bool bias = gb.defined();
      ipf::primitive_desc hint(bias ? ipf::desc(dnnl::prop_kind::forward_training, p.x, p.w, p.b, p.y)
                                    : ipf::desc(dnnl::prop_kind::forward_training, p.x, p.w, p.y),
                               engine());
      ipw::primitive_desc pd(bias ? ipw::desc(p.x, p.w, p.b, p.y) : ipw::desc(p.x, p.w, p.y), engine(), hint);
      // Only the plain layouts were asked for; anything else would need reorders we do not do.
      if (pd.diff_weights_desc() != p.w || pd.src_desc() != p.x || pd.diff_dst_desc() != p.y)
        throw dnnl::error(dnnl_unimplemented, "layout");
      p.prim = ipw(pd);
      plan = std::move(p);
    } catch (const dnnl::error&) {
      plan.reset();
    }
    it = plans.emplace(key, std::move(plan)).first;
  }
  if (!it->second) return false;
  const BwdPlan& p = *it->second;
  dnnl_call("linear backward", [&] {
    dnnl::stream s(engine());
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, memory(p.x, engine(), x.raw_data())},
                                         {DNNL_ARG_DIFF_DST, memory(p.y, engine(), go.raw_data())},
                                         {DNNL_ARG_DIFF_WEIGHTS, memory(p.w, engine(), gw.raw_data())}};
    if (gb.defined()) args.emplace(DNNL_ARG_DIFF_BIAS, memory(p.b, engine(), gb.raw_data()));
    p.prim.execute(s, args);
    s.wait();
  });
  return true;
}

}  // namespace

void register_linear_kernels() {
  kernels::linear_inference.set(DeviceType::CPU, &linear_inference);
  kernels::linear_backward_weights.set(DeviceType::CPU, &linear_backward_weights);
}

}  // namespace ember::cpu
