// The MobileNet / EfficientNet activations and stochastic depth: forward and backward at the kinks
// against PyTorch 1.13's values (its vectorised CPU loop, float32 and float64), NaN, the modules,
// their model-spec types and ONNX nodes, and StochasticDepth's masks (per sample, seeded, replayable).
// The op harness (tests/harness/ops_core.cpp) checks the kernels of every backend on random values.
#include <gtest/gtest.h>

#include <cmath>
#include <ember/ember.h>

#include "ember/io/onnx.h"
#include "ember/nn/export_onnx.h"
#include "ember/nn/spec.h"

using namespace ember;
namespace F = ember::nn::functional;

namespace {

const std::vector<double> kAtKinks = {-4, -3, -1e-3, 0, 1e-3, 2, 3, 5, 6, 7};

struct Expected {
  const char* name;
  Tensor (*op)(const Tensor&);
  std::vector<double> out, grad;
};

// Values printed by torch 1.13 (F.relu6 etc. on a 64-element tensor, so the vector loop runs;
// /usr/bin/python3 on this machine), the formulas where a value is not at a kink.
std::vector<Expected> expected() {
  auto hs = [](double x) { return (x + 3) / 6; };
  auto hw = [](double x) { return x * (x + 3) / 6; };
  auto hwg = [](double x) { return x / 3 + 0.5; };
  return {
      {"relu6", &relu6, {0, 0, 0, 0, 1e-3, 2, 3, 5, 6, 6}, {0, 0, 0, 0, 1, 1, 1, 1, 0, 0}},
      {"hardsigmoid", &hardsigmoid, {0, 0, hs(-1e-3), 0.5, hs(1e-3), hs(2), 1, 1, 1, 1},
       {0, 0, 1 / 6.0, 1 / 6.0, 1 / 6.0, 1 / 6.0, 0, 0, 0, 0}},
      // x = -3: the middle formula's -0.5; x = 3: 1 (PyTorch's vector loop takes x >= 3 as the linear part)
      {"hardswish", &hardswish, {0, 0, hw(-1e-3), 0, hw(1e-3), hw(2), 3, 5, 6, 7},
       {0, -0.5, hwg(-1e-3), 0.5, hwg(1e-3), hwg(2), 1, 1, 1, 1}},
      {"silu", &silu,
       {-0.07194483984836623, -0.14227761953270035, -0.0004997500000208334, 0.0, 0.0005002499999791667,
        1.7615941559557646, 2.8577223804672998, 4.966535745378576, 5.985164261060192, 6.993622641639196},
       {-0.05266461489107291, -0.08810410601516962, 0.4995000000833333, 0.5, 0.5004999999166666, 1.0907842487848955,
        1.0881041060151693, 1.0265474324296655, 1.0123264325915249, 1.0054604970664518}},
  };
}

void expect_near_all(const Tensor& got, const std::vector<double>& want, double tol, const std::string& what) {
  std::vector<double> g = got.to(DType::Float64).to_vector<double>();
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t i = 0; i < g.size(); ++i)
    EXPECT_NEAR(g[i], want[i], tol * std::max(1.0, std::abs(want[i]))) << what << " at x = " << kAtKinks[i];
}

}  // namespace

TEST(Activations, MatchPyTorchAtTheKinks) {
  for (DType dt : {DType::Float64, DType::Float32}) {
    // Repeated to 40 elements: the float32 rows take the vectorised clone and its scalar tail.
    std::vector<double> xs;
    for (int r = 0; r < 4; ++r) xs.insert(xs.end(), kAtKinks.begin(), kAtKinks.end());
    // float32: silu's gradient loses a few bits in 1 - s (PyTorch's float32 gives the same 1.00546014 at x = 7).
    const double tol = dt == DType::Float64 ? 1e-15 : 1e-6;
    for (const Expected& e : expected()) {
      Tensor x = tensor(xs, {int64_t(xs.size())}).to(dt).requires_grad_();
      Tensor y = e.op(x);
      EXPECT_EQ(y.dtype(), dt);
      y.sum().backward();
      for (int r = 0; r < 4; ++r) {
        const std::string what = std::string(e.name) + " " + std::string(dtype_name(dt)) + " block " + std::to_string(r);
        expect_near_all(y.detach().narrow(0, r * 10, 10), e.out, tol, what + " forward");
        expect_near_all(x.grad().narrow(0, r * 10, 10), e.grad, tol, what + " backward");
      }
    }
  }
}

TEST(Activations, NanPropagatesForwardGradientsAsPyTorch) {
  // PyTorch's vector loop: NaN in, NaN out; the gradient is 0 where the select's comparisons are all
  // false for NaN and it picks 0 (relu6, hardsigmoid), NaN where the formula branch is taken.
  const double nan = std::nan("");
  const std::vector<std::pair<Tensor (*)(const Tensor&), bool>> ops = {
      {&relu6, false}, {&hardsigmoid, false}, {&hardswish, true}, {&silu, true}};
  for (DType dt : {DType::Float32, DType::Float64})
    for (auto [op, grad_is_nan] : ops) {
      Tensor x = full({33}, nan, {.dtype = dt}).requires_grad_();
      Tensor y = op(x);
      y.sum().backward();
      for (double v : y.detach().to(DType::Float64).to_vector<double>()) EXPECT_TRUE(std::isnan(v));
      for (double v : x.grad().to(DType::Float64).to_vector<double>()) EXPECT_EQ(std::isnan(v), grad_is_nan);
      if (!grad_is_nan) EXPECT_EQ(x.grad().abs().sum().item<double>(), 0.0);
    }
}

