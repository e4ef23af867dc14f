// Fine-tuning (ember/train/transfer.h, nn::Module::freeze): the head is the classifier, a frozen
// backbone gets no gradients and keeps its weights and batch-norm statistics through training
// steps, the backbone's own learning rate (also under onecycle), and unfreezing after N epochs.
#include <gtest/gtest.h>

#include "ember/ember.h"
#include "ember/nn/models.h"
#include "ember/optim/lr_scheduler.h"
#include "ember/optim/registry.h"
#include "ember/train/transfer.h"

using namespace ember;
using namespace ember::train;

namespace {

// One SGD step of `model` on a fixed batch of 1x28x28 images.
void sgd_step(nn::Module& model, optim::Optimizer& opt, uint64_t seed) {
  Generator g(seed);
  Tensor x = randn({8, 1, 28, 28}, {}, &g);
  Tensor y = randint(0, 10, {8}, {.dtype = DType::Int64}, &g);
  opt.zero_grad();
  nn::functional::cross_entropy(model.forward(x), y).backward();
  opt.step();
}

std::map<std::string, Tensor> snapshot(const nn::Module& m) {
  std::map<std::string, Tensor> out;
  for (const auto& [k, t] : m.state_dict()) out[k] = t.clone();
  return out;
}

}  // namespace

TEST(Transfer, TheHeadIsTheClassifier) {
  EXPECT_EQ(head_prefix(*models::lenet5()), "fc3.");
  EXPECT_EQ(head_prefix(*models::bncnn()), "fc.");
  EXPECT_EQ(head_prefix(*models::bncnn48_fc128()), "fc2.");
  const FreezeCounts c = count_backbone(*models::lenet5());
  EXPECT_EQ(c.head, "fc3");
  EXPECT_EQ(c.head_params, 84 * 10 + 10);
  EXPECT_EQ(c.backbone_params + c.head_params, models::lenet5()->num_parameters());
}

TEST(Transfer, AFrozenBackboneGetsNoGradientsAndKeepsItsWeightsAndStatistics) {
  Generator init(3);
  auto model = models::bncnn(10, 1, 28, &init);
  const FreezeCounts c = freeze_backbone(*model);
  EXPECT_EQ(model->num_parameters(true), c.head_params);
  model->train();  // the engine's call at each epoch: frozen batch norms stay in evaluation mode
  for (const auto& [name, m] : model->named_modules())
    EXPECT_EQ(m->is_training(), name == "fc") << name;
  const auto before = snapshot(*model);
  optim::SGD opt(model->parameters(), {.lr = 0.1, .momentum = 0.9});
  for (uint64_t s = 0; s < 3; ++s) sgd_step(*model, opt, s);
  for (const auto& [k, p] : model->named_parameters())
    EXPECT_EQ(p.grad().defined(), k.starts_with("fc.")) << k;  // no gradient computed for frozen layers
  for (const auto& [k, t] : model->state_dict()) {
    const bool same = allclose(before.at(k), t, 0, 0);
    EXPECT_EQ(same, !k.starts_with("fc.")) << k;  // running statistics included
  }
  // Unfrozen, everything trains again, batch norms included.
  model->freeze(false);
  EXPECT_EQ(model->num_parameters(true), model->num_parameters());
  model->train();
  for (const auto& [name, m] : model->named_modules()) EXPECT_TRUE(m->is_training()) << name;
  const auto mid = snapshot(*model);
  sgd_step(*model, opt, 9);
  for (const auto& [k, t] : model->state_dict())
    if (!k.ends_with("num_batches_tracked")) EXPECT_FALSE(allclose(mid.at(k), t, 0, 0)) << k;
}

TEST(Transfer, AModelWithoutASeparateClassifierCannotBeFrozen) {
  nn::Linear lonely(4, 2);
  EXPECT_THROW(freeze_backbone(lonely), ValueError);
}

TEST(Transfer, TheBackboneHasItsOwnLearningRateUnderEverySchedule) {
  auto model = models::lenet5();
  auto groups = backbone_and_head_groups(*model, 1e-4);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].params.size(), 8u);  // conv1, conv2, fc1, fc2: weight and bias
  EXPECT_EQ(groups[1].params.size(), 2u);  // fc3
  auto opt = optim::find_optimizer("adamw").make(groups, {.lr = 1e-2, .weight_decay = 0.01});
  ASSERT_EQ(opt->param_groups().size(), 2u);
  EXPECT_DOUBLE_EQ(opt->param_groups()[0].lr, 1e-4);
  EXPECT_DOUBLE_EQ(opt->param_groups()[1].lr, 1e-2);
  // onecycle: each group peaks at its own lr, on the same curve.
  auto sched = optim::make_schedule(optim::find_schedule("onecycle"), *opt, {.lr = 1e-2, .epochs = 1, .steps_per_epoch = 10});
  double peak0 = 0, peak1 = 0;
  for (int i = 0; i < 10; ++i) {
    peak0 = std::max(peak0, opt->param_groups()[0].lr), peak1 = std::max(peak1, opt->param_groups()[1].lr);
    EXPECT_NEAR(opt->param_groups()[0].lr * 100, opt->param_groups()[1].lr, 1e-15) << i;
    if (i < 9) sched->step();
  }
  EXPECT_DOUBLE_EQ(peak0, 1e-4);
  EXPECT_DOUBLE_EQ(peak1, 1e-2);
  // One group: the single-peak form, to the bit.
  auto one = optim::find_optimizer("adamw").make({{.params = model->parameters()}}, {.lr = 6e-3});
  optim::OneCycleLR a(*one, 6e-3, 40);
  auto two = optim::find_optimizer("adamw").make({{.params = model->parameters()}}, {.lr = 6e-3});
  optim::OneCycleLR b(*two, std::vector<double>{6e-3}, 40);
  for (int i = 0; i < 40; ++i) {
    EXPECT_EQ(one->param_groups()[0].lr, two->param_groups()[0].lr) << i;
    if (i < 39) a.step(), b.step();
  }
  EXPECT_THROW(optim::OneCycleLR(*one, std::vector<double>{1e-3, 1e-2}, 10), ValueError);
}

TEST(Transfer, UnfreezeAfterUnfreezesAtThatEpochOnly) {
  auto model = models::lenet5();
  freeze_backbone(*model);
  optim::SGD opt(model->parameters(), {.lr = 0.1});
  FitOptions fo;
  FitContext ctx(fo, *model, opt);
  std::vector<std::string> said;
  UnfreezeAfter cb(2, [&](int64_t epoch, int64_t trainable) {
    said.push_back(std::to_string(epoch) + " " + std::to_string(trainable));
  });
  for (int64_t e = 0; e < 2; ++e) {
    ctx.epoch = e;
    cb.on_epoch_begin(ctx);
    EXPECT_TRUE(model->is_frozen()) << e;
  }
  ctx.epoch = 2;
  cb.on_epoch_begin(ctx);
  EXPECT_FALSE(model->is_frozen());
  EXPECT_EQ(model->num_parameters(true), model->num_parameters());
  ASSERT_EQ(said.size(), 1u);
  EXPECT_EQ(said[0], "3 " + std::to_string(model->num_parameters()));
  cb.on_epoch_begin(ctx);  // a later epoch: nothing more to say
  EXPECT_EQ(said.size(), 1u);
}
