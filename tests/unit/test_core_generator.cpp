// The counter-based generator (src/core/generator.cpp): Philox known-answer vectors, the same
// numbers for one seed whatever the thread count or chunking, and the distributions' basic moments.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include <ember/ember.h>

#include "core/isa.h"
#include "kernels/kernels.h"

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

// Dropout runs in one pass each way on the CPU (cpu/elementwise.cpp: the keep decisions as bits);
// forward and backward must give the bits of the mask fill (random(Bernoulli)) followed by mul,
// which CUDA and other dtypes still run: negative values (-0 where dropped), NaN and infinities
// (NaN where dropped: x * 0), denormals, sizes around the 64-element words, one or two threads, the
// AVX-512 kernels and the plain loops (cpu::allow_avx512(false): a CPU without AVX-512).
TEST(Philox, DropoutInOnePassEqualsTheMaskFillAndMulForwardAndBackward) {
  const int saved = get_num_threads();
  const uint64_t seed = 0xFEDCBA9876543210ull;
  const auto bits_of = [](const Tensor& t) {
    std::vector<float> v = t.to_vector<float>();
    std::vector<uint32_t> b(v.size());
    std::memcpy(b.data(), v.data(), v.size() * sizeof(float));
    return b;
  };
  const float specials[] = {-0.0f,
                            -2.5f,
                            std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::denorm_min()};
  for (bool vec : {true, false})
    for (int threads : {1, 2})
      for (int64_t n : {1, 5, 63, 64, 65, 129, 1001, 40000, 65536 + 7})
        for (double p : {0.1, 0.5, 0.9}) {
          set_num_threads(threads);
          Generator gx(1), gg(2);
          std::vector<float> xv = randn({n}, {}, &gx).to_vector<float>();
          std::vector<float> gv = randn({n}, {}, &gg).to_vector<float>();
          for (size_t k = 0; k < std::size(specials) && 7 * k < size_t(n); ++k) {
            xv[7 * k] = specials[k];
            gv[size_t(n) - 1 - 7 * k] = specials[k];
          }
          Tensor x = tensor(xv).requires_grad_(true), go = tensor(gv);
          Generator g(seed);
          g.reserve(9);
          const uint64_t offset = g.offset();
          cpu::allow_avx512(vec);
          Tensor y = nn::functional::dropout(x, p, true, &g);
          y.backward(go);
          cpu::allow_avx512(true);
          ASSERT_EQ(g.offset(), offset + uint64_t((n + 3) / 4));
          Tensor mask = empty({n});
          kernels::random(DeviceType::CPU)(kernels::RandomDist::Bernoulli, mask, seed, offset, 1.0 - p,
                                           1.0 / (1.0 - p));
          const Tensor want_y = mul(x.detach(), mask), want_g = mul(go, mask);
          set_num_threads(saved);
          const std::string where =
              "n " + std::to_string(n) + " p " + std::to_string(p) + " threads " + std::to_string(threads) +
              " avx512 " + std::to_string(vec);
          EXPECT_EQ(bits_of(y), bits_of(want_y)) << where;
          EXPECT_EQ(bits_of(x.grad()), bits_of(want_g)) << where;
        }
}
