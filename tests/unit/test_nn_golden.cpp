// Golden values from PyTorch 1.13 (tests/golden/ops_v1.bin, float64): for every recorded case of
// the nn ops (plus gelu, linear, matmul), the output and each input gradient, seeded with the
// recorded grad_output, must match to 1e-10. The params layout of each case is in README.md.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <cmath>
#include <map>
#include <set>
#include <string>

#include "golden/golden_file.h"
#include "golden/golden_tensor.h"

using namespace ember;
namespace F = ember::nn::functional;
using ember::test::GoldenFile;
using ember::test::GoldenRecord;
using ember::test::to_tensor;

namespace {

const GoldenFile& golden() {
  static const GoldenFile file(EMBER_TEST_DATA_DIR "/golden/ops_v1.bin");
  return file;
}


// The case's names below "<op>/", e.g. {"stride2", "padding1", ...}.
std::set<std::string> cases_of(const std::string& op) {
  std::set<std::string> out;
  for (const auto& n : golden().names_with_prefix(op + "/")) {
    std::string rest = n.substr(op.size() + 1);
    out.insert(rest.substr(0, rest.find('/')));
  }
  return out;
}

struct Case {
  std::string prefix;
  bool has(const std::string& k) const { return golden().has(prefix + k); }
  Tensor get(const std::string& k) const { return to_tensor(golden().get(prefix + k)); }
  Tensor leaf(const std::string& k) const { return get(k).requires_grad_(true); }
  std::vector<int64_t> params() const { return golden().get(prefix + "params").as_int64(); }
  std::vector<double> scalars() const { return golden().get(prefix + "scalars").as_double(); }
};

::testing::AssertionResult close(const Tensor& got, const Tensor& want, const std::string& what) {
  if (!got.defined()) return ::testing::AssertionFailure() << what << ": no tensor";
  if (got.sizes() != want.sizes())
    return ::testing::AssertionFailure() << what << ": shape " << shape_str(got.sizes()) << " vs "
                                         << shape_str(want.sizes());
  auto a = got.to_vector<double>(), b = want.to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i)
    if (!(std::abs(a[i] - b[i]) <= 1e-10 * std::max(1.0, std::abs(b[i]))))
      return ::testing::AssertionFailure() << what << " element " << i << ": " << a[i] << " vs " << b[i];
  return ::testing::AssertionSuccess();
}

// Runs f on the case's leaves, checks output and grad_<leaf> for each leaf name.
void check_case(const Case& c, const std::vector<std::string>& leaves,
                const std::function<Tensor(std::map<std::string, Tensor>&)>& f) {
  std::map<std::string, Tensor> in;
  for (const auto& k : leaves) in[k] = c.leaf(k);
  Tensor out = f(in);
  EXPECT_TRUE(close(out, c.get("output"), c.prefix + "output"));
  std::vector<Tensor> xs;
  for (const auto& k : leaves) xs.push_back(in[k]);
  auto grads = autograd::grad({out}, xs, {c.get("grad_output")});
  for (size_t i = 0; i < leaves.size(); ++i)
    EXPECT_TRUE(close(grads[i], c.get("grad_" + leaves[i]), c.prefix + "grad_" + leaves[i]));
}

}  // namespace

TEST(NnGolden, Conv2d) {
  auto cases = cases_of("conv2d");
  EXPECT_EQ(cases.size(), 7u);
  for (const auto& name : cases) {
    Case c{"conv2d/" + name + "/"};
    auto p = c.params();
    F::Conv2dOptions opt{.stride = {p[0], p[1]}, .padding = {p[2], p[3]}, .dilation = {p[4], p[5]}, .groups = p[6]};
    std::vector<std::string> leaves = {"input", "weight"};
    if (p[7]) leaves.push_back("bias");
    check_case(c, leaves, [&](auto& in) {
      return F::conv2d(in["input"], in["weight"], p[7] ? in["bias"] : Tensor(), opt);
    });
  }
}

TEST(NnGolden, Pooling) {
  for (const auto& name : cases_of("max_pool2d")) {
    Case c{"max_pool2d/" + name + "/"};
    auto p = c.params();
    ASSERT_EQ(p[6], 1);  // dilation is not an option of ours
    ASSERT_EQ(p[7], 1);
    F::Pool2dOptions opt{.kernel = {p[0], p[1]}, .stride = {p[2], p[3]}, .padding = {p[4], p[5]}, .ceil_mode = p[8] != 0};
    check_case(c, {"input"}, [&](auto& in) { return F::max_pool2d(in["input"], opt); });
  }
  auto avg = cases_of("avg_pool2d");
  EXPECT_EQ(avg.size(), 3u);
  for (const auto& name : avg) {
    Case c{"avg_pool2d/" + name + "/"};
    auto p = c.params();
    F::Pool2dOptions opt{.kernel = {p[0], p[1]}, .stride = {p[2], p[3]}, .padding = {p[4], p[5]},
                         .ceil_mode = p[6] != 0, .count_include_pad = p[7] != 0};
    check_case(c, {"input"}, [&](auto& in) { return F::avg_pool2d(in["input"], opt); });
  }
  for (const auto& name : cases_of("adaptive_avg_pool2d")) {
    Case c{"adaptive_avg_pool2d/" + name + "/"};
    auto p = c.params();
    check_case(c, {"input"}, [&](auto& in) { return F::adaptive_avg_pool2d(in["input"], {p[0], p[1]}); });
  }
}

