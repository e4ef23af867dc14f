// Fast paths against their reference kernels (outputs pre-filled with sentinels, inputs and
// outputs non-zero), and the typed errors for bad input to the core ops.
#include <gtest/gtest.h>

#include <cmath>

#include <ember/ember.h>

#include "cpu/reference/core.h"
#include "kernels/kernels.h"

using namespace ember;
namespace F = ember::nn::functional;

namespace {
double max_abs(const Tensor& t) { return amax(abs(t.to(DType::Float64))).item<double>(); }
template <class F>
std::string message_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no exception>";
}
}  // namespace

TEST(Parity, BlasGemmMatchesReferenceIncludingTransposedViews) {
  Generator g(3);
  for (auto [B, M, K, N] : std::vector<std::array<int64_t, 4>>{{1, 1, 1, 1}, {2, 7, 5, 3}, {3, 64, 33, 17}, {1, 128, 256, 96}}) {
    Tensor a = randn({B, M, K}, {}, &g), b = randn({B, K, N}, {}, &g);
    Tensor ref = cpu::reference::batched_matmul(a, b);
    for (int variant = 0; variant < 3; ++variant) {
      Tensor aa = a, bb = b;
      if (variant >= 1) aa = a.transpose(1, 2).contiguous().transpose(1, 2);  // column-major view
      if (variant == 2) bb = b.transpose(1, 2).contiguous().transpose(1, 2);
      Tensor out = full({B, M, N}, std::nan(""));  // sentinel: a kernel that writes nothing fails
      kernels::batched_gemm(Device::cpu())(aa, bb, out);
      EXPECT_GT(max_abs(out), 0.0);
      EXPECT_GT(max_abs(aa), 0.0);
      EXPECT_TRUE(allclose(out, ref, 1e-4, 1e-4 * std::sqrt(double(K)))) << B << "x" << M << "x" << K << "x" << N << " variant " << variant;
    }
  }
}

// Long K and a small output take the split-K path (src/cpu/gemm.cpp) when 2+ threads run: K not a
// multiple of the 16-element slice rounding, transposed operands, float32 and float64, 1 to 3
// threads (3 leaves the last slice short), each against the reference.
TEST(Parity, SplitKGemmMatchesReference) {
  const int saved = get_num_threads();
  Generator g(31);
  for (int threads : {1, 2, 3}) {
    set_num_threads(threads);
    for (auto [M, K, N] : std::vector<std::array<int64_t, 3>>{{64, 4099, 32}, {3, 2500, 5}, {1, 2048, 1}}) {
      for (DType dt : {DType::Float32, DType::Float64}) {
        Tensor a = randn({1, M, K}, {.dtype = dt}, &g), b = randn({1, K, N}, {.dtype = dt}, &g);
        Tensor ref = cpu::reference::batched_matmul(a, b);
        for (int variant = 0; variant < 3; ++variant) {
          Tensor aa = a, bb = b;
          if (variant >= 1) aa = a.transpose(1, 2).contiguous().transpose(1, 2);
          if (variant == 2) bb = b.transpose(1, 2).contiguous().transpose(1, 2);
          Tensor out = full({1, M, N}, std::nan(""), {.dtype = dt});
          kernels::batched_gemm(Device::cpu())(aa, bb, out);
          const double tol = dt == DType::Float32 ? 1e-4 : 1e-10;
          EXPECT_TRUE(allclose(out, ref, tol, tol * std::sqrt(double(K))))
              << M << "x" << K << "x" << N << " " << dtype_name(dt) << " variant " << variant << " threads " << threads;
        }
      }
    }
  }
  set_num_threads(saved);
}

namespace {
// x @ w^T + b by the reference kernel.
Tensor reference_linear(const Tensor& x, const Tensor& w, const Tensor& b) {
  Tensor y = cpu::reference::batched_matmul(x.unsqueeze(0), w.t().contiguous().unsqueeze(0)).squeeze(0);
  return b.defined() ? add(y, b) : y;
}
}  // namespace

// linear without autograd goes through oneDNN with the weight packed once (src/cpu/linear_dnnl.cpp).
TEST(Parity, InferenceLinearMatchesReference) {
  Generator g(41);
  NoGradGuard ng;
  for (auto [N, I, O] : std::vector<std::array<int64_t, 3>>{{1, 1, 1}, {7, 5, 3}, {256, 784, 256}, {64, 9216, 128}, {3, 2500, 5}}) {
    for (bool with_bias : {true, false}) {
      Tensor x = randn({N, I}, {}, &g), w = randn({O, I}, {}, &g), b = with_bias ? randn({O}, {}, &g) : Tensor();
      Tensor ref = reference_linear(x, w, b);
      for (int call = 0; call < 2; ++call)  // the second call uses the cached packed weight
        EXPECT_TRUE(allclose(linear(x, w, b), ref, 1e-4, 1e-4 * std::sqrt(double(I))))
            << N << "x" << I << "->" << O << " bias " << with_bias << " call " << call;
    }
  }
  // A transposed (non-contiguous) weight takes the GEMM path.
  Tensor x = randn({4, 6}, {}, &g), wt = randn({6, 3}, {}, &g);
  EXPECT_TRUE(allclose(linear(x, wt.t(), Tensor()), reference_linear(x, wt.t().contiguous(), Tensor()), 1e-5, 1e-5));
}

