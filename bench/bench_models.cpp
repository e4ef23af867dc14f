// Whole-model CPU throughput of the zoo, the ember side of bench/compare_cpu.sh (its PyTorch twin
// is bench/torch_models.py; both measure the same things the same way):
//   train: forward + cross_entropy + backward + SGD (lr 0.01, momentum 0.9), batch 64, one fixed
//          random batch, 3 warm-up steps excluded; each repetition times `steps` steps; median.
//   infer: eval mode under NoGradGuard and nn::FoldBatchNorm (as `ember eval` / `predict` run), batch
//          256, 2 warm-up passes; median over repetitions.
//   sgemm: OpenBLAS cblas_sgemm GFLOP/s at 1024^3 (the machine's peak as the benchmark sees it)
//          and at the GEMM shapes mnistnet's layers run; `layers` gives those layers' own GFLOP/s.
//   --only train|infer: just that part of the model loop (for profiling); --only models: the
//   model loop without the GEMM section; --only gemm: the GEMM section alone.
//   --rss MODEL: only a short training run (20 steps), then prints the process's peak RSS (KiB).
//   --precision bf16: forward (training and inference) under ember::autocast (conv/linear in
//   bfloat16, f32 master weights), as torch_models.py --autocast-bf16; default fp32.
//
//   ./build/bench/bench_models --threads 2 [--json] [--reps 5] [--models mlp,lenet5,mnistnet] [--precision bf16]
//   ./build/bench/bench_models --threads 2 --rss mnistnet
#include <cblas.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <ember/ember.h>
#include <ember/train/step.h>

using namespace ember;
namespace F = ember::nn::functional;

namespace {

using Clock = std::chrono::steady_clock;

double seconds(const std::function<void()>& fn) {
  auto t0 = Clock::now();
  fn();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// One model, optimizer and fixed batch, stepped by the training engine's TrainStep (train/step.h:
// zero_grad, forward, cross-entropy, backward, update), the step `ember train` runs.
struct Trainer {
  std::shared_ptr<nn::Module> model;
  std::unique_ptr<optim::SGD> opt;
  std::unique_ptr<train::TrainStep> engine_step;
  data::Batch batch;
  Trainer(const std::string& name, int64_t batch_size) {
    Generator gen(1234);
    model = models::create(name, 10, 1, 28, &gen);
    model->train();
    opt = std::make_unique<optim::SGD>(model->parameters(), optim::SGDOptions{.lr = 0.01, .momentum = 0.9});
    batch.x = randn({batch_size, 1, 28, 28}, {}, &gen);
    batch.y = randint(0, 10, {batch_size}, {.dtype = DType::Int64}, &gen);
    engine_step = std::make_unique<train::TrainStep>(*model, *opt);
  }
  void step() {
    engine_step->run(1, batch.y.numel(), [this] { return batch; });
  }
};

// samples/s, median over reps; each rep runs `steps` calls of fn on `batch` samples.
double throughput(const std::function<void()>& fn, int64_t batch, int warmup, int steps, int reps) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> sps;
  for (int r = 0; r < reps; ++r) {
    double t = seconds([&] {
      for (int i = 0; i < steps; ++i) fn();
    });
    sps.push_back(double(batch) * steps / t);
  }
  return median(sps);
}

// Steps per repetition: about 0.3-1 s of work per repetition on this 2-core machine.
// Steps per repetition: each repetition lasts ~0.1-0.3 s on an idle 2-core machine, so one
// preemption by another process moves a median less (the same counts as bench/torch_models.py).
int train_steps(const std::string& m) { return m == "mnistnet" ? 8 : m == "lenet5" ? 100 : 200; }
int infer_steps(const std::string& m) { return m == "mnistnet" ? 4 : m == "lenet5" ? 50 : 100; }

double sgemm_gflops(int M, int N, int K, int reps) {
  std::vector<float> a(size_t(M) * K, 0.5f), b(size_t(K) * N, 0.25f), c(size_t(M) * N);
  auto run = [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, a.data(), K, b.data(), N,
                0.0f, c.data(), N);
  };
  run();
  const double flops = 2.0 * M * N * K;
  int inner = std::max(1, int(2e9 / flops));  // ~2 GFLOP per timing
  std::vector<double> g;
  for (int r = 0; r < reps; ++r) {
    double t = seconds([&] {
      for (int i = 0; i < inner; ++i) run();
    });
    g.push_back(flops * inner / t / 1e9);
  }
  return median(g);
}

// GFLOP/s of one op call (median over reps, each ~0.5 GFLOP or more).
double op_gflops(double flops, const std::function<void()>& fn, int reps) {
  fn();
  int inner = std::max(1, int(1e9 / flops));
  std::vector<double> g;
  for (int r = 0; r < reps; ++r) {
    double t = seconds([&] {
      for (int i = 0; i < inner; ++i) fn();
    });
    g.push_back(flops * inner / t / 1e9);
  }
  return median(g);
}

