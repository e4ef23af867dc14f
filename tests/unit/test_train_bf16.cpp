// The training engine in bf16 mixed precision (train::AutocastPolicy, what `--precision bf16` sets),
// without the CLI: a run stopped at a checkpoint and resumed ends bitwise equal to the straight
// run; checkpoints hold the float32 master weights and optimizer state, never bf16-rounded copies;
// a model trained in one precision evaluates in the other. Skipped on a CPU without AVX512-BF16 or
// AMX-BF16, where ember refuses bf16 rather than emulate it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "ember/ember.h"
#include "ember/train/fit.h"
#include "support/bf16.h"
#include "support/files.h"
#include "support/train_cases.h"

using namespace ember;
using namespace ember::train;
namespace fs = std::filesystem;

using ember::test::flat_weights;

namespace {

// A conv layer and a linear layer, the two ops autocast lowers (plus dropout, so the checkpointed
// generator matters): (N, 1, 4, 4) -> Conv2d(1, 8, 3, pad 1) -> ReLU -> Flatten -> Dropout ->
// Linear(128, 3).
std::shared_ptr<nn::Sequential> tiny_cnn(uint64_t seed) {
  Generator gen(seed);
  auto m = std::make_shared<nn::Sequential>();
  m->push_back(std::make_shared<nn::Conv2d>(1, 8, 3, nn::Conv2dOptions{.padding = {1, 1}}, &gen));
  m->push_back(std::make_shared<nn::ReLU>());
  m->push_back(std::make_shared<nn::Flatten>());
  m->push_back(std::make_shared<nn::Dropout>(0.25));
  m->push_back(std::make_shared<nn::Linear>(128, 3, true, &gen));
  return m;
}

bool representable_in_bf16(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  return (bits & 0xffffu) == 0;
}

struct FitRun {
  FitResult result;
  std::vector<float> weights;  // parameters() in order, flattened
  std::shared_ptr<nn::Sequential> model;
};

const data::Dataset& train_set() {
  static const data::Dataset d = test::synthetic_dataset(96);
  return d;
}
const data::Dataset& test_set() {
  static const data::Dataset d = test::synthetic_dataset(48, 3, 9);
  return d;
}

// Three epochs of 4 optimizer steps (3 micro-batches of 8) with AdamW and a per-step one-cycle
// schedule, in bf16 (or float32), from scratch or from `ck`, stopping after `stop_after` steps.
FitRun fit(const fs::path& run_dir, bool bf16, int64_t stop_after = 0, const Checkpoint* ck = nullptr) {
  auto model = tiny_cnn(5);
  optim::AdamW opt(model->parameters(), {.lr = 0.01});
  optim::OneCycleLR sched(opt, 0.01, optimizer_steps_per_epoch(96, 8, 3) * 3);
  FitOptions o = ember::test::fit_options(/*batch=*/8, /*accumulate=*/3, /*epochs=*/3, /*seed=*/3, /*log_every=*/2);
  o.run_dir = run_dir;
  o.stop_after_steps = stop_after;
  Fitter f(*model, opt, &sched, true, train_set(), test_set(), o);
  if (bf16) f.step().set_precision(std::make_shared<AutocastPolicy>(DeviceType::CPU, DType::BFloat16));
  FitResult result = f.run(ck);
  return {result, flat_weights(*model), model};
}

// The logits of the whole test set, in eval mode, without autograd.
Tensor test_logits(nn::Module& model) {
  NoGradGuard ng;
  model.eval();
  return model(mul(test_set().images.to(DType::Float32), 1.0 / 255));
}

}  // namespace

TEST(TrainBf16, ResumeAtAStepBoundaryIsBitwiseTheStraightRun) {
  EMBER_SKIP_WITHOUT_FAST_BF16();
  test::TempDir dir("bf16_resume");
  const FitRun straight = fit(dir.path() / "straight", true);
  ASSERT_EQ(straight.result.status, FitStatus::Completed) << straight.result.message;
  EXPECT_EQ(straight.result.step, 12);
  const FitRun cut = fit(dir.path() / "cut", true, 6);  // mid-epoch 2
  ASSERT_EQ(cut.result.status, FitStatus::Interrupted) << cut.result.message;
  Checkpoint ck = load_checkpoint(dir.path() / "cut" / "checkpoints" / "latest.json");
  EXPECT_EQ(ck.manifest.step, 6);
  EXPECT_EQ(ck.manifest.batch_in_epoch, 6);  // 2 steps x 3 micro-batches
  const FitRun resumed = fit(dir.path() / "cut", true, 0, &ck);
  ASSERT_EQ(resumed.result.status, FitStatus::Completed) << resumed.result.message;
  EXPECT_EQ(resumed.result.step, 12);
  EXPECT_EQ(resumed.weights, straight.weights);  // bitwise
  EXPECT_EQ(resumed.result.epochs.back().train_loss, straight.result.epochs.back().train_loss);
  // And the runs were in bf16: the float32 run from the same start ends elsewhere.
  const FitRun fp32 = fit(dir.path() / "fp32", false);
  ASSERT_EQ(fp32.result.status, FitStatus::Completed) << fp32.result.message;
  EXPECT_NE(fp32.weights, straight.weights) << "the bf16 precision stage changed nothing";
}

