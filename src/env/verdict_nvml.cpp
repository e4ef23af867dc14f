// The doctor's verdict on NVML's facts (verdict_nvml.h). Each GPU gets one line per problem, worst
// first, or one PASS line with its clocks, power, temperature and load. What stops training on it
// (a failed row remap, memory waiting for a reset, an Xid that means the hardware) is a FAIL with
// the reset / RMA advice; what slows or surprises it is a WARN. Pure: no I/O.
#include "env/verdict_nvml.h"

#include <fmt/format.h>

#include <algorithm>

#include "env/nvml.h"

namespace ember::env::detail {
namespace {

constexpr double kGiB = double(1ull << 30);

// "Fake H200 (nvidia-smi index 0): 135.0 of 141.0 GiB in use by pid 4242 (135.0 GiB)"
std::string describe(const NvmlGpu& g) {
  std::string held;
  for (const auto& [pid, bytes] : g.processes)
    held += fmt::format("{}pid {} ({:.1f} GiB)", held.empty() ? "" : ", ", pid, bytes / kGiB);
  return fmt::format("{} (nvidia-smi index {}): {:.1f} of {:.1f} GiB in use{}", g.name, g.index, g.memory_used / kGiB,
                     g.memory_total / kGiB, held.empty() ? std::string() : " by " + held);
}

// "SM 1410/1980 MHz, memory 2619/2619 MHz, 312/700 W, 61 C, 87% busy": the nvidia-smi figures a
// user compares by eye, each left out when NVML did not give it.
std::string vitals(const NvmlGpu& g) {
  std::string s;
  auto put = [&](const std::string& x) { s += (s.empty() ? "" : ", ") + x; };
  if (g.clock_sm >= 0) put(g.clock_sm_max > 0 ? fmt::format("SM {}/{} MHz", g.clock_sm, g.clock_sm_max) : fmt::format("SM {} MHz", g.clock_sm));
  if (g.clock_mem >= 0)
    put(g.clock_mem_max > 0 ? fmt::format("memory {}/{} MHz", g.clock_mem, g.clock_mem_max) : fmt::format("memory {} MHz", g.clock_mem));
  if (g.power_mw >= 0)
    put(g.power_limit_mw > 0 ? fmt::format("{}/{} W", g.power_mw / 1000, g.power_limit_mw / 1000) : fmt::format("{} W", g.power_mw / 1000));
  if (g.temperature_c >= 0) put(fmt::format("{} C", g.temperature_c));
  if (g.utilization_gpu >= 0) put(fmt::format("{}% busy", g.utilization_gpu));
  return s;
}

// nvmlClocksEventReason bits that mean the hardware holds the clocks down (not an idle GPU):
// 0x8 HW slowdown, 0x20 SW thermal, 0x40 HW thermal, 0x80 HW power brake.
std::string slowdowns(uint64_t reasons) {
  std::string slow;
  for (auto [bit, words] : {std::pair{0x8ull, "hardware slowdown"}, std::pair{0x20ull, "software thermal slowdown"},
                            std::pair{0x40ull, "hardware thermal slowdown"}, std::pair{0x80ull, "power brake"}})
    if (reasons & bit) slow += (slow.empty() ? "" : ", ") + std::string(words);
  return slow;
}

std::string with_index(std::string fix, int index) {
  for (size_t p; (p = fix.find("-i N")) != std::string::npos;) fix.replace(p, 4, "-i " + std::to_string(index));
  return fix;
}

}  // namespace

void judge_nvml(const EnvFacts& f, std::vector<Check>& checks) {
  if (!f.nvml_error.empty())
    checks.push_back({Level::Warn, "nvml",
                      "NVML (" + (f.nvml_path.empty() ? std::string("libnvidia-ml.so.1") : f.nvml_path) +
                          ") did not answer: " + f.nvml_error + "; memory, MIG and ECC are unchecked",
                      "check `nvidia-smi` (it uses the same library); reinstall the driver if it fails too"});
  const bool mig_listed = f.cuda_visible_devices && f.cuda_visible_devices->find("MIG-") != std::string::npos;
  // Persistence matters on a headless Linux box: with no client the driver tears each GPU down and
  // every new process pays the re-initialisation (seconds per GPU). NVIDIA calls `nvidia-smi -pm 1`
  // legacy, near end-of-life, and recommends the persistence daemon (Driver Persistence guide).
  const bool headless = std::none_of(f.nvml_gpus.begin(), f.nvml_gpus.end(), [](const NvmlGpu& g) { return g.display_active == 1; });
  const bool multi_gpu = f.nvml_gpus.size() > 1;
  for (const NvmlGpu& g : f.nvml_gpus) {
    const std::string name = fmt::format("nvml gpu {}", g.index);
    const std::string what = describe(g);
    std::vector<Check> found;
    auto add = [&](Level l, std::string msg, std::string fix) { found.push_back({l, name, msg, with_index(fix, g.index)}); };
    const std::string rma = "report it to the vendor for replacement (RMA) with the output of "
                            "`nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER`; until then train on another GPU "
                            "(CUDA_VISIBLE_DEVICES)";
    // ---- what stops training on it ----
    if (g.remap_failure == 1)
      add(Level::Fail, fmt::format("row remapping failed ({} row(s) remapped for uncorrectable errors): the GPU has no spare "
                                   "memory row left for the failing one", std::max(0ll, g.remapped_rows_uncorrectable)),
          rma);
    if (g.remap_pending == 1)
      add(Level::Fail, "a memory row with an uncorrectable error waits for a GPU reset to be remapped; until then "
                       "the failing row stays in use",
          "reset the GPU when nothing runs on it: `sudo nvidia-smi -r -i N` (or reboot)");
    if (g.retired_pages_pending == 1)
      add(Level::Fail, fmt::format("a memory page waits for a reset to be retired ({} page(s) retired for double-bit "
                                   "errors so far)", std::max(0ll, g.retired_pages_dbe)),
          "reset the GPU when nothing runs on it (`sudo nvidia-smi -r -i N`) or reboot; if pages keep being retired, " + rma);
    if (g.ecc_uncorrected > 0)
      add(Level::Fail, fmt::format("{} uncorrected ECC error(s) since the driver loaded: kernels on it may crash (Xid "
                                   "48/63/94) or return wrong values", g.ecc_uncorrected),
          "reset the GPU (`sudo nvidia-smi -r -i N`) or reboot; if the errors come back, "
          "`nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER` shows what to report to the vendor");
    std::vector<unsigned long long> xids = g.xids;
    std::sort(xids.begin(), xids.end());
    xids.erase(std::unique(xids.begin(), xids.end()), xids.end());
    for (unsigned long long x : xids) {
      const XidMeaning m = xid_meaning(x);
      add(m.stops_training ? Level::Fail : Level::Warn, fmt::format("Xid {} while the doctor watched: {}", x, m.words), m.fix);
    }
    // ---- what slows it or surprises the user ----
    if (g.mig_mode == 1 && !mig_listed) {
      const std::string pick = g.mig_instances.empty()
                                   ? std::string("CUDA_VISIBLE_DEVICES=MIG-<uuid> from `nvidia-smi -L`")
                                   : "CUDA_VISIBLE_DEVICES=" + g.mig_instances.front();
      std::string list;
      for (const auto& u : g.mig_instances) list += (list.empty() ? "" : ", ") + u;
      add(Level::Warn, "MIG mode is on, so CUDA runs on one MIG instance, not the whole GPU" +
                           (list.empty() ? std::string(" (no instance created)") : " (instances: " + list + ")"),
          "pick the instance: " + pick + ", or turn MIG off: `sudo nvidia-smi -i N -mig 0` (then reset the GPU)");
    }
    if (g.memory_total > 0 && double(g.memory_used) > 0.9 * double(g.memory_total))
      add(Level::Warn, "less than 10% free, training on it will run out of memory",
          "stop the processes holding it (`nvidia-smi` lists them), or train on another GPU with CUDA_VISIBLE_DEVICES");
    if (const std::string slow = slowdowns(g.clock_event_reasons); !slow.empty())
      add(Level::Warn, "its clocks are held down (" + slow + ")" + (g.clock_sm >= 0 ? "; " + vitals(g) : std::string()),
          "check cooling and power: `nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER`");
    if (g.persistence_mode == 0 && headless && multi_gpu)
      add(Level::Warn, "persistence mode is off on a headless multi-GPU machine: the driver tears the GPU down "
                       "whenever no process holds it, so each run starts seconds slower",
          "enable NVIDIA's persistence daemon: `sudo systemctl enable --now nvidia-persistenced` (the legacy "
          "`sudo nvidia-smi -pm 1` works too, until reboot)");
    if (found.empty()) {
      const std::string v = vitals(g);
      checks.push_back({Level::Pass, name, what + (v.empty() ? "" : "; " + v), ""});
      continue;
    }
    std::stable_sort(found.begin(), found.end(), [](const Check& a, const Check& b) { return a.level > b.level; });
    // The first line describes the GPU in full; the others only name it.
    for (size_t k = 0; k < found.size(); ++k)
      found[k].message = (k == 0 ? what : fmt::format("{} (nvidia-smi index {})", g.name, g.index)) + ": " + found[k].message;
    checks.insert(checks.end(), found.begin(), found.end());
  }
}

}  // namespace ember::env::detail
