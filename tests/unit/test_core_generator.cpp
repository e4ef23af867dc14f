// The counter-based generator (src/core/generator.cpp): Philox known-answer vectors, the same
// numbers for one seed whatever the thread count or chunking, and the distributions' basic moments.
#include <gtest/gtest.h>

#include <algorithm>

#include <ember/ember.h>

using namespace ember;

TEST(Philox, KnownAnswerVectors) {
  // Random123 kat_vectors: philox4x32 10 rounds.
  auto z = philox4x32_10({0, 0, 0, 0}, {0, 0});
  EXPECT_EQ(z, (std::array<uint32_t, 4>{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
  auto f = philox4x32_10({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu});
  EXPECT_EQ(f, (std::array<uint32_t, 4>{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
}

TEST(Philox, SameSeedSameNumbersAnyThreads) {
  const int saved = get_num_threads();
  Generator g1(42), g2(42);
  set_num_threads(1);
  Tensor a = randn({100001}, {}, &g1);
  set_num_threads(2);
  Tensor b = randn({100001}, {}, &g2);
  set_num_threads(saved);
  EXPECT_TRUE(a.to_vector<float>() == b.to_vector<float>());
  // Chunking: two fills of 8 continue the stream exactly like one fill of 16 (multiples of 4).
  Generator g3(7), g4(7);
  Tensor c = rand({16}, {}, &g3);
  Tensor d1 = rand({8}, {}, &g4), d2 = rand({8}, {}, &g4);
  EXPECT_TRUE(c.to_vector<float>() == cat({d1, d2}).to_vector<float>());
  Tensor m = randn({200000}, {.dtype = DType::Float64}, &g1);
  EXPECT_NEAR(m.mean().item<double>(), 0.0, 0.01);
  EXPECT_NEAR(ember::std(m).item<double>(), 1.0, 0.01);
  Tensor u = rand({200000}, {}, &g1);
  EXPECT_GE(amin(u).item<float>(), 0.0f);
  EXPECT_LT(amax(u).item<float>(), 1.0f);
  Tensor r = randint(3, 7, {1000}, {.dtype = DType::Int64}, &g1);
  EXPECT_EQ(amin(r).item<int64_t>(), 3);
  EXPECT_EQ(amax(r).item<int64_t>(), 6);
  Tensor p = randperm(10, &g1);
  auto pv = p.to_vector<int64_t>();
  std::sort(pv.begin(), pv.end());
  for (int i = 0; i < 10; ++i) EXPECT_EQ(pv[i], i);
}

// Dropout's float32 mask comes from a 16-blocks-at-once Philox on AVX-512 (cpu/elementwise.cpp):
// every element equals the stream's formula (generator.h) computed here one block at a time, for
// sizes around the 64-element steps, a generator offset and a seed using both key words, keep
// probabilities on and beside the 2^-24 grid, and one or two threads.
TEST(Philox, DropoutMasksFollowTheStreamFormulaElementByElement) {
  const int saved = get_num_threads();
  const uint64_t seed = 0x1234567890ABCDEFull;
  for (int threads : {1, 2})
    for (int64_t n : {1, 3, 4, 5, 63, 64, 65, 127, 1001, 40000, 65536 + 7})
      for (double p : {0.3, 0.5, 1.0 - 3 * 0x1p-24, 1.0 - (3 * 0x1p-24 + 0x1p-30), 0.9, 1e-9}) {
        set_num_threads(threads);
        Generator g(seed);
        g.reserve(4 * 5 + 2);  // the fill starts at counter block 6
        const uint64_t offset = g.offset();
        Tensor got = nn::functional::dropout(ones({n}), p, true, &g);
        set_num_threads(saved);
        ASSERT_EQ(g.offset(), offset + uint64_t((n + 3) / 4));
        const std::vector<float> v = got.to_vector<float>();
        const double keep = 1.0 - p;
        const float scale = float(1.0 / keep);
        for (int64_t i = 0; i < n; ++i) {
          const uint64_t ctr = offset + uint64_t(i / 4);
          const auto w = philox4x32_10({uint32_t(ctr), uint32_t(ctr >> 32), 0, 0}, {uint32_t(seed), uint32_t(seed >> 32)});
          const float want = double(w[i % 4] >> 8) * 0x1p-24 < keep ? scale : 0.f;
          ASSERT_EQ(v[size_t(i)], want) << "n " << n << " p " << p << " element " << i << " threads " << threads;
        }
      }
}
