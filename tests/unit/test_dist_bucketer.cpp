// GradBucketer with the Gloo backend and 2 ranks: the bucket layout (reverse order, a small first
// bucket, parameters never split) and gradients that come back averaged across ranks, in any
// ready order, over two steps.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include <ember/dist/bucketer.h>
#include <ember/ember.h>

#include "support/dist.h"
#include "support/errors.h"

using namespace ember;
using ember::test::expect_error;
using ember::test::run_ranks;
using ember::test::what_of;

namespace {
// Parameters of 100, 300, 50, 200 and 10 floats with gradients rank-dependent: g = (rank+1)*(k+1)*(1+i%3).
std::vector<Tensor> make_params(int rank, int step) {
  std::vector<Tensor> ps;
  for (int64_t n : {100, 300, 50, 200, 10}) {
    Tensor p = zeros({n});
    p.requires_grad_();
    ps.push_back(p);
  }
  for (size_t k = 0; k < ps.size(); ++k) {
    Tensor g = zeros(ps[k].shape());
    float* d = g.data_ptr<float>();
    for (int64_t i = 0; i < g.numel(); ++i) d[i] = float((rank + 1) * (k + 1 + step) * (1 + i % 3));
    Tensor loss = (ps[k] * g).sum();
    loss.backward();
  }
  return ps;
}
}  // namespace

TEST(DistBucketer, LayoutIsReverseWithASmallFirstBucket) {
  EMBER_REQUIRE_GLOO();
  const auto errors = run_ranks(2, [](dist::ProcessGroup& pg) {
    auto ps = make_params(pg.rank(), 0);
    // Bytes: 400, 1200, 200, 800, 40. The first bucket (500 bytes) takes parameter 4 (40) and
    // closes before 3 (800) would overflow it; then 1000-byte buckets: {3, 2} fills one exactly,
    // 1 (1200) exceeds the cap alone and still gets a bucket, never split.
    dist::GradBucketer b(pg, ps, {.first_bucket_bytes = 500, .bucket_bytes = 1000});
    EXPECT_EQ(b.buckets(), (std::vector<std::vector<size_t>>{{4}, {3, 2}, {1}, {0}}));
  });
  for (auto& e : errors) EXPECT_FALSE(e) << what_of(e);
}

TEST(DistBucketer, GradientsAverageAcrossRanks) {
  EMBER_REQUIRE_GLOO();
  const auto errors = run_ranks(2, [](dist::ProcessGroup& pg) {
    for (int step = 0; step < 2; ++step) {
      auto ps = make_params(pg.rank(), step);
      dist::GradBucketer b(pg, ps, {.first_bucket_bytes = 500, .bucket_bytes = 1000});
      // Backward order (last first) on rank 0, another order on rank 1: buckets launch in the
      // same order regardless, because a bucket waits for all its gradients.
      if (pg.rank() == 0) {
        for (size_t k = ps.size(); k-- > 0;) b.mark_ready(k);
      } else {
        for (size_t k : {4, 3, 2, 1}) b.mark_ready(k);
      }
      b.finish();  // marks parameter 0 on rank 1
      for (size_t k = 0; k < ps.size(); ++k) {
        const auto g = ps[k].grad().to_vector<float>();
        for (size_t i = 0; i < g.size(); ++i) {
          // mean over ranks of (rank+1) is 1.5
          ASSERT_FLOAT_EQ(g[i], 1.5f * float((k + 1 + step) * (1 + i % 3))) << "param " << k << " elem " << i;
        }
      }
      expect_error<ValueError>([&] { b.mark_ready(7); }, "parameter 7 of 5");
    }
  });
  for (auto& e : errors) EXPECT_FALSE(e) << what_of(e);
}

TEST(DistBucketer, DefaultBucketsFollowPyTorch) {
  EMBER_REQUIRE_GLOO();
  const auto errors = run_ranks(2, [](dist::ProcessGroup& pg) {
    // 10 parameters of 4 MiB each: a 1 MiB first bucket still takes one whole parameter, then
    // 25 MiB buckets take 6, then the rest.
    std::vector<Tensor> ps;
    for (int i = 0; i < 10; ++i) ps.push_back(zeros({1 << 20}));
    dist::GradBucketer b(pg, ps);
    ASSERT_EQ(b.buckets().size(), 3u);
    EXPECT_EQ(b.buckets()[0], std::vector<size_t>{9});
    EXPECT_EQ(b.buckets()[1].size(), 6u);
    EXPECT_EQ(b.buckets()[2].size(), 3u);
  });
  for (auto& e : errors) EXPECT_FALSE(e) << what_of(e);
}

