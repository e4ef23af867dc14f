// clip_grad_norm_ / clip_grad_value_ against PyTorch 2.15 (clip/<case>/ in golden/ops_nn2_v1.bin,
// written by tests/golden/make_golden_nn2.py), and their edge cases and bad inputs.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <cmath>
#include <limits>

#include "golden/golden_file.h"
#include "golden/golden_tensor.h"
#include "support/errors.h"
#include "support/test_data.h"

using namespace ember;
using ember::test::expect_error;
namespace utils = ember::nn::utils;

namespace {

const test::GoldenFile& golden() {
  static const test::GoldenFile file(test::data_path("golden/ops_nn2_v1.bin"));
  return file;
}
Tensor gold(const std::string& name) { return test::to_tensor(golden().get(name)); }

void expect_close(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  const auto g = got.to(DType::Float64).to_vector<double>(), w = want.to(DType::Float64).to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], w[i], 1e-12 * std::max(1.0, std::abs(w[i]))) << what << " [" << i << "]";
}

Tensor param_with_grad(const Tensor& grad) {
  Tensor p = zeros_like(grad).requires_grad_();
  p.set_grad(grad.clone());
  return p;
}

}  // namespace

TEST(ClipGrad, MatchesPyTorch) {
  for (const char* label : {"norm2", "norm1_no_clip", "norm_inf", "norm3", "value"}) {
    const std::string k = std::string("clip/") + label + "/";
    const int64_t kind = gold(k + "params").to_vector<int64_t>()[0];
    const auto scalars = gold(k + "scalars").to_vector<double>();
    Tensor p1 = param_with_grad(gold(k + "grad1")), p2 = param_with_grad(gold(k + "grad2"));
    if (kind == 0) {
      const Tensor total = utils::clip_grad_norm_({p1, p2}, scalars[0], scalars[1]);
      EXPECT_EQ(total.dim(), 0);
      expect_close(total, gold(k + "total_norm"), k + "total_norm");
    } else {
      utils::clip_grad_value_({p1, p2}, scalars[0]);
    }
    expect_close(p1.grad(), gold(k + "clipped1"), k + "clipped1");
    expect_close(p2.grad(), gold(k + "clipped2"), k + "clipped2");
  }
}

TEST(ClipGrad, ParametersWithoutGradientsAreSkipped) {
  Tensor none = zeros({3}).requires_grad_();
  EXPECT_EQ(utils::clip_grad_norm_({none}, 1.0).item<float>(), 0.0f);
  Tensor p = param_with_grad(tensor(std::vector<float>{3.0f, 4.0f}));
  const Tensor total = utils::clip_grad_norm_({none, p}, 1.0);
  EXPECT_FLOAT_EQ(total.item<float>(), 5.0f);
  EXPECT_EQ(total.dtype(), DType::Float32);
  EXPECT_FLOAT_EQ(p.grad().to_vector<float>()[0], 3.0f / (5.0f + 1e-6f));
  EXPECT_FALSE(none.grad().defined());
  // The gradients keep no history and the parameters do not move.
  EXPECT_FALSE(p.grad().requires_grad());
  EXPECT_EQ(p.to_vector<float>(), (std::vector<float>{0.0f, 0.0f}));
}

TEST(ClipGrad, NonFiniteNorm) {
  const float inf = std::numeric_limits<float>::infinity();
  Tensor p = param_with_grad(tensor(std::vector<float>{inf, 1.0f}));
  expect_error<ValueError>([&] { utils::clip_grad_norm_({p}, 1.0, 2.0, true); },
                           "clip_grad_norm_: the total norm of order 2 of the gradients is inf");
  EXPECT_EQ(p.grad().to_vector<float>()[1], 1.0f);  // refused before any gradient changed
  // Without the check the gradients are scaled by the non-finite norm, as PyTorch.
  EXPECT_TRUE(std::isinf(utils::clip_grad_norm_({p}, 1.0).item<float>()));
  EXPECT_TRUE(std::isnan(p.grad().to_vector<float>()[0]));
  EXPECT_EQ(p.grad().to_vector<float>()[1], 0.0f);
}

TEST(ClipGrad, BadInput) {
  Tensor p = param_with_grad(ones({2}));
  expect_error<ValueError>([&] { utils::clip_grad_norm_({p}, -1.0); }, "clip_grad_norm_: max_norm must be >= 0, got -1");
  expect_error<ValueError>([&] { utils::clip_grad_norm_({p}, std::nan("")); }, "max_norm must be >= 0");
  expect_error<ValueError>([&] { utils::clip_grad_norm_({p}, 1.0, std::nan("")); }, "norm_type is NaN");
  expect_error<ValueError>([&] { utils::clip_grad_value_({p}, -0.5); }, "clip_grad_value_: clip_value must be >= 0, got -0.5");
}
