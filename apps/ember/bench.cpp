// ember bench: matmul GFLOP/s (CPU vs each GPU), host<->device bandwidth, and training throughput
// (samples/s per batch size, warm-up excluded).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unistd.h>

#include "cli.h"
#include "ember/core/settings.h"
#include "ember/ember.h"
#include "ember/nn/models.h"
#include "ember/optim/optimizer.h"

namespace ember::cli {
namespace {
using Clock = std::chrono::steady_clock;

std::vector<int64_t> parse_list(const std::string& s, const char* flag) {
  std::vector<int64_t> out;
  std::stringstream ss(s);
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    try {
      size_t pos = 0;
      long long v = std::stoll(tok, &pos);
      if (pos != tok.size() || v <= 0) throw std::invalid_argument("");
      out.push_back(v);
    } catch (const std::exception&) {
      throw UsageError(fmt::format("{}: '{}' is not a positive integer", flag, tok),
                       fmt::format("give a comma-separated list, e.g. {} 256,512,1024", flag));
    }
  }
  if (out.empty()) throw UsageError(fmt::format("{} is empty", flag));
  return out;
}

// Seconds per call of fn(), after one warm-up call, repeated until ~min_seconds have passed.
template <class F> double time_per_call(F&& fn, double min_seconds, int min_reps) {
  fn();
  int reps = 0;
  auto t0 = Clock::now();
  double dt = 0;
  do {
    fn();
    ++reps;
    dt = std::chrono::duration<double>(Clock::now() - t0).count();
  } while (dt < min_seconds || reps < min_reps);
  return dt / reps;
}

struct MatmulOpts {
  std::string sizes = "256,512,1024";
  std::string dtype = "float32";
  int threads = 0;
  bool json = false;
};

// --sizes entries whose A, B and C (float32, n x n each) cannot fit in this machine's memory are a
// usage error naming the largest n that fits, before anything is allocated.
void check_matmul_sizes_fit(const std::vector<int64_t>& sizes) {
  const double mem = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE));
  if (mem <= 0) return;
  for (int64_t n : sizes) {
    const double need = 3.0 * 4.0 * double(n) * double(n);
    if (need <= mem) continue;
    const auto largest = int64_t(std::sqrt(mem / 12.0));
    throw UsageError(fmt::format("--sizes {}: the {} x {} matmul holds A, B and C in float32, {:.1f} GB, more than this "
                                 "machine's {:.1f} GB of memory", n, n, n, need / 1e9, mem / 1e9),
                     fmt::format("use smaller --sizes (the largest n that fits is about {}; e.g. --sizes 1024,2048,4096)",
                                 largest));
  }
}