// linear's weight and bias gradients in float32 (oneDNN's backward-weights primitive on the CPU)
// against the reference GEMM and sum.
TEST(Parity, LinearWeightAndBiasGradientsMatchReference) {
  Generator g(43);
  for (auto [N, I, O] : std::vector<std::array<int64_t, 3>>{{1, 1, 1}, {3, 5, 7}, {64, 784, 256}, {64, 9216, 128}}) {
    for (bool with_bias : {true, false}) {
      Tensor x = randn({N, I}, {}, &g), go = randn({N, O}, {}, &g);
      Tensor w = randn({O, I}, {}, &g).requires_grad_();
      Tensor b = with_bias ? randn({O}, {}, &g).requires_grad_() : Tensor();
      linear(x, w, b).backward(go);
      Tensor gw_ref = cpu::reference::batched_matmul(go.t().contiguous().unsqueeze(0), x.unsqueeze(0)).squeeze(0);
      EXPECT_TRUE(allclose(w.grad(), gw_ref, 1e-4, 1e-4 * std::sqrt(double(N))))
          << N << "x" << I << "->" << O << " bias " << with_bias;
      if (with_bias) {
        EXPECT_TRUE(allclose(b.grad(), cpu::reference::sum_dim(go, 0).squeeze(0), 1e-4, 1e-4 * std::sqrt(double(N))))
            << N << "x" << I << "->" << O;
      }
    }
  }
}

// The packed-weight cache must never serve a stale weight: in-place ops, copy_, optimizer steps,
// a freed weight whose memory is reused, two views of one storage at different offsets.
TEST(Parity, InferenceLinearSeesEveryWeightChange) {
  Generator g(42);
  Tensor x = randn({8, 32}, {}, &g), b = randn({16}, {}, &g);
  auto check = [&](const Tensor& w, const char* what) {
    NoGradGuard ng;
    EXPECT_TRUE(allclose(linear(x, w, b), reference_linear(x, w, b), 1e-5, 1e-4)) << what;
  };
  Tensor w = randn({16, 32}, {}, &g);
  check(w, "first use");
  {
    NoGradGuard ng;
    w.mul_(2.0);
  }
  check(w, "after mul_");
  w.copy_(randn({16, 32}, {}, &g));
  check(w, "after copy_");
  w.fill_(0.25);
  check(w, "after fill_");

  Tensor p = randn({16, 32}, {}, &g).requires_grad_();
  optim::SGD opt({p}, optim::SGDOptions{.lr = 0.5});
  check(p.detach(), "parameter before the step");
  F::cross_entropy(linear(x, p, b), randint(0, 16, {8}, {.dtype = DType::Int64}, &g)).backward();
  opt.step();
  check(p.detach(), "parameter after an optimizer step");

  for (int i = 0; i < 5; ++i) {  // the caching allocator hands the same block to the next weight
    Tensor fresh = randn({16, 32}, {}, &g);
    check(fresh, "a new weight in reused memory");
  }
  Tensor big = randn({48, 32}, {}, &g);
  for (int i = 0; i < 3; ++i) {
    check(big.narrow(0, 0, 16), "rows 0-15 of one storage");
    check(big.narrow(0, 16, 16), "rows 16-31 of the same storage");
  }
}

TEST(Parity, ReductionsMatchReference) {
  Generator g(4);
  Tensor a = randn({5, 40000}, {}, &g);  // large enough for the threaded path
  for (int64_t d = 0; d < 2; ++d) {
    Tensor out = sum(a, {d}, true);
    EXPECT_TRUE(allclose(out, cpu::reference::sum_dim(a, d), 1e-5, 1e-3)) << d;
  }
  Tensor p = a.t();  // non-contiguous
  EXPECT_TRUE(allclose(sum(p, {1}, true), cpu::reference::sum_dim(p.contiguous(), 1), 1e-5, 1e-3));
}

TEST(Parity, StridedAndContiguousElementwiseAgree) {
  Generator g(5);
  Tensor a = randn({300, 200}, {}, &g), b = randn({200, 300}, {}, &g);
  Tensor r1 = mul(a, b.t());
  Tensor r2 = mul(a, b.t().contiguous());
  EXPECT_TRUE(r1.to_vector<float>() == r2.to_vector<float>());
  Tensor big = randn({70000}, {}, &g);
  std::vector<float> v = big.to_vector<float>(), e = exp(big).to_vector<float>();
  for (size_t i = 0; i < v.size(); i += 997) EXPECT_FLOAT_EQ(e[i], std::exp(v[i]));
}

