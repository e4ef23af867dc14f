// ember bench train: training samples/s of zoo models across batch sizes on each device, as one
// table with a speed-up column (GPU / CPU); without a GPU, the CPU column and one line saying why.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "bench_common.h"
#include "cli.h"
#include "ember/ember.h"
#include "ember/nn/models.h"
#include "ember/optim/optimizer.h"
#include "ember/train/step.h"

namespace ember::cli {
namespace {

struct TrainBenchOpts {
  std::string models = "lenet5,mnistnet,resnet_small", device = "all", batch_sizes = "32,64,128,256,512,1024";
  int threads = 0;
  int64_t steps = 3, warmup = 1;
  bool json = false;
};

std::vector<Device> bench_devices(const std::string& spec) {
  std::vector<Device> devices;
  if (spec == "all") {
    devices.push_back(Device::cpu());
    for (int g = 0; g < cuda::device_count(); ++g) devices.push_back(Device::cuda(g));
    return devices;
  }
  Device d = Device::parse(spec);
  if (d.is_cuda() && d.index >= cuda::device_count())
    throw DeviceError(fmt::format("no CUDA device {}: {}", d.str(),
                                  cuda::device_count() ? fmt::format("this machine has {}", cuda::device_count())
                                                      : cuda::unavailable_reason()),
                      "use --device cpu, or run `ember doctor`");
  devices.push_back(d);
  return devices;
}

// Samples/s of `steps` SGD steps (momentum 0.9) of the training engine's TrainStep on random
// inputs, after `warmup` untimed steps.
double samples_per_second(const std::string& name, int64_t bs, Device dev, const TrainBenchOpts& o) {
  const int64_t ch = name == "alexnet_cifar" ? 3 : 1, size = name == "alexnet_cifar" ? 32 : 28;
  Generator gen(0);
  auto model = models::create(name, 10, ch, size, &gen);
  model->to(dev);
  optim::SGD opt(model->parameters(), {.lr = 0.01, .momentum = 0.9});
  data::Batch batch;
  batch.x = randn({bs, ch, size, size}, {.device = dev}, &gen);
  batch.y = randint(0, 10, {bs}, {.dtype = DType::Int64, .device = dev}, &gen);
  // The training engine's step (train/step.h), on one fixed batch: what `ember train` runs per step.
  train::TrainStep step(*model, opt);
  train::DeviceMetrics sums;
  auto one = [&] {
    step.run(1, bs, [&] { return batch; }, &sums);
    (void)sums.read();  // synchronises with the device
    sums.reset();
  };
  for (int64_t i = 0; i < o.warmup; ++i) one();
  auto t0 = BenchClock::now();
  for (int64_t i = 0; i < o.steps; ++i) one();
  const double dt = std::chrono::duration<double>(BenchClock::now() - t0).count();
  return double(bs * o.steps) / dt;
}

int run_train_bench(const TrainBenchOpts& o) {
  set_compute_threads(o.threads);
  const auto bss = parse_positive_list(o.batch_sizes, "--batch-sizes");
  const auto names = parse_name_list(o.models, "--models");
  const auto known = models::names();
  for (const auto& n : names)
    if (std::find(known.begin(), known.end(), n) == known.end()) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      const std::string near = closest_name(n, known);
      throw UsageError(fmt::format("unknown model '{}'{}", n, near.empty() ? "" : ", did you mean '" + near + "'?"),
                       "choose from: " + list);
    }
  const auto devices = bench_devices(o.device);
  const bool has_cpu = devices.front().is_cpu();
  const bool has_gpu = std::any_of(devices.begin(), devices.end(), [](Device d) { return d.is_cuda(); });
  const std::string no_gpu = o.device == "all" && !has_gpu ? "no CUDA device: " + cuda::unavailable_reason() : "";

