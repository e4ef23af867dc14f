// Whole-model golden test against PyTorch 1.13 (tests/golden/models_v1.bin, see README.md there):
// for mnistnet, lenet5 and bncnn from the zoo, load PyTorch's initial weights with load_state_dict,
// run in eval mode (dropout off; bncnn in train mode, so batch norm uses batch statistics and
// updates its running statistics, which the SGD check compares too), and compare the logits, the mean cross-entropy loss, every parameter
// gradient, the 10 losses and final weights of SGD(lr 0.01, momentum 0.9, weight decay 1e-4), and
// the 10 losses of AdamW(lr 1e-3, weight decay 0.01). float32 throughout, so tolerances are
// float32's: |ember - torch| <= 1e-5 + 1e-4 |torch| per element. The largest differences seen are
// printed, to notice drift before it fails.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <cmath>
#include <cstdio>

#include "support/test_data.h"
#include "golden/golden_file.h"
#include "support/golden_skip.h"
#include "golden/golden_tensor.h"

using namespace ember;
namespace F = ember::nn::functional;
using ember::test::GoldenFile;
using ember::test::GoldenRecord;
using ember::test::to_tensor;

namespace {

const GoldenFile& golden() {
  static const GoldenFile file(ember::test::data_path("golden/models_v1.bin"));
  return file;
}

Tensor record(const std::string& name) { return to_tensor(golden().get(name)); }

constexpr double kRtol = 1e-4, kAtol = 1e-5;

struct DiffStats {
  double max_abs = 0.0, max_rel = 0.0;
};

// Checks every element within kAtol + kRtol |expected| and returns the largest differences.
DiffStats expect_close(const Tensor& actual, const Tensor& expected, const std::string& what) {
  DiffStats s;
  EXPECT_EQ(actual.sizes(), expected.sizes()) << what;
  if (actual.sizes() != expected.sizes()) return s;
  auto a = actual.to(DType::Float64).to_vector<double>();
  auto e = expected.to(DType::Float64).to_vector<double>();
  int64_t bad = 0, first_bad = -1;
  for (size_t i = 0; i < a.size(); ++i) {
    double d = std::abs(a[i] - e[i]);
    s.max_abs = std::max(s.max_abs, d);
    if (std::abs(e[i]) > 1e-3) s.max_rel = std::max(s.max_rel, d / std::abs(e[i]));
    if (!(d <= kAtol + kRtol * std::abs(e[i]))) {
      if (first_bad < 0) first_bad = int64_t(i);
      ++bad;
    }
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << a.size() << " elements differ; first at "
                    << first_bad << ": " << (first_bad >= 0 ? a[size_t(first_bad)] : 0.0) << " vs "
                    << (first_bad >= 0 ? e[size_t(first_bad)] : 0.0) << "; max abs diff " << s.max_abs;
  return s;
}

void report(const std::string& model, const std::string& what, const DiffStats& s) {
  std::printf("[golden] %-9s %-22s max abs diff %.3g, max rel diff %.3g\n", model.c_str(), what.c_str(),
              s.max_abs, s.max_rel);
}
void merge(DiffStats& into, const DiffStats& s) {
  into.max_abs = std::max(into.max_abs, s.max_abs);
  into.max_rel = std::max(into.max_rel, s.max_rel);
}

// The zoo model with PyTorch's initial weights, in the mode make_golden.py recorded it in.
std::shared_ptr<nn::Module> load_model(const std::string& name) {
  auto model = models::create(name);
  StateDict sd;
  std::string prefix = name + "/param/";
  for (const auto& n : golden().names_with_prefix(prefix)) sd.insert(n.substr(prefix.size()), record(n));
  model->load_state_dict(sd);  // strict: the keys must match exactly
  if (name == "bncnn") model->train();  // make_golden.py's TRAIN_MODE
  else model->eval();
  return model;
}

std::vector<double> train_losses(const std::string& name, optim::Optimizer& opt, nn::Module& model) {
  Tensor x = record(name + "/input"), y = record(name + "/labels");
  std::vector<double> losses;
  for (int step = 0; step < 10; ++step) {
    opt.zero_grad();
    Tensor loss = F::cross_entropy(model(x), y);
    losses.push_back(loss.item<float>());
    loss.backward();
    opt.step();
  }
  return losses;
}

class GoldenModels : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { EMBER_SKIP_IF_GOLDEN_LEFT_OUT(ember::test::data_path("golden/models_v1.bin")); }
};

}  // namespace

TEST_P(GoldenModels, ForwardLossAndGradients) {
  const std::string name = GetParam();
  auto model = load_model(name);
  Tensor x = record(name + "/input"), y = record(name + "/labels");
  Tensor logits = (*model)(x);
  report(name, "logits", expect_close(logits, record(name + "/logits"), name + " logits"));
  Tensor loss = F::cross_entropy(logits, y);
  report(name, "loss", expect_close(loss, record(name + "/loss"), name + " loss"));
  loss.backward();
  DiffStats grads;
  for (auto& [key, p] : model->named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << key;
    merge(grads, expect_close(p.grad(), record(name + "/grad/" + key), name + " grad " + key));
  }
  report(name, "grads (all params)", grads);
}

TEST_P(GoldenModels, TenStepsOfSGD) {
  const std::string name = GetParam();
  auto model = load_model(name);
  optim::SGD opt(model->parameters(), {.lr = 0.01, .momentum = 0.9, .weight_decay = 1e-4});
  std::vector<double> losses = train_losses(name, opt, *model);
  report(name, "sgd losses",
         expect_close(tensor(losses), record(name + "/sgd_losses").to(DType::Float64), name + " SGD losses"));
  DiffStats params;
  for (auto& [key, t] : model->state_dict())
    merge(params, expect_close(t, record(name + "/sgd_final/" + key), name + " after SGD: " + key));
  report(name, "sgd final params", params);
}

TEST_P(GoldenModels, TenStepsOfAdamW) {
  const std::string name = GetParam();
  auto model = load_model(name);
  optim::AdamW opt(model->parameters(), {.lr = 1e-3, .weight_decay = 0.01});
  std::vector<double> losses = train_losses(name, opt, *model);
  report(name, "adamw losses",
         expect_close(tensor(losses), record(name + "/adamw_losses").to(DType::Float64), name + " AdamW losses"));
}

INSTANTIATE_TEST_SUITE_P(Zoo, GoldenModels, ::testing::Values("mnistnet", "lenet5", "bncnn"),
                         [](const auto& info) { return info.param; });
