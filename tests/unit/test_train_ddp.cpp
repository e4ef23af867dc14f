// The training engine data-parallel, without the CLI: 2 ranks (threads of this process, Gloo on
// loopback) through Fitter with FitOptions::process_group. They end where one process with the
// global batch ends (also with --accumulate, and when an epoch's last step leaves a rank with no
// sample), bitwise where each other end, with and without the all-reduce overlapping backward;
// stopped and resumed they end where a straight run ends; another world size cannot resume.
// Also the pieces: the loader's shards and the autograd gradient-ready hook.
#include <gtest/gtest.h>

#include <functional>
#include <set>

#include "ember/autograd/grad_hook.h"
#include "ember/ember.h"
#include "ember/train/checkpoint.h"
#include "ember/train/fit.h"
#include "support/dist.h"
#include "support/errors.h"
#include "support/files.h"
#include "support/train_cases.h"

using namespace ember;
using namespace ember::train;
using ember::test::run_ranks;
using ember::test::what_of;
namespace fs = std::filesystem;

using ember::test::flat_weights;

namespace {

FitOptions options(int64_t batch, int64_t accumulate, int64_t epochs) {
  return ember::test::fit_options(batch, accumulate, epochs, /*seed=*/3, /*log_every=*/2);
}

// Trains tiny_mlp (plain SGD, no dropout: the ranks are threads sharing the default generator) and
// returns its weights; `pg` makes it one rank of a data-parallel run.
std::vector<float> fit_mlp(const data::Dataset& tr, const data::Dataset& te, FitOptions o, dist::ProcessGroup* pg,
                         FitResult* out = nullptr, const Checkpoint* resume = nullptr) {
  auto model = test::tiny_mlp(11);
  optim::SGD opt(model->parameters(), {.lr = 0.3, .momentum = 0.9});
  o.process_group = pg;
  Fitter f(*model, opt, nullptr, false, tr, te, o);
  FitResult r = f.run(resume);
  if (out) *out = r;
  return flat_weights(*model);
}

float max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float worst = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

// Runs `body(rank's pg)` on 2 ranks and returns each rank's weights.
std::vector<std::vector<float>> two_ranks(const std::function<std::vector<float>(dist::ProcessGroup&)>& body) {
  std::vector<std::vector<float>> got(2);
  const auto errors = run_ranks(2, [&](dist::ProcessGroup& pg) {
    set_num_threads(1);
    got[size_t(pg.rank())] = body(pg);
  });
  for (auto& e : errors) EXPECT_FALSE(e) << what_of(e);
  return got;
}

}  // namespace

TEST(DataLoaderShards, RanksTogetherHoldOneProcessBatchOfWTimesB) {
  const data::Dataset ds = test::synthetic_dataset(23);
  data::LoaderOptions one;
  one.batch_size = 8, one.seed = 4, one.workers = 0;
  data::DataLoader whole(ds, one);
  const std::vector<int64_t> order = whole.epoch_order(1);
  std::vector<std::vector<int64_t>> shard(2);
  for (int r = 0; r < 2; ++r) {
    data::LoaderOptions lo = one;
    lo.batch_size = 4, lo.shard_rank = r, lo.shard_count = 2;
    data::DataLoader l(ds, lo);
    shard[size_t(r)] = l.epoch_order(1);
    EXPECT_EQ(l.epoch_size(), r == 0 ? 12 : 11);
    EXPECT_EQ(l.steps_per_epoch(), 3);
  }
  // Step k of the ranks (4 each) = batch k of the whole (8): the same samples.
  for (int64_t k = 0; k < 3; ++k) {
    std::multiset<int64_t> ranks, single;
    for (int r = 0; r < 2; ++r)
      for (int64_t i = 4 * k; i < std::min<int64_t>(4 * (k + 1), int64_t(shard[size_t(r)].size())); ++i)
        ranks.insert(shard[size_t(r)][size_t(i)]);
    for (int64_t i = 8 * k; i < std::min<int64_t>(8 * (k + 1), 23); ++i) single.insert(order[size_t(i)]);
    EXPECT_EQ(ranks, single) << "step " << k;
  }
  data::LoaderOptions bad = one;
  bad.shard_rank = 2, bad.shard_count = 2;
  test::expect_error<ValueError>([&] { data::DataLoader l(ds, bad); }, "shard_rank 2");
}