long peak_rss_kib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, reps = 5;
  bool json = false, bf16 = false;
  // "train" / "infer": only that part of the model loop, no GEMM section (profiling);
  // "models": both parts, no GEMM section; "gemm": only the GEMM section.
  std::string only;
  std::string rss_model;
  std::vector<std::string> model_names{"mlp", "lenet5", "mnistnet"};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench_models: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--threads") threads = std::stoi(next());
    else if (a == "--reps") reps = std::stoi(next());
    else if (a == "--json") json = true;
    else if (a == "--models") model_names = split(next());
    else if (a == "--rss") rss_model = next();
    else if (a == "--only") only = next();
    else if (a == "--precision") {
      const std::string p = next();
      if (p != "fp32" && p != "bf16") {
        std::fprintf(stderr, "bench_models: --precision must be fp32 or bf16, got %s\n", p.c_str());
        return 2;
      }
      bf16 = p == "bf16";
    }
    else {
      std::fprintf(stderr, "usage: bench_models [--threads N] [--reps R] [--json] [--models a,b] [--rss MODEL] [--only train|infer|models|gemm] [--precision fp32|bf16]\n");
      return 2;
    }
  }
  set_num_threads(threads);

  if (!rss_model.empty()) {
    Trainer t(rss_model, 64);
    for (int i = 0; i < 20; ++i) t.step();
    std::printf("%ld\n", peak_rss_kib());
    return 0;
  }

  std::map<std::string, std::pair<double, double>> results;  // model -> (train, infer) samples/s
  if (only == "gemm") model_names.clear();
  for (const auto& m : model_names) {
    double train = 0, infer = 0;
    if (only != "infer" && only != "gemm") {
      Trainer t(m, 64);
      if (bf16) t.engine_step->set_precision(std::make_shared<train::AutocastPolicy>(DeviceType::CPU));
      train = throughput([&] { t.step(); }, 64, 3, train_steps(m), reps);
    }
    if (only != "train" && only != "gemm") {
      Trainer inf(m, 256);
      inf.model->eval();
      NoGradGuard ng;
      nn::FoldBatchNorm fold;
      autocast ac(DeviceType::CPU, DType::BFloat16, bf16);
      infer = throughput([&] { (void)inf.model->forward(inf.batch.x); }, 256, 2, infer_steps(m), reps);
    }
    results[m] = {train, infer};
    if (!json) std::printf("%-10s train %9.1f samples/s   infer %9.1f samples/s\n", m.c_str(), train, infer);
  }

  std::vector<std::pair<std::string, double>> gemm, layers;
  if (only.empty() || only == "gemm") {
  // OpenBLAS peak and the GEMM shapes behind mnistnet's layers at batch 64 (per image for the
  // convs: (C_out, OH*OW, C_in*kH*kW); fc1 forward (64, 128, 9216)).
  struct Shape3 { const char* name; int M, N, K; };
  const Shape3 shapes[] = {{"1024^3", 1024, 1024, 1024},
                           {"conv2_fwd_per_image", 64, 576, 288},
                           {"conv2_fwd_batched", 64, 36864, 288},
                           {"fc1_fwd", 64, 128, 9216}};
  for (const auto& s : shapes) gemm.emplace_back(s.name, sgemm_gflops(s.M, s.N, s.K, reps));

  // The compute-bound layers of mnistnet at batch 64, through ember's op front-ends.
  {
    Generator gen(7);
    Tensor x2 = randn({64, 32, 26, 26}, {}, &gen), w2 = randn({64, 32, 3, 3}, {}, &gen),
           b2 = randn({64}, {}, &gen);
    const double conv2_flops = 2.0 * 64 * 64 * 24 * 24 * 32 * 9;
    {
      NoGradGuard ng;
      layers.emplace_back("conv2_fwd", op_gflops(conv2_flops, [&] { (void)F::conv2d(x2, w2, b2); }, reps));
    }
    Tensor x2g = x2.clone().requires_grad_(), w2g = w2.clone().requires_grad_(), b2g = b2.clone().requires_grad_();
    Tensor gout = randn({64, 64, 24, 24}, {}, &gen);
    // forward + backward (data + weight + bias): 3x the forward FLOPs.
    layers.emplace_back("conv2_fwd_bwd", op_gflops(3 * conv2_flops, [&] {
                          Tensor out = F::conv2d(x2g, w2g, b2g);
                          out.backward(gout);
                          x2g.set_grad({}); w2g.set_grad({}); b2g.set_grad({});
                        }, reps));
    Tensor x1 = randn({64, 9216}, {}, &gen), w1 = randn({128, 9216}, {}, &gen), b1 = randn({128}, {}, &gen);
    NoGradGuard ng;
    layers.emplace_back("fc1_fwd", op_gflops(2.0 * 64 * 128 * 9216, [&] { (void)linear(x1, w1, b1); }, reps));
  }
  }

  const double peak = gemm.empty() ? 0.0 : gemm[0].second;
  if (json) {
    std::printf("{\"framework\": \"ember\", \"precision\": \"%s\", \"threads\": %d, \"reps\": %d, \"models\": {",
                bf16 ? "bf16" : "fp32", threads, reps);
    bool first = true;
    for (const auto& [m, r] : results) {
      std::printf("%s\"%s\": {\"train_samples_per_s\": %.2f, \"infer_samples_per_s\": %.2f}",
                  first ? "" : ", ", m.c_str(), r.first, r.second);
      first = false;
    }
    std::printf("}, \"sgemm_gflops\": {");
    for (size_t i = 0; i < gemm.size(); ++i)
      std::printf("%s\"%s\": %.2f", i ? ", " : "", gemm[i].first.c_str(), gemm[i].second);
    std::printf("}, \"layer_gflops\": {");
    for (size_t i = 0; i < layers.size(); ++i)
      std::printf("%s\"%s\": %.2f", i ? ", " : "", layers[i].first.c_str(), layers[i].second);
    std::printf("}}\n");
  } else {
    for (const auto& [n, g] : gemm) std::printf("sgemm %-22s %8.1f GFLOP/s\n", n.c_str(), g);
    for (const auto& [n, g] : layers)
      std::printf("layer %-22s %8.1f GFLOP/s (%.0f%% of sgemm 1024^3)\n", n.c_str(), g, 100 * g / peak);
  }
  return 0;
}