TEST(BadInput, ShapesDtypesDevices) {
  EXPECT_NE(message_of([] { matmul(ones({2, 3}), ones({2, 3})); }).find("cannot be multiplied (2x3 and 2x3)"), std::string::npos);
  EXPECT_THROW(matmul(ones({2, 3}), ones({2, 3})), ShapeError);
  EXPECT_NE(message_of([] { add(ones({2, 3}), ones({4, 3})); }).find("[2, 3] and [4, 3] cannot be broadcast"), std::string::npos);
  EXPECT_THROW(matmul(ones({2, 3}), ones({3, 2}, {.dtype = DType::Float64})), DTypeError);
  EXPECT_THROW(ones({2}).view({3}), ShapeError);
  EXPECT_THROW(ones({2, 3}).transpose(0, 5), IndexError);
  EXPECT_THROW(ones({2}).item<float>(), ShapeError);
  EXPECT_THROW(ones({2}, {.dtype = DType::Int64}).requires_grad_(), DTypeError);
  EXPECT_THROW(Device::parse("gpu0"), ValueError);
  EXPECT_EQ(Device::parse("cuda:3"), Device::cuda(3));
  EXPECT_THROW(one_hot(tensor(std::vector<int64_t>{0, 10}), 10), ValueError);
  EXPECT_THROW(set_num_threads(0), ValueError);

  // A tensor that claims to live on cuda:0 (its memory is never touched): ops must refuse to mix.
  static float fake[4];
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<StorageImpl>(fake, sizeof fake, Device::cuda(0), nullptr);
  impl->sizes = {4};
  impl->strides = {1};
  Tensor on_gpu(impl);
  std::string msg = message_of([&] { add(ones({4}), on_gpu); });
  EXPECT_NE(msg.find("same device"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cpu and cuda:0"), std::string::npos) << msg;
  EXPECT_THROW(matmul(ones({4, 4}), on_gpu), DeviceError);
  EXPECT_THROW(cat({ones({4}), on_gpu}), DeviceError);
}

TEST(BadInput, InPlaceOnLeafRequiringGrad) {
  Tensor w = ones({3}).requires_grad_();
  EXPECT_THROW(w.add_(1.0), AutogradError);
  NoGradGuard g;
  w.add_(1.0);  // allowed for parameter updates
  EXPECT_EQ(w.sum().item<float>(), 6.0f);
}

// Sums whose kept dims are one middle block (bias gradients) take the in-place (A, K, B) path; the
// others the permuted copy. Both against reference::sum_dim applied dim by dim.
TEST(Parity, ReduceSumOverOuterAndInnerDimsMatchesReference) {
  Generator g(11);
  struct Case {
    Shape shape;
    std::vector<int64_t> dims;
  };
  const std::vector<Case> cases = {{{64, 32, 9, 7}, {0, 2, 3}},  // conv bias gradient
                                   {{65, 130}, {0}},             // linear bias gradient, K >= 64
                                   {{4, 3, 5}, {0, 1}},          // kept block last (B = 1)
                                   {{4, 3, 5}, {2}},             // kept block first (A = 1)
                                   {{4, 3, 5}, {1}}};            // kept dims split: generic path
  for (const auto& c : cases) {
    for (DType dt : {DType::Float32, DType::Float64}) {
      Tensor x = randn(c.shape, {.dtype = dt}, &g);
      Tensor ref = x;
      for (auto it = c.dims.rbegin(); it != c.dims.rend(); ++it) ref = cpu::reference::sum_dim(ref, *it);
      Shape os = c.shape;
      for (int64_t d : c.dims) os[size_t(d)] = 1;
      Tensor out = full(os, std::nan(""), {.dtype = dt});
      kernels::reduce(Device::cpu())(kernels::ReduceOp::Sum, x, c.dims, out);
      EXPECT_GT(max_abs(out), 0.0);
      EXPECT_TRUE(allclose(out, ref, 1e-5, 1e-4)) << shape_str(c.shape) << " " << dtype_name(dt);
    }
  }
}

// relu_backward (one pass) against the composed ReluGrad * grad_out it replaces, on a contiguous
// and a broadcast grad_out, with exact zeros in the forward output (the kink: gradient 0).
TEST(Parity, ReluBackwardMatchesComposedFormula) {
  Generator g(5);
  for (DType dt : {DType::Float32, DType::Float64}) {
    Tensor out = relu(randn({7, 33}, {.dtype = dt}, &g));
    for (Tensor go : {randn({7, 33}, {.dtype = dt}, &g), randn({33}, {.dtype = dt}, &g).expand({7, 33})}) {
      Tensor ref = mul(go, gt(out, 0.0).to(dt));
      Tensor gx = full({7, 33}, std::nan(""), {.dtype = dt});
      kernels::relu_backward(Device::cpu())(go, out, gx);
      EXPECT_GT(max_abs(gx), 0.0);
      EXPECT_TRUE(allclose(gx, ref, 0.0, 0.0)) << dtype_name(dt);
    }
  }
}