// The classic "is my GPU working, and faster?" check: two uniform [0, 10) matrices (seed 0)
// multiplied on the CPU and on each GPU; warm-up excluded, GPU timed with CUDA events.
int run_matmul(const MatmulOpts& o) {
  if (o.dtype != "float32" && o.dtype != "tf32")
    throw UsageError(fmt::format("--dtype {}: not supported yet; ember computes in float32 (TF32 on GPUs on request), "
                                 "bfloat16/float16 are storage types so far", o.dtype),
                     "use --dtype float32 or --dtype tf32");
  if (o.threads > 0) set_num_threads(o.threads), warn_if_oversubscribed(o.threads);
  auto sizes = parse_list(o.sizes, "--sizes");
  check_matmul_sizes_fit(sizes);
  const int ngpu = cuda::device_count();
  const bool tf32 = o.dtype == "tf32";
  nlohmann::json j = {{"threads", get_num_threads()}, {"dtype", o.dtype}, {"results", nlohmann::json::array()}};
  if (!o.json) {
    if (ngpu > 0)
      fmt::print("matmul C = A @ B, n x n, A and B uniform [0, 10) from seed 0, float32 on the CPU, {} on the GPU\n",
                 tf32 ? "TF32 tensor cores" : "float32");
    else
      fmt::print("matmul C = A @ B, n x n, A and B uniform [0, 10) from seed 0, float32 on the CPU only{}\n",
                 tf32 ? " (--dtype tf32 applies to GPUs)" : "");
    fmt::print("placement: cpu ({}){}\n", plural(get_num_threads(), "thread"),
               ngpu ? fmt::format(" and cuda:0..{} (A, B, C on the device, no copies timed)", ngpu - 1) : "");
    if (ngpu == 0) fmt::print("no GPU column: no CUDA device: {}\n", cuda::unavailable_reason());
    fmt::print("{:>6}  {:>10}  {:>11}", "n", "cpu ms", "cpu GFLOP/s");
    for (int g = 0; g < ngpu; ++g)
      fmt::print("  {:>12}  {:>15}  {:>9}", fmt::format("cuda:{} ms", g), fmt::format("cuda:{} GFLOP/s", g), "speed-up");
    fmt::print("\n");
  }
  for (int64_t n : sizes) {
    const double flops = 2.0 * double(n) * double(n) * double(n);
    Generator gen(0);
    Tensor a = empty({n, n}), b = empty({n, n});
    uniform_(a, 0.0, 10.0, &gen);
    uniform_(b, 0.0, 10.0, &gen);
    const double cpu_s = time_per_call([&] { (void)matmul(a, b); }, 0.3, 2);
    const double cpu = flops / cpu_s / 1e9;
    nlohmann::json row = {{"n", n}, {"cpu_ms", cpu_s * 1e3}, {"cpu_gflops", cpu}};
    std::string line = fmt::format("{:>6}  {:>10.3f}  {:>11.1f}", n, cpu_s * 1e3, cpu);
    for (int g = 0; g < ngpu; ++g) {
      try {
        const bool prev = allow_tf32();
        set_allow_tf32(tf32);
        Tensor ag = a.to(Device::cuda(g)), bg = b.to(Device::cuda(g));
        auto fn = [&] { (void)matmul(ag, bg); };
        fn();                                           // warm-up (cuBLAS handle, kernels)
        const double once = cuda::time_ms(g, fn, 1);
        const int reps = int(std::clamp(300.0 / std::max(once, 1e-3), 2.0, 1000.0));
        const double ms = cuda::time_ms(g, fn, reps);
        set_allow_tf32(prev);
        const double gf = flops / (ms * 1e-3) / 1e9;
        row[fmt::format("cuda{}_ms", g)] = ms;
        row[fmt::format("cuda{}_gflops", g)] = gf;
        row[fmt::format("cuda{}_speedup", g)] = gf / cpu;
        line += fmt::format("  {:>12.3f}  {:>15.1f}  {:>8.1f}x", ms, gf, gf / cpu);
      } catch (const Error& e) {
        row[fmt::format("cuda{}_error", g)] = e.what();
        line += fmt::format("  {:>12}  {:>15}  {:>9}", "n/a", "n/a", "");
      }
    }
    if (!o.json) fmt::print("{}\n", line);
    j["results"].push_back(row);
  }
  if (ngpu == 0) j["gpu"] = "no CUDA device: " + cuda::unavailable_reason();
  if (o.json) fmt::print("{}\n", j.dump(2));
  return kExitOk;
}

struct BandwidthOpts {
  int64_t mib = 32;
  bool range = false, csv = false, json = false;
};

