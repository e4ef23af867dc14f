// Data loader benchmark on Fashion-MNIST, all in one run:
//   1. time to open + decode the whole training set (gzip IDX -> uint8 tensor), next to Python's
//      gzip + numpy.frombuffer doing the same (bench/decode_fashion_mnist.py, /usr/bin/python3);
//   2. loader throughput: batches of 64, normalise + random crop (pad 2) + horizontal flip, with
//      0/1/2 workers and the resident path;
//   3. mnistnet (pytorch/examples MNIST net, written with the functional ops) training steps/s on
//      the CPU at batch 64, and the loader-to-training rate ratio;
//   4. short training loops fed by the loader (0 and 1 worker), with the loader's wait accounting.
// Usage: bench_loader [path/to/decode_fashion_mnist.py]   (run from the repository root)
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "ember/autograd/node.h"
#include "ember/data/loader.h"
#include "ember/ops.h"

using namespace ember;
using namespace ember::data;
namespace F = ember::nn::functional;

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

struct MnistNet {
  Tensor w1, b1, w2, b2, w3, b3, w4, b4;
  Generator gen{1234};
  explicit MnistNet(Generator& g) {
    auto param = [&](Shape s, double fan_in) { return (randn(s, {}, &g) * (1.0 / std::sqrt(fan_in))).requires_grad_(); };
    w1 = param({32, 1, 3, 3}, 9);
    b1 = zeros({32}).requires_grad_();
    w2 = param({64, 32, 3, 3}, 288);
    b2 = zeros({64}).requires_grad_();
    w3 = param({128, 9216}, 9216);
    b3 = zeros({128}).requires_grad_();
    w4 = param({10, 128}, 128);
    b4 = zeros({10}).requires_grad_();
  }
  std::vector<Tensor*> params() { return {&w1, &b1, &w2, &b2, &w3, &b3, &w4, &b4}; }
  Tensor forward(const Tensor& x) {
    Tensor h = relu(F::conv2d(x, w1, b1));
    h = relu(F::conv2d(h, w2, b2));
    h = F::max_pool2d(h, {.kernel = {2, 2}});
    h = F::dropout(h, 0.25, true, &gen);
    h = relu(linear(flatten(h, 1), w3, b3));
    h = F::dropout(h, 0.5, true, &gen);
    return linear(h, w4, b4);
  }
  float step(const Batch& b, double lr) {
    Tensor loss = F::cross_entropy(forward(b.x), b.y);
    loss.backward();
    NoGradGuard ng;
    for (Tensor* p : params()) {
      p->add_(p->grad(), -lr);
      p->set_grad({});
    }
    return loss.item<float>();
  }
};

double loader_batches_per_s(const Dataset& ds, int workers, bool resident, int64_t* batches_out) {
  LoaderOptions o;
  o.batch_size = 64;
  o.workers = workers;
  o.device_resident = resident;
  o.seed = 1;
  o.transforms.crop_padding = 2;
  o.transforms.hflip_p = 0.5;
  DataLoader loader(ds, o);
  loader.begin_epoch(0);
  loader.next();  // start-up (threads, first permutation) is not throughput
  const double t0 = now();
  int64_t n = 0;
  while (loader.next()) ++n;
  const double dt = now() - t0;
  *batches_out = n;
  return double(n) / dt;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string script = argc > 1 ? argv[1] : "bench/decode_fashion_mnist.py";
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz")) {
    std::printf("dataset-fashion-mnist is not installed; nothing to measure\n");
    return 0;
  }
  std::printf("ember %s, OpenMP threads for ops: %d\n\n", version().c_str(), get_num_threads());

  // 1. decode
  double best = 1e9;
  Dataset ds;
  for (int r = 0; r < 3; ++r) {
    const double t0 = now();
    ds = load_dataset("fashion-mnist");
    best = std::min(best, now() - t0);
  }
  std::printf("decode  ember load_dataset(\"fashion-mnist\") train, 60000x28x28: %.3f s (best of 3)\n", best);
  std::fflush(stdout);
  const std::string cmd = "/usr/bin/python3 " + script;
  if (std::system(cmd.c_str()) != 0) std::printf("decode  python: %s failed\n", cmd.c_str());
  std::fflush(stdout);

  // 2. loader
  std::printf("\nloader  batch 64, normalise + random crop pad 2 + hflip, one epoch (937 timed batches)\n");
  double one_worker = 0;
  for (int mode = 0; mode < 4; ++mode) {
    const int workers = mode < 3 ? mode : 0;
    const bool resident = mode == 3;
    int64_t n = 0;
    const double rate = loader_batches_per_s(ds, workers, resident, &n);
    if (mode == 1) one_worker = rate;
    std::printf("loader  %-22s %9.0f batches/s  (%7.0f samples/s)\n",
                resident ? "resident (batched)" : (std::to_string(workers) + " worker(s)").c_str(), rate,
                rate * 64);
  }

  // 3. mnistnet training rate on the CPU
  Generator g(7);
  MnistNet net(g);
  LoaderOptions o;
  o.batch_size = 64;
  o.workers = 1;
  o.transforms.crop_padding = 2;
  o.transforms.hflip_p = 0.5;
  DataLoader loader(ds, o);
  Batch fixed = loader.make_batch(0, 0);
  for (int i = 0; i < 3; ++i) net.step(fixed, 0.01);  // warm-up
  const int steps = 20;
  double t0 = now();
  for (int i = 0; i < steps; ++i) net.step(fixed, 0.01);
  const double train_rate = steps / (now() - t0);
  std::printf("\ntrain   mnistnet forward+backward+SGD, batch 64, CPU: %.1f steps/s\n", train_rate);
  std::printf("ratio   loader (1 worker) / training = %.0fx  (target >= 20x)\n", one_worker / train_rate);

  // 4. training fed by the loader (0 workers: assembly on the training thread; 1 worker: overlapped)
  for (int workers : {0, 1}) {
    LoaderOptions fo = o;
    fo.workers = workers;
    DataLoader feeder(ds, fo);
    feeder.begin_epoch(0);
    t0 = now();
    float loss = 0;
    for (int i = 0; i < steps; ++i) loss = net.step(*feeder.next(), 0.01);
    const double fed = steps / (now() - t0);
    const LoaderStats& s = feeder.stats();
    std::printf("fed     %d steps, loader with %d worker(s): %.1f steps/s, waited %.3f s of %.2f s (%.1f%%), loss %.3f\n",
                steps, workers, fed, s.wait_seconds, s.total_seconds, 100 * s.wait_fraction(), loss);
  }
  return 0;
}