TEST(AutogradHook, EachLeafIsReportedOnceWithItsFinalGradient) {
  auto model = test::tiny_mlp(2);
  const auto params = model->parameters();
  Tensor x = randn({5, 1, 4, 4});
  std::vector<int> calls(params.size(), 0);
  {
    autograd::GradAccumulatedHook hook([&](const Tensor& leaf) {
      for (size_t i = 0; i < params.size(); ++i)
        if (params[i].is_same(leaf)) {
          ++calls[i];
          EXPECT_TRUE(leaf.grad().defined());
        }
    });
    // The input flows through the model twice: each weight's two paths are summed before it is reported.
    (model->forward(x).sum() + model->forward(x).sum()).backward();
  }
  for (size_t i = 0; i < params.size(); ++i) EXPECT_EQ(calls[i], 1) << "parameter " << i;
  model->forward(x).sum().backward();  // out of scope: not called
  for (size_t i = 0; i < params.size(); ++i) EXPECT_EQ(calls[i], 1) << "parameter " << i;
}

// 2 ranks x batch 8 = 1 process x batch 16; 103 samples: every epoch ends with a step of 7 (4 + 3).
TEST(TrainDdp, TwoRanksEqualOneProcessWithTheGlobalBatch) {
  EMBER_REQUIRE_GLOO();
  const data::Dataset tr = test::synthetic_dataset(103), te = test::synthetic_dataset(41, 3, 9);
  set_num_threads(1);
  const auto reference = fit_mlp(tr, te, options(16, 1, 3), nullptr);
  const auto got = two_ranks([&](dist::ProcessGroup& pg) { return fit_mlp(tr, te, options(8, 1, 3), &pg); });
  EXPECT_TRUE(got[0] == got[1]) << "the ranks' weights differ";
  EXPECT_LE(max_diff(reference, got[0]), 1e-5f);
  // Bitwise the same again, and with the all-reduce after backward instead of during it.
  const auto again = two_ranks([&](dist::ProcessGroup& pg) {
    FitOptions o = options(8, 1, 3);
    o.overlap_grad_reduce = pg.rank() == 0;  // a rank's choice does not change what is reduced
    o.first_bucket_bytes = 64;                // several buckets
    return fit_mlp(tr, te, o, &pg);
  });
  EXPECT_TRUE(again[0] == got[0]) << "a second 2-rank run (other buckets, overlap on one rank) differs";
}

// --accumulate composes: 2 ranks x 4 x accumulate 2 = 1 process x 16; 97 samples leave rank 1 without
// a sample in each epoch's last step (1 sample in all).
TEST(TrainDdp, AccumulationAndARankWithoutSamplesInTheLastStep) {
  EMBER_REQUIRE_GLOO();
  const data::Dataset tr = test::synthetic_dataset(97), te = test::synthetic_dataset(40, 3, 9);
  set_num_threads(1);
  const auto reference = fit_mlp(tr, te, options(16, 1, 2), nullptr);
  std::vector<FitResult> res(2);
  const auto got = two_ranks([&](dist::ProcessGroup& pg) {
    return fit_mlp(tr, te, options(4, 2, 2), &pg, &res[size_t(pg.rank())]);
  });
  EXPECT_TRUE(got[0] == got[1]);
  EXPECT_LE(max_diff(reference, got[0]), 1e-5f);
  for (const FitResult& r : res) {
    EXPECT_EQ(r.status, FitStatus::Completed) << r.message;
    EXPECT_EQ(r.step, 14);  // ceil(97 / 16) x 2
    EXPECT_EQ(r.world_size, 2);
    ASSERT_EQ(r.epochs.size(), 2u);
    EXPECT_EQ(r.epochs[1].test_acc, res[0].epochs[1].test_acc) << "the ranks evaluated differently";
  }
}

