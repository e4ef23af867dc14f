// One model's training step, repeated, for comparing two builds without trusting wall-clock time:
// under callgrind only the timed steps are counted (instructions per step, independent of load),
// and the process CPU time per step is printed next to the wall time. The same source compiles
// against older trees (no train/step.h: only the plain loop), see bench/compare_train_step.sh.
//
//   train_step_probe MODEL STEPS [loop|engine] [THREADS] [fp32|bf16]
//   loop:   cross_entropy(model(x), y); zero_grad; backward; SGD step (the pre-engine bench loop)
//   engine: train::TrainStep::run, as bench_models and `ember train` step
//   bf16:   the forward under ember::autocast (engine: the AutocastPolicy stage, as bench_models
//           --precision bf16), so bf16 and fp32 CPU time per step compare on a loaded machine
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

#include <ember/ember.h>
#if __has_include(<ember/train/step.h>)
#include <ember/train/step.h>
#define PROBE_HAVE_ENGINE 1
#endif
#if __has_include(<ember/autocast.h>)
#define PROBE_HAVE_AUTOCAST 1
#endif
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#else
#define CALLGRIND_START_INSTRUMENTATION
#define CALLGRIND_STOP_INSTRUMENTATION
#endif

using namespace ember;
namespace F = ember::nn::functional;

namespace {
double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: train_step_probe MODEL STEPS [loop|engine] [THREADS] [fp32|bf16]\n");
    return 2;
  }
  const std::string name = argv[1], mode = argc > 3 ? argv[3] : "loop";
  const int steps = std::atoi(argv[2]);
  set_num_threads(argc > 4 ? std::atoi(argv[4]) : 1);
  const bool bf16 = argc > 5 && std::string(argv[5]) == "bf16";
#ifndef PROBE_HAVE_AUTOCAST
  if (bf16) {
    std::fprintf(stderr, "train_step_probe: this tree has no ember/autocast.h; use fp32\n");
    return 2;
  }
#endif
  Generator gen(1234);
  auto model = models::create(name, 10, 1, 28, &gen);
  model->train();
  optim::SGD opt(model->parameters(), optim::SGDOptions{.lr = 0.01, .momentum = 0.9});
  const Tensor x = randn({64, 1, 28, 28}, {}, &gen);
  const Tensor y = randint(0, 10, {64}, {.dtype = DType::Int64}, &gen);
  auto loop_step = [&] {
    Tensor logits;
    {
#ifdef PROBE_HAVE_AUTOCAST
      autocast ac(DeviceType::CPU, DType::BFloat16, bf16);
#endif
      logits = model->forward(x);
    }
    Tensor loss = F::cross_entropy(logits, y);
    opt.zero_grad();
    loss.backward();
    opt.step();
  };
#ifdef PROBE_HAVE_ENGINE
  train::TrainStep engine(*model, opt);
  if (bf16) engine.set_precision(std::make_shared<train::AutocastPolicy>(DeviceType::CPU));
  data::Batch batch;
  batch.x = x, batch.y = y;
  auto step = [&] { mode == "engine" ? (void)engine.run(1, 64, [&] { return batch; }) : loop_step(); };
#else
  if (mode == "engine") {
    std::fprintf(stderr, "train_step_probe: this tree has no train/step.h; use loop\n");
    return 2;
  }
  auto step = loop_step;
#endif
  for (int i = 0; i < 3; ++i) step();  // primitives built, allocator cache filled
  const double c0 = process_cpu_seconds();
  const auto w0 = std::chrono::steady_clock::now();
  CALLGRIND_START_INSTRUMENTATION;
  for (int i = 0; i < steps; ++i) step();
  CALLGRIND_STOP_INSTRUMENTATION;
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  const double cpu = process_cpu_seconds() - c0;
  std::printf("%s %s %s steps %d cpu_us_per_step %.1f wall_us_per_step %.1f\n", name.c_str(), mode.c_str(), bf16 ? "bf16" : "fp32", steps,
              1e6 * cpu / steps, 1e6 * wall / steps);
  return 0;
}