// Host<->device and device<->device copy bandwidth, pinned and pageable, as CUDA's bandwidthTest.
int run_bandwidth(const BandwidthOpts& o) {
  if (cuda::device_count() == 0) {
    // --json readers get JSON on stdout either way: no results, and why.
    if (o.json)
      fmt::print("{}\n", nlohmann::json{{"gpu", "no CUDA device: " + cuda::unavailable_reason()},
                                        {"results", nlohmann::json::array()}}.dump(2));
    fmt::print(stderr, "ember: error: no CUDA device: {}\n  hint: run `ember doctor` to see what is missing\n",
               cuda::unavailable_reason());
    return kExitFailed;
  }
  std::vector<int64_t> sizes_mib;
  if (o.range) {
    for (int64_t m = 1; m <= 256; m *= 2) sizes_mib.push_back(m);
  } else {
    sizes_mib.push_back(o.mib);
  }
  nlohmann::json j = nlohmann::json::array();
  if (o.csv) fmt::print("device,mib,h2d_pageable,d2h_pageable,h2d_pinned,d2h_pinned,d2d\n");
  else if (!o.json)
    fmt::print("copy bandwidth, GB/s (timed with CUDA events)\n{:>7} {:>5} {:>13} {:>13} {:>11} {:>11} {:>9}\n", "device",
               "MiB", "H2D pageable", "D2H pageable", "H2D pinned", "D2H pinned", "D2D");
  for (int g = 0; g < cuda::device_count(); ++g)
    for (int64_t m : sizes_mib) {
      CopyBandwidth b = cuda::copy_bandwidth(g, size_t(m) << 20, m <= 32 ? 20 : 5);
      j.push_back({{"device", g}, {"mib", m}, {"h2d_pageable", b.h2d_pageable}, {"d2h_pageable", b.d2h_pageable},
                   {"h2d_pinned", b.h2d_pinned}, {"d2h_pinned", b.d2h_pinned}, {"d2d", b.d2d}});
      if (o.csv)
        fmt::print("cuda:{},{},{:.2f},{:.2f},{:.2f},{:.2f},{:.2f}\n", g, m, b.h2d_pageable, b.d2h_pageable, b.h2d_pinned,
                   b.d2h_pinned, b.d2d);
      else if (!o.json)
        fmt::print("{:>7} {:>5} {:>13.2f} {:>13.2f} {:>11.2f} {:>11.2f} {:>9.1f}\n", fmt::format("cuda:{}", g), m,
                   b.h2d_pageable, b.d2h_pageable, b.h2d_pinned, b.d2h_pinned, b.d2d);
    }
  if (o.json) fmt::print("{}\n", nlohmann::json{{"results", j}}.dump(2));
  return kExitOk;
}

struct TrainBenchOpts {
  std::string model = "mnistnet", device = "cpu", batch_sizes = "32,64,128";
  int threads = 0;
  int64_t steps = 20, warmup = 3;
  bool json = false;
};

int run_train_bench(const TrainBenchOpts& o) {
  if (o.threads > 0) set_num_threads(o.threads), warn_if_oversubscribed(o.threads);
  auto bss = parse_list(o.batch_sizes, "--batch-sizes");
  std::vector<Device> devices;
  if (o.device == "all") {
    devices.push_back(Device::cpu());
    for (int g = 0; g < cuda::device_count(); ++g) devices.push_back(Device::cuda(g));
  } else {
    Device d = Device::parse(o.device);
    if (d.is_cuda() && d.index >= cuda::device_count())
      throw DeviceError(fmt::format("no CUDA device {}: {}", d.str(),
                                    cuda::device_count() ? fmt::format("this machine has {}", cuda::device_count())
                                                        : cuda::unavailable_reason()),
                        "use --device cpu, or run `ember doctor`");
    devices.push_back(d);
  }
  auto names = models::names();
  if (std::find(names.begin(), names.end(), o.model) == names.end()) {
    std::string known;
    for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
    throw UsageError(fmt::format("unknown model '{}'", o.model), "choose one of: " + known);
  }
  const int64_t ch = o.model == "alexnet_cifar" ? 3 : 1, size = o.model == "alexnet_cifar" ? 32 : 28;
  nlohmann::json j = {{"model", o.model}, {"threads", get_num_threads()}, {"steps", o.steps},
                      {"warmup", o.warmup}, {"results", nlohmann::json::array()}};
  if (!o.json)
    fmt::print("training throughput of {} ({} after {} warm-up), {}\n{:>8}  {:>10}  {:>12}\n", o.model,
               plural(o.steps, "step"), o.warmup, plural(get_num_threads(), "CPU thread"), "device", "batch", "samples/s");
  for (Device dev : devices)
    for (int64_t bs : bss) {
      Generator gen(0);
      auto model = models::create(o.model, 10, ch, size, &gen);
      model->to(dev);
      optim::SGD opt(model->parameters(), {.lr = 0.01, .momentum = 0.9});
      Tensor x = randn({bs, ch, size, size}, {.device = dev}, &gen);
      Tensor y = randint(0, 10, {bs}, {.dtype = DType::Int64, .device = dev}, &gen);
      auto one = [&] {
        Tensor loss = nn::functional::cross_entropy((*model)(x), y);
        opt.zero_grad();
        loss.backward();
        opt.step();
        (void)loss.item<float>();  // synchronises with the device
      };
      for (int64_t i = 0; i < o.warmup; ++i) one();
      auto t0 = Clock::now();
      for (int64_t i = 0; i < o.steps; ++i) one();
      double dt = std::chrono::duration<double>(Clock::now() - t0).count();
      double sps = double(bs * o.steps) / dt;
      j["results"].push_back({{"device", dev.str()}, {"batch_size", bs}, {"samples_per_s", sps}, {"seconds", dt}});
      if (!o.json) fmt::print("{:>8}  {:>10}  {:>12.1f}\n", dev.str(), bs, sps);
    }
  if (o.json) fmt::print("{}\n", j.dump(2));
  return kExitOk;
}
}  // namespace