  nlohmann::json j = {{"models", names},   {"threads", get_num_threads()}, {"steps", o.steps},
                      {"warmup", o.warmup}, {"devices", nlohmann::json::array()}, {"results", nlohmann::json::array()}};
  for (Device d : devices) j["devices"].push_back(d.str());
  if (!no_gpu.empty()) j["gpu"] = no_gpu;
  if (!o.json) {
    fmt::print("training throughput, samples/s ({} after {} warm-up, SGD momentum 0.9, random inputs), {}\n",
               plural(o.steps, "timed step"), o.warmup, plural(get_num_threads(), "CPU thread"));
    if (!no_gpu.empty()) fmt::print("no GPU column: {}\n", no_gpu);
    fmt::print("{:>13}  {:>6}", "model", "batch");
    for (Device d : devices) fmt::print("  {:>12}", d.str());
    if (has_cpu)
      for (Device d : devices)
        if (d.is_cuda()) fmt::print("  {:>12}", fmt::format("{}/cpu", d.str()));
    fmt::print("\n");
  }
  std::vector<std::string> notes;
  for (const auto& name : names)
    for (int64_t bs : bss) {
      std::map<std::string, double> sps;
      std::string line = fmt::format("{:>13}  {:>6}", name, bs);
      for (Device dev : devices) {
        nlohmann::json row = {{"model", name}, {"device", dev.str()}, {"batch_size", bs}};
        try {
          const double v = samples_per_second(name, bs, dev, o);
          sps[dev.str()] = v;
          row["samples_per_s"] = v;
          row["seconds"] = double(bs * o.steps) / v;
          if (dev.is_cuda() && has_cpu && sps.count("cpu")) row["speedup_vs_cpu"] = v / sps["cpu"];
          line += fmt::format("  {:>12.1f}", v);
        } catch (const OutOfMemoryError& e) {
          // A batch too large for one device still leaves the others' numbers worth having.
          row["error"] = e.what();
          line += fmt::format("  {:>12}", "OOM");
          notes.push_back(fmt::format("{} batch {} on {}: {}", name, bs, dev.str(), e.what()));
        } catch (const CudaError& e) {
          row["error"] = e.what();
          line += fmt::format("  {:>12}", "n/a");
          notes.push_back(fmt::format("{} batch {} on {}: {}", name, bs, dev.str(), e.what()));
        }
        j["results"].push_back(row);
      }
      if (has_cpu)
        for (Device d : devices)
          if (d.is_cuda()) {
            const bool both = sps.count("cpu") && sps.count(d.str());
            line += both ? fmt::format("  {:>11.1f}x", sps[d.str()] / sps["cpu"]) : fmt::format("  {:>12}", "-");
          }
      if (!o.json) {
        fmt::print("{}\n", line);
        std::fflush(stdout);
      }
    }
  if (!o.json)
    for (const auto& s : notes) fmt::print("{}\n", s);
  if (o.json) fmt::print("{}\n", j.dump(2));
  return kExitOk;
}
}  // namespace

void register_bench_train(CLI::App& bench, Runner& run) {
  auto tb = std::make_shared<TrainBenchOpts>();
  auto* t = bench.add_subcommand("train", "Training samples/s per model and batch size on each device, with the speed-up");
  t->add_option("--models,--model", tb->models, "Comma-separated zoo models")->capture_default_str();
  t->add_option("--device", tb->device, "all (the CPU and every GPU, with the speed-up), cpu, cuda or cuda:N")
      ->capture_default_str();
  t->add_option("--batch-sizes", tb->batch_sizes, "Comma-separated batch sizes")->capture_default_str();
  add_number(t, "--threads", tb->threads, "CPU threads (default: all cores)", thread_count_rule());
  add_number(t, "--steps", tb->steps, "Timed steps per point", at_least(1))->capture_default_str();
  add_number(t, "--warmup", tb->warmup, "Untimed warm-up steps per point", at_least(0))->capture_default_str();
  t->add_flag("--json", tb->json, "Print JSON");
  t->callback([&run, tb] { run = [tb] { return run_train_bench(*tb); }; });
}

}  // namespace ember::cli