TEST(TrainDdp, StoppedAndResumedEqualsStraightAndOnlyRankZeroWrites) {
  EMBER_REQUIRE_GLOO();
  const data::Dataset tr = test::synthetic_dataset(90), te = test::synthetic_dataset(30, 3, 9);
  test::TempDir tmp("train_ddp_resume");
  const auto straight = two_ranks([&](dist::ProcessGroup& pg) { return fit_mlp(tr, te, options(8, 1, 3), &pg); });
  two_ranks([&](dist::ProcessGroup& pg) {
    FitOptions o = options(8, 1, 3);
    o.run_dir = tmp.path() / "run";
    o.stop_after_steps = 8;  // epoch 2, step 2 of 6
    FitResult r;
    auto w = fit_mlp(tr, te, o, &pg, &r);
    EXPECT_EQ(r.status, FitStatus::Interrupted);
    return w;
  });
  ASSERT_TRUE(fs::exists(tmp.path() / "run" / "checkpoints" / "latest.json"));
  const Checkpoint ck = load_checkpoint(tmp.path() / "run" / "checkpoints" / "latest.json");
  EXPECT_EQ(ck.manifest.step, 8);
  const auto resumed = two_ranks([&](dist::ProcessGroup& pg) {
    FitOptions o = options(8, 1, 3);
    o.run_dir = tmp.path() / "run";
    return fit_mlp(tr, te, o, &pg, nullptr, &ck);
  });
  EXPECT_TRUE(resumed[0] == straight[0]) << "max diff " << max_diff(resumed[0], straight[0]);
  EXPECT_TRUE(resumed[1] == straight[1]);
  // One process cannot continue a 2-rank checkpoint.
  auto model = test::tiny_mlp(11);
  optim::SGD opt(model->parameters(), {.lr = 0.3, .momentum = 0.9});
  Fitter f(*model, opt, nullptr, false, tr, te, options(16, 1, 4));
  test::expect_error<ValueError>([&] { f.resume_from(ck); }, "written by a run of 2 ranks, this one has 1");
}

// One rank's weights turn NaN right before a read (its peer's are still finite): the probe is
// gathered, so both ranks stop at that read with NonFiniteLoss; deciding alone, rank 0 would go on
// into a step whose all-reduce rank 1 never joins.
TEST(TrainDdp, NanGuardStopsEveryRankAtTheSameRead) {
  EMBER_REQUIRE_GLOO();
  const data::Dataset tr = test::synthetic_dataset(96), te = test::synthetic_dataset(30, 3, 9);
  struct PoisonAtStep : Callback {
    int64_t at;
    explicit PoisonAtStep(int64_t s) : at(s) {}
    void on_step_end(FitContext& ctx) override {
      if (ctx.step != at) return;
      NoGradGuard no_grad;
      ctx.model.parameters()[0].fill_(NAN);
    }
  };
  std::vector<FitResult> res(2);
  const auto errors = run_ranks(2, [&](dist::ProcessGroup& pg) {
    set_num_threads(1);
    auto model = test::tiny_mlp(11);
    optim::SGD opt(model->parameters(), {.lr = 0.3});
    FitOptions o = options(8, 1, 3);
    o.process_group = &pg;
    Fitter f(*model, opt, nullptr, false, tr, te, o);
    if (pg.rank() == 1) f.add_callback(std::make_shared<PoisonAtStep>(4));  // log_every 2: read at step 4
    res[size_t(pg.rank())] = f.run();
  });
  for (auto& e : errors) EXPECT_FALSE(e) << what_of(e);
  for (const FitResult& r : res) {
    EXPECT_EQ(r.status, FitStatus::NonFiniteLoss) << r.message;
    EXPECT_EQ(r.step, 4);
  }
}