TEST(TrainBf16, CheckpointsKeepFloat32MasterWeightsAndOptimizerState) {
  EMBER_SKIP_WITHOUT_FAST_BF16();
  test::TempDir dir("bf16_master");
  const FitRun run = fit(dir.path(), true);
  ASSERT_EQ(run.result.status, FitStatus::Completed) << run.result.message;
  const Checkpoint ck = load_checkpoint(dir.path() / "checkpoints" / "latest.json");
  EXPECT_EQ(ck.manifest.step, 12);
  std::vector<float> saved;
  int64_t model_tensors = 0, optim_tensors = 0;
  for (const auto& [name, t] : ck.tensors) {
    EXPECT_FALSE(is_half(t.dtype())) << name << " is stored as " << dtype_name(t.dtype());
    if (t.dim() > 0 && (name.starts_with("model/") || name.starts_with("optim/")))
      EXPECT_EQ(t.dtype(), DType::Float32) << name << " is stored as " << dtype_name(t.dtype());
    if (name.starts_with("model/")) {
      ++model_tensors;
      // Exactly the weights the run ended with.
      EXPECT_TRUE(allclose(t, run.model->state_dict().at(name.substr(6)), 0, 0)) << name;
      auto v = t.to_vector<float>();
      saved.insert(saved.end(), v.begin(), v.end());
    } else if (name.starts_with("optim/")) {
      ++optim_tensors;
    }
  }
  EXPECT_EQ(model_tensors, 4);  // conv and linear, weight and bias
  EXPECT_GE(optim_tensors, 8);  // AdamW's two moments per parameter
  // Master weights: float32 values, not bf16 ones widened (those would have 16 zero low bits).
  int64_t below_bf16 = 0;
  for (float v : saved) below_bf16 += representable_in_bf16(v) ? 0 : 1;
  EXPECT_GT(below_bf16, int64_t(saved.size()) * 9 / 10) << below_bf16 << " of " << saved.size();
}

TEST(TrainBf16, AModelTrainedInOnePrecisionEvaluatesInTheOther) {
  EMBER_SKIP_WITHOUT_FAST_BF16();
  test::TempDir dir("bf16_eval");
  for (const bool trained_bf16 : {true, false}) {
    const std::string what = trained_bf16 ? "trained in bf16" : "trained in fp32";
    const fs::path run_dir = dir.path() / (trained_bf16 ? "bf16" : "fp32");
    const FitRun run = fit(run_dir, trained_bf16);
    ASSERT_EQ(run.result.status, FitStatus::Completed) << what << ": " << run.result.message;
    // A fresh model from the checkpoint alone, as `ember eval` loads it.
    auto model = tiny_cnn(99);
    const Checkpoint ck = load_checkpoint(run_dir / "checkpoints" / "latest.json");
    NamedTensors into;
    for (const auto& [key, t] : model->state_dict()) into.emplace_back(key, t);
    restore_tensors(ck, "model/", into);
    EXPECT_EQ(flat_weights(*model), run.weights) << what;

    const EvalResult fp32 = evaluate(*model, test_set(), 64, Device::cpu());
    EvalResult bf16;
    Tensor logits_bf16;
    {
      autocast ac;
      bf16 = evaluate(*model, test_set(), 64, Device::cpu());
      logits_bf16 = test_logits(*model);
    }
    const Tensor logits_fp32 = test_logits(*model);
    std::printf("%s: test accuracy fp32 %.4f, bf16 %.4f; loss fp32 %.5f, bf16 %.5f\n", what.c_str(), fp32.accuracy,
                bf16.accuracy, fp32.loss, bf16.loss);
    EXPECT_GT(fp32.accuracy, 0.9) << what << ": the run did not learn the synthetic set";
    // 48 images: bf16 rounding may flip a prediction near a tie, not more.
    EXPECT_NEAR(bf16.accuracy, fp32.accuracy, 2.0 / 48) << what;
    EXPECT_NEAR(bf16.loss, fp32.loss, 0.02 * std::max(1.0, fp32.loss)) << what;
    // The logits: the linear (128 -> 3, far below what pays in bf16) stays float32 without autograd
    // (src/ops/autocast.cpp), the 1 -> 8 conv is lowered and writes bfloat16 (issue 24): close to the
    // float32 logits (bf16 roundings of the conv's operands and output, 2^-6 of the largest) and not
    // equal; the same forward with autograd (as training runs it) multiplies both layers in bf16:
    // close too, and not equal.
    Tensor logits_grad;
    {
      autocast ac;
      model->eval();
      logits_grad = (*model)(mul(test_set().images.to(DType::Float32), 1.0 / 255)).detach();
    }
    NoGradGuard ng;
    const double diff = amax(abs(sub(logits_bf16, logits_fp32))).item<float>();
    const double scale = amax(abs(logits_fp32)).item<float>();
    EXPECT_GT(diff, 0.0) << what << ": the conv was not lowered to bf16 in inference";
    EXPECT_LE(diff, scale / 64) << what;
    const double diff_grad = amax(abs(sub(logits_grad.detach(), logits_fp32))).item<float>();
    EXPECT_GT(diff_grad, 0.0) << what << ": the forward with autograd gave exactly the float32 logits";
    EXPECT_LE(diff_grad, scale / 64) << what;
  }
}
