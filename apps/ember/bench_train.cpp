// ember bench train: training samples/s of zoo models across batch sizes on each device, each device
// in the precision it would train in (--precision, auto by default), as one table with a speed-up
// column (GPU / CPU); without a GPU, the CPU column and one line saying why. Every point is timed
// to a steady state (ember/core/timing.h): the median of the repeats, with their spread.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "bench_common.h"
#include "cli.h"
#include "ember/train/precision_choice.h"
#include "ember/ember.h"
#include "ember/nn/models.h"
#include "ember/optim/optimizer.h"
#include "ember/train/step.h"

namespace ember::cli {
namespace {

struct TrainBenchOpts {
  std::string models = "lenet5,mnistnet,resnet_small", device = "all", batch_sizes = "32,64,128,256,512,1024";
  std::string precision = "auto";
  int threads = 0;
  int64_t image_size = 0;  // 0: each model at the size it was built for
  bool inference = false;  // time forward passes (evaluation mode, no gradients) instead of training steps
  bool json = false;
  TimingPlan plan;  // the shared timing flags, --steps for the minimum steps per repeat
};

// One column of the table: a device and the precision it trains in there, or why it cannot.
struct BenchColumn {
  Device device;
  train::PrecisionChoice precision;
  std::string refused;  // --precision this device cannot run (choose_precision's message); "" when it can
  // "cpu fp32", "cuda:0 bf16"; a refused column is named by the flag ("cpu bf16").
  std::string title(const std::string& flag) const {
    return device.str() + " " + (refused.empty() ? precision.name : flag);
  }
};

// The timing of SGD steps (momentum 0.9) of the training engine's TrainStep on random inputs, in
// the column's precision (the autocast policy and, for fp16, the loss scaler of `ember train`).
// The input side: --image-size, or the size each model was built for (RGB beyond 28x28): 28 for the
// Fashion-MNIST models and resnet_small (any size), 32 for the CIFAR ones, 224 for torchvision's.
std::pair<int64_t, int64_t> input_geometry(const std::string& name, const TrainBenchOpts& o) {
  const int64_t design = models::design_size(name), size = o.image_size > 0 ? o.image_size : design == 0 ? 28 : design;
  const int64_t ch = (design == 0 || design == 28) && size == 28 ? 1 : 3;
  return {ch, size};
}

// Forward passes of the model in evaluation mode without autograd, under the column's autocast:
// what `ember predict` / `ember eval` run per batch.
Timing time_inference(const std::string& name, int64_t bs, const BenchColumn& col, const TrainBenchOpts& o) {
  const Device dev = col.device;
  const auto [ch, size] = input_geometry(name, o);
  Generator gen(0);
  auto model = models::create(name, 10, ch, size, &gen);
  model->to(dev);
  model->eval();
  const Tensor x = randn({bs, ch, size, size}, {.device = dev}, &gen);
  autograd::NoGradGuard ng;
  nn::FoldBatchNorm fold;  // as `ember eval` and `predict` run the model
  autocast ac(dev.type, col.precision.dtype(), col.precision.autocast());
  return time_steady_state_wall(
      [&] {
        Tensor y = model->forward(x);
        (void)y.sum().item<float>();  // synchronises with the device
      },
      o.plan);
}

Timing time_train_step(const std::string& name, int64_t bs, const BenchColumn& col, const TrainBenchOpts& o) {
  if (o.inference) return time_inference(name, bs, col, o);
  const Device dev = col.device;
  const auto [ch, size] = input_geometry(name, o);
  Generator gen(0);
  auto model = models::create(name, 10, ch, size, &gen);
  model->to(dev);
  optim::SGD opt(model->parameters(), {.lr = 0.01, .momentum = 0.9});
  data::Batch batch;
  batch.x = randn({bs, ch, size, size}, {.device = dev}, &gen);
  batch.y = randint(0, 10, {bs}, {.dtype = DType::Int64, .device = dev}, &gen);
  // The training engine's step (train/step.h), on one fixed batch: what `ember train` runs per step.
  train::TrainStep step(*model, opt);
  train::apply_precision(col.precision, dev, step);
  train::DeviceMetrics sums;
  return time_steady_state_wall(
      [&] {
        step.run(1, bs, [&] { return batch; }, &sums);
        (void)sums.read();  // synchronises with the device
        sums.reset();
      },
      o.plan);
}

// The columns for --device and --precision: each device with choose_precision's answer. A device
// that cannot run the precision asked for keeps its column, "-", and the reason in a note; when no
// device can, the command line cannot work at all (UsageError, exit 2).
std::vector<BenchColumn> bench_columns(const std::vector<Device>& devices, const std::string& precision) {
  std::vector<BenchColumn> cols;
  std::optional<train::SettingError> first;
  size_t refused = 0;
  for (Device d : devices) {
    BenchColumn c{d, {}, ""};
    try {
      c.precision = train::choose_precision(precision, d);
    } catch (const train::SettingError& e) {
      c.refused = e.what();
      if (!first) first = e;
      ++refused;
    }
    cols.push_back(c);
  }
  if (refused == devices.size()) throw *first;
  return cols;
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
  const auto devices = train::devices_to_compare(o.device);
  const auto cols = bench_columns(devices, o.precision);
  const bool has_cpu = devices.front().is_cpu();
  const bool has_gpu = std::any_of(devices.begin(), devices.end(), [](Device d) { return d.is_cuda(); });
  const std::string no_gpu = o.device == "all" && !has_gpu ? "no CUDA device: " + cuda::unavailable_reason() : "";

  nlohmann::json j = {{"models", names},
                      {"phase", o.inference ? "inference" : "training"},
                      {"image_size", o.image_size > 0 ? nlohmann::json(o.image_size) : nlohmann::json(nullptr)},
                      {"threads", get_num_threads()},
                      {"precision", o.precision},
                      {"timing", plan_json(o.plan, "steps")},
                      {"devices", nlohmann::json::array()},
                      {"device_precision", nlohmann::json::object()},
                      {"results", nlohmann::json::array()}};
  for (const auto& c : cols) {
    j["devices"].push_back(c.device.str());
    auto& dp = j["device_precision"][c.device.str()];
    if (c.refused.empty()) dp = {{"precision", c.precision.name}, {"why", c.precision.why}};
    else dp = {{"precision", nullptr}, {"refused", c.refused}};
  }
  if (!no_gpu.empty()) j["gpu"] = no_gpu;
  if (!o.json) {
    if (o.inference)
      fmt::print("inference throughput, samples/s (evaluation mode, no gradients, random inputs{}), {}\n",
                 o.image_size > 0 ? fmt::format(", {0}x{0} images", o.image_size) : "",
                 plural(get_num_threads(), "CPU thread"));
    else
      fmt::print("training throughput, samples/s (SGD momentum 0.9, random inputs{}), {}\n",
                 o.image_size > 0 ? fmt::format(", {0}x{0} images", o.image_size) : "",
                 plural(get_num_threads(), "CPU thread"));
    // What each column runs and why (the reasons are the training banner's, precision_choice.cpp).
    fmt::print("precision  --precision {}\n", o.precision);
    for (const auto& c : cols)
      if (!c.refused.empty()) fmt::print("           {}: not run: {}\n", c.device.str(), c.refused);
      else
        fmt::print("           {} {}{}\n", c.device.str(), c.precision.name,
                   c.precision.why.empty() ? "" : ": " + c.precision.why);
    fmt::print("{}", timing_header(o.plan, "step", "steps"));
    if (!no_gpu.empty()) fmt::print("no GPU column: {}\n", no_gpu);
    fmt::print("{:>13}  {:>6}", "model", "batch");
    for (const auto& c : cols) fmt::print("  {:>16}", c.title(o.precision));
    if (has_cpu)
      for (Device d : devices)
        if (d.is_cuda()) fmt::print("  {:>11}", fmt::format("{}/cpu", d.str()));
    fmt::print("\n");
  }
  std::vector<std::string> notes;
  for (const auto& name : names)
    for (int64_t bs : bss) {
      std::map<std::string, double> sps;
      std::string line = fmt::format("{:>13}  {:>6}", name, bs);
      for (const auto& col : cols) {
        const Device dev = col.device;
        nlohmann::json row = {{"model", name}, {"device", dev.str()}, {"batch_size", bs}};
        if (!col.refused.empty()) {
          row["precision"] = o.precision;
          row["skipped"] = col.refused;
          line += fmt::format("  {:>16}", "-");
          j["results"].push_back(row);
          continue;
        }
        row["precision"] = col.precision.name;
        try {
          const Timing t = time_train_step(name, bs, col, o);
          const double v = double(bs) / t.median();
          sps[dev.str()] = v;
          row["samples_per_s"] = v;
          row.update(timing_json(t, "steps", "samples_per_s", [bs](double s) { return double(bs) / s; }));
          if (dev.is_cuda() && sps.count("cpu")) row["speedup_vs_cpu"] = v / sps["cpu"];
          line += fmt::format("  {:>9.1f} {:<6}", v, spread_text(t));
          const std::string why = unsettled_note(t, o.plan, "step", "steps");
          if (!why.empty()) notes.push_back(fmt::format("{} batch {} on {}: {}", name, bs, dev.str(), why));
        } catch (const OutOfMemoryError& e) {
          // A batch too large for one device still leaves the others' numbers worth having.
          row["error"] = e.what();
          line += fmt::format("  {:>16}", "OOM");
          notes.push_back(fmt::format("{} batch {} on {}: {}", name, bs, dev.str(), e.what()));
        } catch (const CudaError& e) {
          row["error"] = e.what();
          line += fmt::format("  {:>16}", "n/a");
          notes.push_back(fmt::format("{} batch {} on {}: {}", name, bs, dev.str(), e.what()));
        }
        j["results"].push_back(row);
      }
      if (has_cpu)
        for (Device d : devices)
          if (d.is_cuda()) {
            const bool both = sps.count("cpu") && sps.count(d.str());
            line += both ? fmt::format("  {:>10.1f}x", sps[d.str()] / sps["cpu"]) : fmt::format("  {:>11}", "-");
          }
      if (!o.json) {
        line.erase(line.find_last_not_of(' ') + 1);
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
  t->add_option("--precision", tb->precision,
                "auto (as `ember train` picks), fp32, bf16, fp16")
      ->check(CLI::IsMember({"auto", "fp32", "bf16", "fp16"}))->capture_default_str();
  add_number(t, "--image-size", tb->image_size,
             "Square input images of N pixels (default: each model at the size it was built for: 224 for "
             "torchvision's, 32 for the CIFAR ones, 28 for the others)",
             at_least(0));
  t->add_flag("--inference", tb->inference,
              "Time forward passes in evaluation mode without gradients (what predict and eval run) instead of "
              "training steps");
  add_timing_flags(t, tb->plan, "--steps", "steps");
  t->add_flag("--json", tb->json, "Print JSON");
  t->callback([&run, tb] { run = [tb] { return run_train_bench(*tb); }; });
}

}  // namespace ember::cli
