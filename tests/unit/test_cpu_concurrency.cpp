// CPU kernels called from two host threads at once (data-parallel ranks as threads, a trainer and
// an evaluator): each thread's results must be bit-identical to the same work run alone. The ops
// of a training step are covered forward and backward, then lenet5 training as a whole.
#include <gtest/gtest.h>

#include <functional>
#include <thread>
#include <vector>

#include <ember/ember.h>

using namespace ember;
namespace F = ember::nn::functional;

namespace {

// Every output and gradient of one case, flattened, in a fixed order.
using Outputs = std::vector<std::vector<float>>;
// A case builds its inputs from `seed` (the two threads get different data, as ranks do) and
// returns what it computed.
using Case = std::function<Outputs(uint64_t seed)>;

constexpr int kThreadsPerCaller = 2;  // OpenMP threads of each calling thread

// Runs `c` on two host threads at once, `reps` times, and checks each thread's outputs against a
// run of the same seed alone (in a thread of its own, with the same OpenMP thread count).
void expect_concurrent_matches_alone(const Case& c, int reps) {
  const uint64_t seeds[2] = {11, 22};
  Outputs alone[2], together[2];
  for (int r = 0; r < 2; ++r) {
    std::thread t([&, r] {
      set_num_threads(kThreadsPerCaller);
      alone[r] = c(seeds[r]);
    });
    t.join();
  }
  for (int rep = 0; rep < reps; ++rep) {
    std::vector<std::thread> ts;
    for (int r = 0; r < 2; ++r)
      ts.emplace_back([&, r] {
        set_num_threads(kThreadsPerCaller);
        together[r] = c(seeds[r]);
      });
    for (auto& t : ts) t.join();
    for (int r = 0; r < 2; ++r) {
      ASSERT_EQ(together[r].size(), alone[r].size());
      for (size_t k = 0; k < alone[r].size(); ++k)
        ASSERT_EQ(together[r][k], alone[r][k]) << "repetition " << rep << ", thread " << r << ", output " << k;
    }
  }
}

Tensor leaf(Shape shape, Generator& g) {
  Tensor t = randn(std::move(shape), {}, &g);
  t.requires_grad_();
  return t;
}

// loss = sum(y * w) for a fixed random w: every element of y gets its own gradient.
Tensor weighted_sum(const Tensor& y, Generator& g) { return (y * randn(y.shape(), {}, &g)).sum(); }

Outputs values(std::initializer_list<Tensor> ts) {
  Outputs out;
  for (const Tensor& t : ts) out.push_back(t.to_vector<float>());
  return out;
}

// conv2d forward, input and weight gradient (oneDNN primitives cached per geometry and shared by
// the threads), at lenet5's two geometries with a batch of 4.
Outputs conv_case(uint64_t seed, int64_t c_in, int64_t c_out, int64_t size, int64_t pad) {
  Generator g(seed);
  Tensor x = leaf({4, c_in, size, size}, g), w = leaf({c_out, c_in, 5, 5}, g), b = leaf({c_out}, g);
  Tensor y = F::conv2d(x, w, b, {.padding = {pad, pad}});
  weighted_sum(y, g).backward();
  return values({y, x.grad(), w.grad(), b.grad()});
}

}  // namespace

TEST(CpuConcurrency, Conv2dForwardAndBackward) {
  expect_concurrent_matches_alone([](uint64_t s) { return conv_case(s, 1, 6, 28, 2); }, 10);
  expect_concurrent_matches_alone([](uint64_t s) { return conv_case(s, 6, 16, 14, 0); }, 10);
}

TEST(CpuConcurrency, LinearForwardAndBackward) {
  expect_concurrent_matches_alone(
      [](uint64_t s) {
        Generator g(s);
        Tensor x = leaf({4, 400}, g), w = leaf({120, 400}, g), b = leaf({120}, g);
        Tensor y = linear(x, w, b);
        weighted_sum(y, g).backward();
        return values({y, x.grad(), w.grad(), b.grad()});
      },
      10);
}

// Under autocast (bfloat16): linear's matmul primitives (a scratchpad per call) and the conv's
// kept f32 -> bf16 conversions (per thread), forward and backward.
TEST(CpuConcurrency, Bf16AutocastLinearAndConv2d) {
  if (!bf16_support(Device::cpu()).native) GTEST_SKIP() << "no bf16 hardware: " << bf16_support(Device::cpu()).reason;
  expect_concurrent_matches_alone(
      [](uint64_t s) {
        Generator g(s);
        Tensor x = leaf({4, 400}, g), w = leaf({120, 400}, g), b = leaf({120}, g);
        Tensor xc = leaf({4, 6, 14, 14}, g), wc = leaf({16, 6, 5, 5}, g);
        Tensor y, yc;
        {
          autocast ac;
          y = linear(x, w, b);
          yc = F::conv2d(xc, wc);
        }
        (weighted_sum(y, g) + weighted_sum(yc, g)).backward();
        return values({y, x.grad(), w.grad(), b.grad(), yc, xc.grad(), wc.grad()});
      },
      10);
}

TEST(CpuConcurrency, BatchNormReluMaxPoolCrossEntropy) {
  expect_concurrent_matches_alone(
      [](uint64_t s) {
        Generator g(s);
        // Sizes above the kernels' parallel grain (32768 elements), so OpenMP teams run.
        Tensor x = leaf({16, 8, 24, 24}, g), gamma = leaf({8}, g), beta = leaf({8}, g);
        Tensor mean = zeros({8}), var = ones({8});
        Tensor y = F::batch_norm(x, mean, var, gamma, beta, /*training=*/true);
        y = flatten(F::max_pool2d(relu(y), {.kernel = {2, 2}}), 1);
        Tensor target = randint(0, y.size(1), {16}, {.dtype = DType::Int64}, &g);
        Tensor loss = F::cross_entropy(y, target);
        loss.backward();
        return values({loss, x.grad(), gamma.grad(), beta.grad(), mean, var});
      },
      10);
}

TEST(CpuConcurrency, OptimizerSteps) {
  expect_concurrent_matches_alone(
      [](uint64_t s) {
        Generator g(s);
        Tensor p1 = leaf({40000}, g), p2 = leaf({40000}, g);
        optim::SGD sgd(std::vector<Tensor>{p1}, {.lr = 0.1, .momentum = 0.9, .weight_decay = 1e-4});
        optim::AdamW adamw(std::vector<Tensor>{p2}, {.lr = 1e-2});
        for (int step = 0; step < 2; ++step) {
          sgd.zero_grad();
          adamw.zero_grad();
          (weighted_sum(p1 * p1, g) + weighted_sum(p2 * p2, g)).backward();
          sgd.step();
          adamw.step();
        }
        return values({p1, p2});
      },
      4);
}

// The symptom that started this: two threads each training a lenet5 copy on different data.
TEST(CpuConcurrency, Lenet5Training) {
  expect_concurrent_matches_alone(
      [](uint64_t s) {
        Generator g(s), init(1234);
        const Tensor x = randn({4, 1, 28, 28}, {}, &g);
        const Tensor y = randint(0, 10, {4}, {.dtype = DType::Int64}, &g);
        auto model = models::create("lenet5", 10, 1, 28, &init);
        optim::SGD opt(model->parameters(), {.lr = 0.1});
        for (int step = 0; step < 2; ++step) {
          opt.zero_grad();
          F::cross_entropy(model->forward(x), y).backward();
          opt.step();
        }
        Outputs out;
        for (const Tensor& p : model->parameters()) out.push_back(p.to_vector<float>());
        return out;
      },
      6);
}
