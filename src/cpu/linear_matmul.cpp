// linear's bfloat16 training products (ember::autocast) as oneDNN 2.6 matmul primitives on the
// tensors' own row-major layouts: the weight is a fresh bf16 cast every step, and the matmul's
// brgemm kernel (AMX where the CPU has it) packs its operands inside the call, where the inner
// product wants them reordered into its blocked layout first (0.31 ms for mlp's 256x784 weight,
// more than the product). W^T and grad_out^T are transposed views (format tag ba), never copies.
//
// float32 training (the weight changes every step, so no packed copy either): the forward as the
// same matmul (bias in its epilogue) and the input gradient as oneDNN's sgemm, where
// bench/blas_gemm_lab measured them faster than ember's tiled OpenBLAS (src/cpu/gemm.cpp) on the
// shapes of mlp, lenet5, mnistnet and bncnn48 at batch 64 (Zen 4, 2 threads, GFLOP/s, two runs:
// forward x @ W^T: matmul 104-112 / 143-178 / 155-187 against tiled 69-75 / 96-117 / 130-141 for
// lenet5 256->120 / mnistnet 9216->128 / bncnn48 2352->128; input gradient g @ W: sgemm 149-175 /
// 159-178 / 199-202 against 77-88 / 117-140 / 135-161; oneDNN's matmul was slower there, its sgemm
// slower for the forward). The weight gradient already runs on oneDNN (linear_dnnl.cpp).
//
// Primitives are cached per shape and made with scratchpad_mode::user: a primitive shared by
// several host threads gets a scratchpad per call (see nn_conv_dnnl.cpp for what the shared
// library-mode scratchpad did).
#include "cpu/linear_matmul.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <map>
#include <mutex>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "core/tensor_raw.h"
#include "cpu/dnnl_util.h"
#include "ember/core/settings.h"
#include "ember/core/storage.h"

namespace ember::cpu {

namespace {

using dnnl::memory;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

struct MatmulPlan {
  dnnl::matmul prim;
  memory::desc a, b, c, bias, scratchpad;
};
enum class Kind { Forward, ForwardF32, BackwardData, BackwardWeights, AtB };
using Key = std::tuple<Kind, int64_t, int64_t, int64_t, bool>;  // (kind, N, I, O, bias)

// a (M, K) @ b (K, N) -> c (M, N) f32, a and b bf16 (f32 for ForwardF32) in the given layouts;
// nullopt when oneDNN has no implementation (remembered).
const MatmulPlan* plan_for(const Key& key, const memory::desc& a, const memory::desc& b, const memory::desc& c,
                           const memory::desc& bias) {
  static std::mutex mu;
  static std::map<Key, std::optional<MatmulPlan>> plans;
  std::lock_guard<std::mutex> lock(mu);
  auto it = plans.find(key);
  if (it == plans.end()) {
    std::optional<MatmulPlan> plan;
    try {
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      const bool has_bias = bias.get_size() != 0;
      dnnl::matmul::primitive_desc pd(has_bias ? dnnl::matmul::desc(a, b, bias, c) : dnnl::matmul::desc(a, b, c), attr,
                                      dnnl_cpu_engine());
      plan = MatmulPlan{dnnl::matmul(pd), a, b, c, bias, pd.scratchpad_desc()};
    } catch (const dnnl::error&) {
      plan.reset();
    }
    it = plans.emplace(key, std::move(plan)).first;
  }
  return it->second ? &*it->second : nullptr;
}

bool contiguous_2d(const Tensor& t) { return t.dim() == 2 && t.is_contiguous(); }

// float32 and big enough, outside deterministic mode: the products linear_matmul.h routes here.
bool f32_product_for_dnnl(const Tensor& a, const Tensor& b, const Tensor& c, int64_t macs) {
  return a.dtype() == DType::Float32 && b.dtype() == DType::Float32 && c.dtype() == DType::Float32 &&
         macs >= kMinDnnlLinearWork && !deterministic();
}

// Runs `plan` on the buffers a, b, c (and bias), with a scratchpad of its own.
void run(const char* what, const MatmulPlan& plan, void* a, void* b, void* c, void* bias) {
  dnnl_call(what, [&] {
    dnnl::engine& eng = dnnl_cpu_engine();
    dnnl::stream s(eng);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, memory(plan.a, eng, a)},
                                         {DNNL_ARG_WEIGHTS, memory(plan.b, eng, b)},
                                         {DNNL_ARG_DST, memory(plan.c, eng, c)}};
    if (bias != nullptr) args.emplace(DNNL_ARG_BIAS, memory(plan.bias, eng, bias));
    Storage scratch;
    if (const size_t bytes = plan.scratchpad.get_size(); bytes != 0) {
      scratch = std::make_shared<StorageImpl>(bytes, Device::cpu());
      args.emplace(DNNL_ARG_SCRATCHPAD, memory(plan.scratchpad, eng, scratch->data()));
    }
    plan.prim.execute(s, args);
    s.wait();
  });
}

