// ember bench matmul: C = A @ B for the guides' seeded sizes (50 .. 8192), GFLOP/s on the CPU and on
// each GPU, and each GPU's C compared with the CPU's C (maximum relative difference) where both ran.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "bench_common.h"
#include "cli.h"
#include "ember/core/settings.h"
#include "ember/ember.h"

namespace ember::cli {
namespace {

struct MatmulOpts {
  std::string sizes = "50,100,500,1000,2000,4096,8192";
  std::string dtype = "float32";
  uint64_t seed = 0;
  int64_t cpu_max_size = 4096;
  int threads = 0;
  bool json = false;
  TimingPlan plan = [] {  // the shared timing flags; 2 matmuls a repeat (n = 4096 is seconds on a few cores)
    TimingPlan p;
    p.min_calls = 2;
    return p;
  }();
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

// FNV-1a over the bytes of A then B: one seed gives one checksum on every machine (Philox is
// counter-based), a different seed a different one. Printed so two runs can be seen to agree.
std::string checksum(const Tensor& a, const Tensor& b) {
  uint64_t h = 1469598103934665603ull;
  for (const Tensor* t : {&a, &b}) {
    const auto* p = reinterpret_cast<const unsigned char*>(t->data_ptr<float>());
    for (size_t i = 0; i < t->nbytes(); ++i) h = (h ^ p[i]) * 1099511628211ull;
  }
  return fmt::format("{:016x}", h);
}

// max_i |got_i - want_i| / max(|want_i|, 1e-30): both are float32 (n, n) CPU tensors.
double max_relative_difference(const Tensor& got, const Tensor& want) {
  const float* g = got.data_ptr<float>();
  const float* w = want.data_ptr<float>();
  double worst = 0;
  for (int64_t i = 0; i < want.numel(); ++i)
    worst = std::max(worst, std::abs(double(g[i]) - double(w[i])) / std::max(std::abs(double(w[i])), 1e-30));
  return worst;
}

// The classic "is my GPU working, and faster?" check: two uniform [0, 10) matrices from ember's
// Philox generator (--seed), multiplied on the CPU and on each GPU, each timed to a steady state
// (ember/core/timing.h; the GPU with CUDA events), the median repeat printed with the spread. The
// CPU is skipped above --cpu-max-size (8192^3 takes minutes on a few cores).
int run_matmul(const MatmulOpts& o) {
  if (o.dtype != "float32" && o.dtype != "tf32")
    throw UsageError(fmt::format("--dtype {}: not supported yet; ember computes in float32 (TF32 on GPUs on request), "
                                 "bfloat16/float16 are storage types so far", o.dtype),
                     "use --dtype float32 or --dtype tf32");
  set_compute_threads(o.threads);
  auto sizes = parse_positive_list(o.sizes, "--sizes");
  check_matmul_sizes_fit(sizes);
  const int ngpu = cuda::device_count();
  const bool tf32 = o.dtype == "tf32";
  const std::string no_gpu = ngpu ? "" : "no CUDA device: " + cuda::unavailable_reason();
  nlohmann::json j = {{"threads", get_num_threads()}, {"dtype", o.dtype},       {"seed", o.seed},
                      {"cpu_max_size", o.cpu_max_size}, {"gpus", ngpu},       {"results", nlohmann::json::array()},
                      {"timing", plan_json(o.plan, "calls")}};
  if (!o.json) {
    const std::string from = fmt::format("A and B uniform [0, 10) from Philox seed {}", o.seed);
    if (ngpu > 0)
      fmt::print("matmul C = A @ B, n x n, {}, float32 on the CPU, {} on the GPU\n", from,
                 tf32 ? "TF32 tensor cores" : "float32");
    else
      fmt::print("matmul C = A @ B, n x n, {}, float32 on the CPU only{}\n", from,
                 tf32 ? " (--dtype tf32 applies to GPUs)" : "");
    fmt::print("placement: cpu ({}) for n <= {}{}\n", plural(get_num_threads(), "thread"), o.cpu_max_size,
               ngpu ? fmt::format(" and cuda:0..{} (A, B, C on the device, no copies timed)", ngpu - 1) : "");
    fmt::print("{}", timing_header(o.plan, "matmul", "matmuls"));
    if (ngpu == 0) fmt::print("no GPU column: {}\n", no_gpu);
    else fmt::print("max rel diff: max |C_gpu - C_cpu| / |C_cpu| over all elements (n <= {} only)\n", o.cpu_max_size);
    fmt::print("{:>6}  {:>16}  {:>10}  {:>11}  {:>6}", "n", "A,B checksum", "cpu ms", "cpu GFLOP/s", "spread");
    for (int g = 0; g < ngpu; ++g)
      fmt::print("  {:>12}  {:>15}  {:>6}  {:>9}  {:>12}", fmt::format("cuda:{} ms", g),
                 fmt::format("cuda:{} GFLOP/s", g), "spread", "speed-up", "max rel diff");
    fmt::print("\n");
  }
  std::vector<std::string> notes;
  for (int64_t n : sizes) {
    const double flops = 2.0 * double(n) * double(n) * double(n);
    Generator gen(o.seed);
    Tensor a = empty({n, n}), b = empty({n, n});
    uniform_(a, 0.0, 10.0, &gen);
    uniform_(b, 0.0, 10.0, &gen);
    const std::string sum = checksum(a, b);
    nlohmann::json row = {{"n", n}, {"checksum", sum}};
    std::string line = fmt::format("{:>6}  {:>16}", n, sum);
    Tensor c_cpu;
    double cpu = 0;
    if (n <= o.cpu_max_size) {
      const Timing t = time_steady_state_wall([&] { c_cpu = matmul(a, b); }, o.plan);
      cpu = flops / t.median() / 1e9;
      row["cpu_ms"] = t.median() * 1e3;
      row["cpu_gflops"] = cpu;
      row["cpu_timing"] = timing_json(t, "calls", "ms", [](double s) { return s * 1e3; });
      line += fmt::format("  {:>10.3f}  {:>11.1f}  {:>6}", t.median() * 1e3, cpu, spread_text(t));
      const std::string why = unsettled_note(t, o.plan, "matmul", "matmuls");
      if (!why.empty()) notes.push_back(fmt::format("n = {} on the cpu: {}", n, why));
    } else {
      row["cpu_skipped"] = fmt::format("n = {} is above --cpu-max-size {}", n, o.cpu_max_size);
      line += fmt::format("  {:>10}  {:>11}  {:>6}", "skipped", "skipped", "");
      notes.push_back(fmt::format("n = {}: CPU skipped (above --cpu-max-size {}: {:.0f} GFLOP would take too long here; "
                                  "raise --cpu-max-size to run it)", n, o.cpu_max_size, flops / 1e9));
    }
    for (int g = 0; g < ngpu; ++g) {
      const std::string k = fmt::format("cuda{}", g);
      const bool prev = allow_tf32();
      try {
        set_allow_tf32(tf32);
        Tensor ag = a.to(Device::cuda(g)), bg = b.to(Device::cuda(g));
        Tensor cg;
        auto fn = [&] { cg = matmul(ag, bg); };
        // Each batch of matmuls between two events on the device's stream: no host sync per call.
        const Timing t = time_steady_state(
            [&](int64_t reps) { return cuda::time_ms(g, fn, int(reps)) * double(reps) * 1e-3; }, o.plan);
        set_allow_tf32(prev);
        const double ms = t.median() * 1e3;
        const double gf = flops / (ms * 1e-3) / 1e9;
        row[k + "_ms"] = ms;
        row[k + "_gflops"] = gf;
        row[k + "_timing"] = timing_json(t, "calls", "ms", [](double s) { return s * 1e3; });
        line += fmt::format("  {:>12.3f}  {:>15.1f}  {:>6}", ms, gf, spread_text(t));
        const std::string why = unsettled_note(t, o.plan, "matmul", "matmuls");
        if (!why.empty()) notes.push_back(fmt::format("n = {} on cuda:{}: {}", n, g, why));
        if (c_cpu.defined()) {
          const double rel = max_relative_difference(cg.cpu().contiguous(), c_cpu.contiguous());
          row[k + "_speedup"] = gf / cpu;
          row[k + "_max_rel_diff"] = rel;
          line += fmt::format("  {:>8.1f}x  {:>12.2e}", gf / cpu, rel);
        } else {
          line += fmt::format("  {:>9}  {:>12}", "-", "no CPU C");
        }
      } catch (const Error& e) {
        set_allow_tf32(prev);
        row[k + "_error"] = e.what();
        line += fmt::format("  {:>12}  {:>15}  {:>6}  {:>9}  {:>12}", "n/a", "n/a", "", "", "");
        notes.push_back(fmt::format("n = {}: cuda:{} failed: {}", n, g, e.what()));
      }
    }
    if (!o.json) fmt::print("{}\n", line);
    j["results"].push_back(row);
  }
  if (!o.json)
    for (const auto& s : notes) fmt::print("{}\n", s);
  if (ngpu == 0) j["gpu"] = no_gpu;
  if (o.json) fmt::print("{}\n", j.dump(2));
  return kExitOk;
}
}  // namespace

void register_bench_matmul(CLI::App& bench, Runner& run) {
  auto mm = std::make_shared<MatmulOpts>();
  auto* m = bench.add_subcommand("matmul", "Matrix-multiply GFLOP/s on the CPU and on each GPU, GPU checked against CPU");
  m->add_option("--sizes", mm->sizes, "Comma-separated matrix sizes n (n x n)")->capture_default_str();
  add_number(m, "--seed", mm->seed, "Seed of ember's Philox generator for A and B (same seed, same A and B everywhere)",
             any_number())->capture_default_str();
  add_number(m, "--cpu-max-size", mm->cpu_max_size, "Largest n run on the CPU (larger ones: GPU only, not compared)",
             at_least(1))->capture_default_str();
  add_number(m, "--threads", mm->threads, "CPU threads (default: all cores)", thread_count_rule());
  m->add_option("--dtype", mm->dtype, "float32, or tf32 (TF32 tensor cores on the GPU)")->capture_default_str();
  m->add_flag("--json", mm->json, "Print JSON");
  add_timing_flags(m, mm->plan, "--min-calls", "matmuls");
  m->callback([&run, mm] { run = [mm] { return run_matmul(*mm); }; });
}

}  // namespace ember::cli
