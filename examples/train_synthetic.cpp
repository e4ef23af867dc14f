// Trains a zoo model (mnistnet by default) on synthetic, separable 28x28 data: each of 10 classes
// has a fixed random prototype image, and every sample is its class's prototype plus Gaussian
// noise. Prints loss and training accuracy per epoch; exits 1 unless the last epoch reaches 95%.
//
//   train_synthetic [--model mnistnet|mlp|lenet5|resnet_small] [--epochs N] [--samples N] [--seed S]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <ember/ember.h>

using namespace ember;
namespace F = ember::nn::functional;

int main(int argc, char** argv) {
  std::string model_name = "mnistnet";
  int64_t epochs = 2, samples = 640, batch = 32;
  uint64_t seed = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--model") model_name = argv[i + 1];
    else if (flag == "--epochs") epochs = std::atoll(argv[i + 1]);
    else if (flag == "--samples") samples = std::atoll(argv[i + 1]);
    else if (flag == "--seed") seed = std::strtoull(argv[i + 1], nullptr, 10);
    else {
      std::fprintf(stderr, "unknown flag %s\n", argv[i]);
      return 2;
    }
  }

  try {
    Generator gen(seed);
    constexpr int64_t kClasses = 10, kSize = 28;
    // Data: x (N, 1, 28, 28) = prototype[label] + 0.8 * noise; labels (N) int64.
    Tensor prototypes = randn({kClasses, kSize * kSize}, {}, &gen);
    Tensor labels = randint(0, kClasses, {samples}, {.dtype = DType::Int64}, &gen);
    Tensor onehot = one_hot(labels, kClasses).to(DType::Float32);  // (N, 10)
    Tensor x = add(matmul(onehot, prototypes), mul(randn({samples, kSize * kSize}, {}, &gen), 0.8))
                   .reshape({samples, 1, kSize, kSize});

    manual_seed(seed);
    auto model = models::create(model_name, kClasses, 1, kSize, &gen);
    std::printf("%s: %lld parameters, %lld samples, batch %lld\n", model_name.c_str(),
                (long long)model->num_parameters(), (long long)samples, (long long)batch);
    optim::Adam opt(model->parameters(), {.lr = 1e-3});
    model->train();

    double accuracy = 0.0;
    for (int64_t epoch = 1; epoch <= epochs; ++epoch) {
      auto t0 = std::chrono::steady_clock::now();
      double loss_sum = 0.0;
      int64_t correct = 0;
      for (int64_t start = 0; start < samples; start += batch) {
        int64_t n = std::min(batch, samples - start);
        Tensor xb = x.narrow(0, start, n), yb = labels.narrow(0, start, n);
        Tensor logits = (*model)(xb);
        Tensor loss = F::cross_entropy(logits, yb);
        opt.zero_grad();
        loss.backward();
        opt.step();
        loss_sum += loss.item<float>() * double(n);
        correct += eq(logits.argmax(1), yb).to(DType::Int64).sum().item<int64_t>();
      }
      accuracy = double(correct) / double(samples);
      double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::printf("epoch %lld  loss %.4f  train accuracy %.1f%%  (%.2f s)\n", (long long)epoch,
                  loss_sum / double(samples), 100.0 * accuracy, secs);
    }
    if (accuracy < 0.95) {
      std::fprintf(stderr, "FAIL: training accuracy %.1f%% is below 95%%\n", 100.0 * accuracy);
      return 1;
    }
    std::printf("OK: reached %.1f%% training accuracy\n", 100.0 * accuracy);
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    if (!e.hint().empty()) std::fprintf(stderr, "hint: %s\n", e.hint().c_str());
    return 1;
  }
}