TEST(NnGolden, BatchNorm) {
  auto cases = cases_of("batch_norm");
  EXPECT_EQ(cases.size(), 3u);
  for (const auto& name : cases) {
    Case c{"batch_norm/" + name + "/"};
    const bool training = c.params()[0] != 0;
    auto s = c.scalars();
    Tensor rm = c.get("running_mean"), rv = c.get("running_var");
    check_case(c, {"input", "weight", "bias"}, [&](auto& in) {
      return F::batch_norm(in["input"], rm, rv, in["weight"], in["bias"], training, s[0], s[1]);
    });
    EXPECT_TRUE(close(rm, c.get("running_mean_after"), c.prefix + "running_mean_after"));
    EXPECT_TRUE(close(rv, c.get("running_var_after"), c.prefix + "running_var_after"));
  }
}

TEST(NnGolden, Softmax) {
  for (std::string op : {"softmax", "log_softmax"}) {
    auto cases = cases_of(op);
    EXPECT_EQ(cases.size(), 2u);
    for (const auto& name : cases) {
      Case c{op + "/" + name + "/"};
      int64_t dim = c.params()[0];
      check_case(c, {"input"}, [&](auto& in) {
        return op == "softmax" ? F::softmax(in["input"], dim) : F::log_softmax(in["input"], dim);
      });
    }
  }
}

TEST(NnGolden, Losses) {
  auto reduction = [](int64_t r) {
    return r == 0 ? F::Reduction::None : r == 1 ? F::Reduction::Mean : F::Reduction::Sum;
  };
  auto ce = cases_of("cross_entropy");
  EXPECT_EQ(ce.size(), 7u);
  for (const auto& name : ce) {
    Case c{"cross_entropy/" + name + "/"};
    auto p = c.params();
    F::CrossEntropyOptions opt{.reduction = reduction(p[0]), .ignore_index = p[1], .label_smoothing = c.scalars()[0]};
    Tensor target = c.get("target");
    check_case(c, {"input"}, [&](auto& in) { return F::cross_entropy(in["input"], target, opt); });
  }
  auto nll = cases_of("nll_loss");
  EXPECT_EQ(nll.size(), 3u);
  for (const auto& name : nll) {
    Case c{"nll_loss/" + name + "/"};
    auto p = c.params();
    F::CrossEntropyOptions opt{.reduction = reduction(p[0]), .ignore_index = p[1]};
    Tensor target = c.get("target");
    check_case(c, {"input"}, [&](auto& in) { return F::nll_loss(in["input"], target, opt); });
  }
  auto mse = cases_of("mse_loss");
  EXPECT_EQ(mse.size(), 2u);
  for (const auto& name : mse) {
    Case c{"mse_loss/" + name + "/"};
    auto r = reduction(c.params()[0]);
    std::vector<std::string> leaves = {"input"};
    if (c.has("grad_target")) leaves.push_back("target");
    else c.get("target");
    Tensor fixed_target = c.get("target");
    check_case(c, leaves, [&](auto& in) {
      return F::mse_loss(in["input"], in.count("target") ? in["target"] : fixed_target, r);
    });
  }
}

TEST(NnGolden, GeluLinearMatmul) {
  for (const auto& name : cases_of("gelu")) {
    Case c{"gelu/" + name + "/"};
    check_case(c, {"input"}, [](auto& in) { return gelu(in["input"]); });
  }
  auto lin = cases_of("linear");
  EXPECT_EQ(lin.size(), 3u);
  for (const auto& name : lin) {
    Case c{"linear/" + name + "/"};
    const bool has_bias = c.params()[0] != 0;
    std::vector<std::string> leaves = {"input", "weight"};
    if (has_bias) leaves.push_back("bias");
    check_case(c, leaves, [&](auto& in) { return linear(in["input"], in["weight"], has_bias ? in["bias"] : Tensor()); });
  }
  auto mm = cases_of("matmul");
  EXPECT_EQ(mm.size(), 2u);
  for (const auto& name : mm) {
    Case c{"matmul/" + name + "/"};
    check_case(c, {"a", "b"}, [](auto& in) { return matmul(in["a"], in["b"]); });
  }
}