// The point of it all: 2 ranks with half a batch each, gradients averaged by the bucketer, end with
// the weights of one process that trains on the whole batch (within float32 rounding), and with
// bit-identical weights on both ranks.
TEST(DistBucketer, TwoRanksMatchOneProcessWithTheGlobalBatch) {
  EMBER_REQUIRE_GLOO();
  Generator data_gen(7);
  const Tensor x = randn({8, 1, 28, 28}, {}, &data_gen);
  const Tensor y = randint(0, 10, {8}, {.dtype = DType::Int64}, &data_gen);
  const int steps = 3;
  auto train = [&](const Tensor& xs, const Tensor& ys, dist::ProcessGroup* pg) {
    Generator init(1234);
    auto model = models::create("lenet5", 10, 1, 28, &init);
    auto params = model->parameters();
    optim::SGD opt(params, {.lr = 0.1});
    std::unique_ptr<dist::GradBucketer> buckets;
    if (pg != nullptr) {
      dist::broadcast_tensors(*pg, params, 0);
      buckets = std::make_unique<dist::GradBucketer>(*pg, params,
                                                     dist::GradBucketer::Options{.first_bucket_bytes = 4096});
    }
    for (int s = 0; s < steps; ++s) {
      opt.zero_grad();
      nn::functional::cross_entropy(model->forward(xs), ys).backward();
      if (buckets) buckets->finish();
      opt.step();
    }
    std::vector<float> flat;
    for (auto& p : params) {
      const auto v = p.to_vector<float>();
      flat.insert(flat.end(), v.begin(), v.end());
    }
    return flat;
  };
  const std::vector<float> reference = train(x, y, nullptr);
  std::vector<std::vector<float>> got(2);
  const auto errors = run_ranks(2, [&](dist::ProcessGroup& pg) {
    // The ranks are threads of this process here (real ranks are processes), each with 2 OpenMP
    // threads: the CPU kernels must give each rank its own results while both run at once (they
    // once did not: conv2d's cached oneDNN primitives shared one scratchpad, 1.4e-3 off here; see
    // tests/unit/test_cpu_concurrency.cpp).
    set_num_threads(2);
    const int r = pg.rank();
    got[r] = train(x.narrow(0, 4 * r, 4).contiguous(), y.narrow(0, 4 * r, 4).contiguous(), &pg);
  });
  for (auto& e : errors) ASSERT_FALSE(e) << what_of(e);
  ASSERT_EQ(got[0].size(), reference.size());
  EXPECT_EQ(got[0], got[1]) << "the ranks' weights differ";
  double max_diff = 0;
  for (size_t i = 0; i < reference.size(); ++i)
    max_diff = std::max(max_diff, double(std::abs(got[0][i] - reference[i])));
  EXPECT_LT(max_diff, 1e-5) << "2 ranks x 4 samples against 1 process x 8 samples";
  std::printf("lenet5, %d SGD steps: max |w_2ranks - w_1process| = %.3g over %zu weights\n", steps, max_diff,
              reference.size());
}

// Gradients that arrive out of bucket order on one rank (a later bucket complete first) must not
// change the order its all-reduces are issued in: collectives match by order, so rank 0 launching
// bucket 2 while rank 1 launches bucket 0 reduced different buffers together (or failed).
TEST(DistBucketer, BucketsLaunchInBucketOrderWhateverTheArrivalOrder) {
  EMBER_REQUIRE_GLOO();
  const auto errors = run_ranks(2, [](dist::ProcessGroup& pg) {
    auto ps = make_params(pg.rank(), 0);
    dist::GradBucketer b(pg, ps, {.first_bucket_bytes = 500, .bucket_bytes = 1000});  // {4}, {3, 2}, {1}, {0}
    if (pg.rank() == 0) {
      for (size_t k : {1, 0, 3, 2, 4}) b.mark_ready(k);  // buckets 2 and 3 complete before 0 and 1
    } else {
      for (size_t k : {4, 3, 2, 1, 0}) b.mark_ready(k);
    }
    b.finish();
    for (size_t k = 0; k < ps.size(); ++k) {
      const auto g = ps[k].grad().to_vector<float>();
      for (size_t i = 0; i < g.size(); ++i) ASSERT_FLOAT_EQ(g[i], 1.5f * float((k + 1) * (1 + i % 3))) << k;
    }
  });
  for (auto& e : errors) EXPECT_FALSE(e) << what_of(e);
}