// out (N, O) f32 = x (N, I) @ w (O, I)^T + b (O) f32 with x and w of type `mul` (checked by the
// caller), one matmul with the bias in its epilogue; false when the layouts or oneDNN do not allow it.
bool forward_matmul(Kind kind, dt mul, const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& out) {
  if (!contiguous_2d(x) || !contiguous_2d(w) || !contiguous_2d(out)) return false;
  if (b.defined() && (b.dtype() != DType::Float32 || b.dim() != 1 || !b.is_contiguous())) return false;
  const int64_t n = x.size(0), in = x.size(1), o = w.size(0);
  if (n == 0 || in == 0 || o == 0) return false;
  const memory::desc bias = b.defined() ? memory::desc({1, o}, dt::f32, tag::ab) : memory::desc();
  const MatmulPlan* plan = plan_for({kind, n, in, o, b.defined()}, memory::desc({n, in}, mul, tag::ab),
                                    memory::desc({in, o}, mul, tag::ba), memory::desc({n, o}, dt::f32, tag::ab), bias);
  if (plan == nullptr) return false;
  run(mul == dt::bf16 ? "linear (bf16 matmul)" : "linear (f32 matmul)", *plan, x.raw_data(), w.raw_data(),
      out.raw_data(), b.defined() ? b.raw_data() : nullptr);
  return true;
}

}  // namespace

bool linear_forward_matmul_bf16(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& out) {
  if (x.dtype() != DType::BFloat16 || w.dtype() != DType::BFloat16 || out.dtype() != DType::Float32) return false;
  return forward_matmul(Kind::Forward, dt::bf16, x, w, b, out);
}

bool linear_forward_matmul_f32(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& out) {
  if (x.dim() != 2 || w.dim() != 2 || !f32_product_for_dnnl(x, w, out, x.size(0) * x.size(1) * w.size(0)))
    return false;
  return forward_matmul(Kind::ForwardF32, dt::f32, x, w, b, out);
}

bool linear_backward_data_sgemm_f32(const Tensor& go, const Tensor& w, const Tensor& gx) {
  if (!contiguous_2d(go) || !contiguous_2d(w) || !contiguous_2d(gx)) return false;
  const int64_t n = gx.size(0), in = gx.size(1), o = go.size(1);
  if (!f32_product_for_dnnl(go, w, gx, n * in * o)) return false;
  // Row-major, no transposes: (n, o) @ (o, in) -> (n, in).
  const dnnl_status_t st = dnnl_sgemm('N', 'N', n, in, o, 1.0f, go.data_ptr<float>(), o, w.data_ptr<float>(), in,
                                      0.0f, gx.data_ptr<float>(), in);
  return st == dnnl_success;  // anything else wrote nothing the caller keeps: it recomputes grad_x
}

bool linear_backward_data_matmul_bf16(const Tensor& go, const Tensor& w, const Tensor& gx) {
  if (go.dtype() != DType::Float32 || w.dtype() != DType::BFloat16 || gx.dtype() != DType::Float32) return false;
  if (!contiguous_2d(go) || !contiguous_2d(w) || !contiguous_2d(gx)) return false;
  const int64_t n = gx.size(0), in = gx.size(1), o = go.size(1);
  if (n == 0 || in == 0 || o == 0) return false;
  const MatmulPlan* plan = plan_for({Kind::BackwardData, n, in, o, false}, memory::desc({n, o}, dt::bf16, tag::ab),
                                    memory::desc({o, in}, dt::bf16, tag::ab), memory::desc({n, in}, dt::f32, tag::ab),
                                    memory::desc());
  if (plan == nullptr) return false;
  const Tensor goh = core::to(go, DType::BFloat16);
  run("linear backward (input gradient, bf16 matmul)", *plan, goh.raw_data(), w.raw_data(), gx.raw_data(), nullptr);
  return true;
}

bool linear_backward_weights_matmul_bf16(const Tensor& go, const Tensor& x, const Tensor& gw, const Tensor& gb) {
  if (go.dtype() != DType::Float32 || x.dtype() != DType::BFloat16 || gw.dtype() != DType::Float32) return false;
  if (!contiguous_2d(go) || !contiguous_2d(x) || !contiguous_2d(gw)) return false;
  if (gb.defined() && (gb.dtype() != DType::Float32 || !gb.is_contiguous())) return false;
  const int64_t n = x.size(0), in = x.size(1), o = go.size(1);
  if (n == 0 || in == 0 || o == 0) return false;
  const MatmulPlan* plan = plan_for({Kind::BackwardWeights, n, in, o, false}, memory::desc({o, n}, dt::bf16, tag::ba),
                                    memory::desc({n, in}, dt::bf16, tag::ab), memory::desc({o, in}, dt::f32, tag::ab),
                                    memory::desc());
  if (plan == nullptr) return false;
  const Tensor goh = core::to(go, DType::BFloat16);
  run("linear backward (weight gradient, bf16 matmul)", *plan, goh.raw_data(), x.raw_data(), gw.raw_data(), nullptr);
  if (gb.defined()) {  // the bias gradient from the f32 grad_out, as the inner product's diff_bias
    const float* g = go.data_ptr<float>();
    float* out = gb.data_ptr<float>();
    std::vector<float> acc(size_t(o), 0.0f);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c < o; ++c) acc[size_t(c)] += g[r * o + c];
    for (int64_t c = 0; c < o; ++c) out[c] = acc[size_t(c)];
  }
  return true;
}

bool matmul_at_b_bf16(const uint16_t* a, const uint16_t* b, float* c, int64_t m, int64_t k, int64_t n) {
  if (m == 0 || k == 0 || n == 0) return false;
  const MatmulPlan* plan = plan_for({Kind::AtB, m, k, n, false}, memory::desc({m, k}, dt::bf16, tag::ba),
                                    memory::desc({k, n}, dt::bf16, tag::ab), memory::desc({m, n}, dt::f32, tag::ab),
                                    memory::desc());
  if (plan == nullptr) return false;
  run("matmul (bf16, a^T b)", *plan, const_cast<uint16_t*>(a), const_cast<uint16_t*>(b), c, nullptr);
  return true;
}

}  // namespace ember::cpu