TEST(Activations, RejectIntegerAndHalfInputs) {
  EXPECT_THROW(relu6(ones({3}, {.dtype = DType::Int64})), DTypeError);
  try {
    silu(ones({3}, {.dtype = DType::BFloat16}));
    FAIL() << "no error for bfloat16";
  } catch (const DTypeError& e) {
    EXPECT_NE(std::string(e.what()).find("silu"), std::string::npos) << e.what();
  }
}

TEST(Activations, ModulesMatchFunctionsAndPrintAsPyTorch) {
  Generator gen(3);
  Tensor x = mul(randn({2, 3, 4, 4}, {}, &gen), 4.0);
  EXPECT_TRUE(allclose(nn::ReLU6()(x), relu6(x), 0, 0));
  EXPECT_TRUE(allclose(nn::Hardsigmoid()(x), hardsigmoid(x), 0, 0));
  EXPECT_TRUE(allclose(nn::Hardswish(true)(x), hardswish(x), 0, 0));  // inplace is ignored
  EXPECT_TRUE(allclose(nn::SiLU()(x), silu(x), 0, 0));
  EXPECT_EQ(nn::ReLU6().repr(), "ReLU6()");
  EXPECT_EQ(nn::ReLU6(true).repr(), "ReLU6(inplace=True)");
  EXPECT_EQ(nn::Hardsigmoid().repr(), "Hardsigmoid()");
  EXPECT_EQ(nn::Hardswish().repr(), "Hardswish()");
  EXPECT_EQ(nn::SiLU().repr(), "SiLU()");
  EXPECT_EQ(nn::StochasticDepth(0.2).repr(), "StochasticDepth(p=0.2, mode=row)");
}

TEST(Activations, SpecTypesAndOnnxNodes) {
  const char* spec = R"(
[[layer]]
type = "relu6"
[[layer]]
type = "hardsigmoid"
[[layer]]
type = "hardswish"
[[layer]]
type = "silu"
[[layer]]
type = "flatten"
[[layer]]
type = "linear"
out_features = "classes"
)";
  Generator g(0);
  auto m = nn::model_from_spec(spec, "act.toml", 10, 1, 4, &g);
  const std::vector<std::string> types = {"ReLU6", "Hardsigmoid", "Hardswish", "SiLU"};
  for (size_t i = 0; i < types.size(); ++i) EXPECT_EQ(m->named_children()[i].second->type_name(), types[i]);
  nn::OnnxExportOptions o;
  o.input_shape = {1, 4, 4};
  io::OnnxModel onnx = nn::to_onnx(*m, o);
  std::vector<std::string> ops;
  for (const auto& n : onnx.graph.nodes) ops.push_back(n.op_type);
  EXPECT_EQ(ops, (std::vector<std::string>{"Clip", "HardSigmoid", "HardSwish", "Sigmoid", "Mul", "Flatten", "Gemm"}));
  EXPECT_EQ(onnx.graph.nodes[0].inputs.size(), 3u);  // x, min, max
}

TEST(StochasticDepth, RowModeKeepsOrDropsWholeSamples) {
  Generator gen(11);
  nn::StochasticDepth sd(0.5, "row", &gen);
  Tensor x = add(randn({64, 3, 2, 2}), 10.0).requires_grad_();  // no element is 0
  Tensor y = sd(x);
  y.sum().backward();
  int kept = 0;
  for (int64_t n = 0; n < 64; ++n) {
    Tensor yn = y.detach().select(0, n), xn = x.detach().select(0, n);
    const bool dropped = yn.abs().sum().item<float>() == 0.0f;
    if (!dropped) {
      ++kept;
      EXPECT_TRUE(allclose(yn, mul(xn, 2.0), 1e-6, 0)) << "sample " << n;
    }
    // The gradient is the sample's mask: 0 or 1 / (1 - p) on every element.
    EXPECT_TRUE(allclose(x.grad().select(0, n), full_like(xn, dropped ? 0.0 : 2.0), 0, 0)) << "sample " << n;
  }
  EXPECT_GT(kept, 16);
  EXPECT_LT(kept, 48);
  // Seeded: the same generator state gives the same mask; eval and p = 0 are the identity.
  Generator a(5), b(5);
  Tensor z = randn({16, 4});
  EXPECT_TRUE(allclose(F::stochastic_depth(z, 0.3, "row", true, &a), F::stochastic_depth(z, 0.3, "row", true, &b), 0, 0));
  sd.eval();
  EXPECT_TRUE(allclose(sd(z), z, 0, 0));
  EXPECT_TRUE(allclose(F::stochastic_depth(z, 0.0, "row", true), z, 0, 0));
  EXPECT_EQ(F::stochastic_depth(z, 1.0, "row", true).abs().sum().item<float>(), 0.0f);
}

TEST(StochasticDepth, BatchModeAndErrors) {
  Tensor z = add(randn({8, 5}), 10.0);
  int all_kept = 0, all_dropped = 0;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    Generator g(seed);
    Tensor y = F::stochastic_depth(z, 0.5, "batch", true, &g);
    if (allclose(y, mul(z, 2.0), 1e-6, 0)) ++all_kept;
    else if (y.abs().sum().item<float>() == 0.0f) ++all_dropped;
  }
  EXPECT_EQ(all_kept + all_dropped, 20);
  EXPECT_GT(all_kept, 0);
  EXPECT_GT(all_dropped, 0);
  EXPECT_THROW(nn::StochasticDepth(1.5), ValueError);
  EXPECT_THROW(nn::StochasticDepth(0.1, "col"), ValueError);
  EXPECT_THROW(F::stochastic_depth(z, -0.1, "row", true), ValueError);
}