void register_bench(CLI::App& root, Runner& run) {
  auto* bench = root.add_subcommand("bench", "Benchmarks: matmul, bandwidth, train");
  bench->require_subcommand(1);

  auto mm = std::make_shared<MatmulOpts>();
  auto* m = bench->add_subcommand("matmul", "Matrix-multiply GFLOP/s on the CPU and on each GPU");
  m->add_option("--sizes", mm->sizes, "Comma-separated matrix sizes n (n x n)")->capture_default_str();
  add_number(m, "--threads", mm->threads, "CPU threads (default: all cores)", thread_count_rule());
  m->add_option("--dtype", mm->dtype, "float32, or tf32 (TF32 tensor cores on the GPU)")->capture_default_str();
  m->add_flag("--json", mm->json, "Print JSON");
  m->callback([&run, mm] { run = [mm] { return run_matmul(*mm); }; });

  auto bwo = std::make_shared<BandwidthOpts>();
  auto* bw = bench->add_subcommand("bandwidth", "Host<->device copy bandwidth (needs a CUDA device)");
  add_number(bw, "--mib", bwo->mib, "Transfer size in MiB (quick mode)",
             between(1, 1 << 20, "1 TiB is beyond any GPU's memory"))->capture_default_str();
  bw->add_flag("--range", bwo->range, "Sizes 1..256 MiB, doubling");
  bw->add_flag("--csv", bwo->csv, "Print CSV");
  bw->add_flag("--json", bwo->json, "Print JSON");
  bw->callback([&run, bwo] { run = [bwo] { return run_bandwidth(*bwo); }; });

  auto tb = std::make_shared<TrainBenchOpts>();
  auto* t = bench->add_subcommand("train", "Training samples/s per batch size (warm-up excluded)");
  t->add_option("--model", tb->model, "Zoo model")->capture_default_str();
  t->add_option("--device", tb->device, "cpu, cuda, cuda:N or all")->capture_default_str();
  t->add_option("--batch-sizes", tb->batch_sizes, "Comma-separated batch sizes")->capture_default_str();
  add_number(t, "--threads", tb->threads, "CPU threads (default: all cores)", thread_count_rule());
  add_number(t, "--steps", tb->steps, "Timed steps per batch size", at_least(1))->capture_default_str();
  add_number(t, "--warmup", tb->warmup, "Untimed warm-up steps", at_least(0))->capture_default_str();
  t->add_flag("--json", tb->json, "Print JSON");
  t->callback([&run, tb] { run = [tb] { return run_train_bench(*tb); }; });
}

}  // namespace ember::cli
