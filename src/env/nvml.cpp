// NVML loaded with dlopen (nvml.h): the entry points ember calls, one GPU read in full for the
// doctor, a cheap sample for the training monitor, and the Xid table. The signatures follow
// NVIDIA's nvml.h; the structs below copy its layouts (nvmlMemory_t, nvmlProcessInfo_v2_t,
// nvmlUtilization_t, nvmlEventData_t) so no NVML header is needed to build.
#include "env/nvml.h"

#include <dlfcn.h>
#include <link.h>

namespace ember::env::detail {
namespace {
using Dev = Nvml::Dev;
struct Memory {
  unsigned long long total, free, used;
};
struct Process {
  unsigned pid;
  unsigned long long used;
  unsigned gpu_instance, compute_instance;
};
struct Utilization {
  unsigned gpu, memory;
};
struct EventData {
  Dev device;
  unsigned long long type, data;
  unsigned gpu_instance, compute_instance;
};
// nvmlClockType_t, nvmlMemoryErrorType_t, nvmlEccCounterType_t, nvmlPageRetirementCause_t.
constexpr int kClockSm = 1, kClockMem = 2;
constexpr int kUncorrected = 1, kVolatile = 0, kAggregate = 1;
constexpr int kRetiredSbe = 0, kRetiredDbe = 1;

template <class F> void bind(void* lib, F& fn, const char* name) { fn = reinterpret_cast<F>(dlsym(lib, name)); }
}  // namespace

struct Nvml::Api {
  int (*init)() = nullptr;
  int (*shutdown)() = nullptr;
  int (*count)(unsigned*) = nullptr;
  int (*handle)(unsigned, Dev*) = nullptr;
  int (*by_uuid)(const char*, Dev*) = nullptr;
  int (*name)(Dev, char*, unsigned) = nullptr;
  int (*uuid)(Dev, char*, unsigned) = nullptr;
  int (*memory)(Dev, Memory*) = nullptr;
  int (*mig_mode)(Dev, unsigned*, unsigned*) = nullptr;
  int (*ecc)(Dev, int, int, unsigned long long*) = nullptr;
  int (*clock_events)(Dev, unsigned long long*) = nullptr;
  int (*processes)(Dev, unsigned*, Process*) = nullptr;
  int (*persistence)(Dev, int*) = nullptr;
  int (*display_active)(Dev, int*) = nullptr;
  int (*retired_pages)(Dev, int, unsigned*, unsigned long long*) = nullptr;
  int (*retired_pending)(Dev, int*) = nullptr;
  int (*remapped_rows)(Dev, unsigned*, unsigned*, unsigned*, unsigned*) = nullptr;
  int (*clock)(Dev, int, unsigned*) = nullptr;
  int (*max_clock)(Dev, int, unsigned*) = nullptr;
  int (*power)(Dev, unsigned*) = nullptr;
  int (*power_limit)(Dev, unsigned*) = nullptr;
  int (*temperature)(Dev, int, unsigned*) = nullptr;
  int (*utilization)(Dev, Utilization*) = nullptr;
  int (*max_mig)(Dev, unsigned*) = nullptr;
  int (*mig_handle)(Dev, unsigned, Dev*) = nullptr;
  int (*event_set_create)(void**) = nullptr;
  int (*register_events)(Dev, unsigned long long, void*) = nullptr;
  int (*event_wait)(void*, EventData*, unsigned) = nullptr;
  int (*event_set_free)(void*) = nullptr;
  const char* (*error_string)(int) = nullptr;
};

Nvml::~Nvml() {
  if (initialised_ && api_->shutdown != nullptr) api_->shutdown();
  delete api_;
  if (lib_ != nullptr) dlclose(lib_);
}

bool Nvml::open(const std::vector<std::string>& names) {
  for (const auto& n : names)
    if ((lib_ = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
  if (lib_ == nullptr) return false;
  link_map* lm = nullptr;
  if (dlinfo(lib_, RTLD_DI_LINKMAP, &lm) == 0 && lm != nullptr && lm->l_name != nullptr) path_ = lm->l_name;
  api_ = new Api;
  Api& a = *api_;
  bind(lib_, a.init, "nvmlInit_v2");
  bind(lib_, a.shutdown, "nvmlShutdown");
  bind(lib_, a.count, "nvmlDeviceGetCount_v2");
  bind(lib_, a.handle, "nvmlDeviceGetHandleByIndex_v2");
  bind(lib_, a.by_uuid, "nvmlDeviceGetHandleByUUID");
  bind(lib_, a.name, "nvmlDeviceGetName");
  bind(lib_, a.uuid, "nvmlDeviceGetUUID");
  bind(lib_, a.memory, "nvmlDeviceGetMemoryInfo");
  bind(lib_, a.mig_mode, "nvmlDeviceGetMigMode");
  bind(lib_, a.ecc, "nvmlDeviceGetTotalEccErrors");
  bind(lib_, a.clock_events, "nvmlDeviceGetCurrentClocksEventReasons");
  if (a.clock_events == nullptr) bind(lib_, a.clock_events, "nvmlDeviceGetCurrentClocksThrottleReasons");  // before R535
  bind(lib_, a.processes, "nvmlDeviceGetComputeRunningProcesses_v3");
  bind(lib_, a.persistence, "nvmlDeviceGetPersistenceMode");
  bind(lib_, a.display_active, "nvmlDeviceGetDisplayActive");
  bind(lib_, a.retired_pages, "nvmlDeviceGetRetiredPages");
  bind(lib_, a.retired_pending, "nvmlDeviceGetRetiredPagesPendingStatus");
  bind(lib_, a.remapped_rows, "nvmlDeviceGetRemappedRows");
  bind(lib_, a.clock, "nvmlDeviceGetClockInfo");
  bind(lib_, a.max_clock, "nvmlDeviceGetMaxClockInfo");
  bind(lib_, a.power, "nvmlDeviceGetPowerUsage");
  bind(lib_, a.power_limit, "nvmlDeviceGetEnforcedPowerLimit");
  bind(lib_, a.temperature, "nvmlDeviceGetTemperature");
  bind(lib_, a.utilization, "nvmlDeviceGetUtilizationRates");
  bind(lib_, a.max_mig, "nvmlDeviceGetMaxMigDeviceCount");
  bind(lib_, a.mig_handle, "nvmlDeviceGetMigDeviceHandleByIndex");
  bind(lib_, a.event_set_create, "nvmlEventSetCreate");
  bind(lib_, a.register_events, "nvmlDeviceRegisterEvents");
  bind(lib_, a.event_wait, "nvmlEventSetWait_v2");
  bind(lib_, a.event_set_free, "nvmlEventSetFree");
  bind(lib_, a.error_string, "nvmlErrorString");
  if (a.init == nullptr || a.count == nullptr || a.handle == nullptr) {
    error_ = "not an NVML library";
    return false;
  }
  if (int rc = a.init(); rc != kNvmlSuccess) {
    error_ = "nvmlInit failed with " + std::to_string(rc);
    if (a.error_string != nullptr && a.error_string(rc) != nullptr) error_ += std::string(" (") + a.error_string(rc) + ")";
    return false;
  }
  initialised_ = true;
  return true;
}

unsigned Nvml::device_count() const {
  unsigned n = 0;
  return ready() && api_->count(&n) == kNvmlSuccess ? n : 0;
}

Dev Nvml::device(unsigned index) const {
  Dev d = nullptr;
  return ready() && api_->handle(index, &d) == kNvmlSuccess ? d : nullptr;
}

Dev Nvml::device_by_uuid(const std::string& uuid) const {
  Dev d = nullptr;
  return ready() && api_->by_uuid != nullptr && api_->by_uuid(uuid.c_str(), &d) == kNvmlSuccess ? d : nullptr;
}

NvmlGpu Nvml::read_gpu(unsigned index) const {
  NvmlGpu g;
  g.index = int(index);
  Dev d = device(index);
  if (d == nullptr) return g;
  const Api& a = *api_;
  auto ok = [](auto fn, auto... args) { return fn != nullptr && fn(args...) == kNvmlSuccess; };
  char buf[96] = {};
  if (ok(a.name, d, buf, unsigned(sizeof buf - 1))) g.name = buf;
  char id[96] = {};
  if (ok(a.uuid, d, id, unsigned(sizeof id - 1))) g.uuid = id;
  if (Memory m{}; ok(a.memory, d, &m)) g.memory_total = m.total, g.memory_used = m.used;
  if (unsigned cur = 0, pend = 0; ok(a.mig_mode, d, &cur, &pend)) g.mig_mode = int(cur);
  // Uncorrected errors: volatile = since the driver loaded (what a reset clears), aggregate = over
  // the GPU's life (kept in its InfoROM).
  if (unsigned long long e = 0; ok(a.ecc, d, kUncorrected, kVolatile, &e)) g.ecc_uncorrected = (long long)e;
  if (unsigned long long e = 0; ok(a.ecc, d, kUncorrected, kAggregate, &e)) g.ecc_aggregate_uncorrected = (long long)e;
  if (unsigned long long r = 0; ok(a.clock_events, d, &r)) g.clock_event_reasons = r;
  if (int on = 0; ok(a.persistence, d, &on)) g.persistence_mode = on;
  if (int on = 0; ok(a.display_active, d, &on)) g.display_active = on;
  // Retired pages (Kepler to Volta; Ampere and newer remap rows instead): asked with a zero-sized
  // buffer, NVML answers the count (and INSUFFICIENT_SIZE when there are some).
  auto retired = [&](int cause) -> long long {
    unsigned n = 0;
    if (a.retired_pages == nullptr) return -1;
    const int rc = a.retired_pages(d, cause, &n, nullptr);
    return rc == kNvmlSuccess || rc == kNvmlInsufficientSize ? (long long)n : -1;
  };
  g.retired_pages_sbe = retired(kRetiredSbe);
  g.retired_pages_dbe = retired(kRetiredDbe);
  if (int pend = 0; ok(a.retired_pending, d, &pend)) g.retired_pages_pending = pend;
  if (unsigned corr = 0, unc = 0, pend = 0, fail = 0; ok(a.remapped_rows, d, &corr, &unc, &pend, &fail)) {
    g.remapped_rows_correctable = corr, g.remapped_rows_uncorrectable = unc;
    g.remap_pending = pend != 0, g.remap_failure = fail != 0;
  }
  auto mhz = [&](auto fn, int type) {
    unsigned v = 0;
    return ok(fn, d, type, &v) ? int(v) : -1;
  };
  g.clock_sm = mhz(a.clock, kClockSm), g.clock_sm_max = mhz(a.max_clock, kClockSm);
  g.clock_mem = mhz(a.clock, kClockMem), g.clock_mem_max = mhz(a.max_clock, kClockMem);
  if (unsigned mw = 0; ok(a.power, d, &mw)) g.power_mw = int(mw);
  if (unsigned mw = 0; ok(a.power_limit, d, &mw)) g.power_limit_mw = int(mw);
  if (unsigned c = 0; ok(a.temperature, d, 0 /* NVML_TEMPERATURE_GPU */, &c)) g.temperature_c = int(c);
  if (Utilization u{}; ok(a.utilization, d, &u)) g.utilization_gpu = int(u.gpu), g.utilization_memory = int(u.memory);
  // MIG instances: their UUIDs are what CUDA_VISIBLE_DEVICES takes (MIG-…). An index without an
  // instance behind it answers NOT_FOUND and is skipped.
  if (unsigned max = 0; g.mig_mode == 1 && ok(a.max_mig, d, &max))
    for (unsigned k = 0; k < max; ++k) {
      Dev mig = nullptr;
      char mid[96] = {};
      if (ok(a.mig_handle, d, k, &mig) && ok(a.uuid, mig, mid, unsigned(sizeof mid - 1))) g.mig_instances.push_back(mid);
    }
  Process p[64];
  unsigned np = 64;
  if (ok(a.processes, d, &np, p))
    for (unsigned k = 0; k < np && k < 64; ++k) g.processes.emplace_back(p[k].pid, p[k].used);
  return g;
}

void Nvml::watch_xids(std::vector<NvmlGpu>& gpus, int wait_ms) const {
  const Api& a = *api_;
  void* set = nullptr;
  if (!ready() || a.event_set_create == nullptr || a.register_events == nullptr || a.event_wait == nullptr ||
      a.event_set_create(&set) != kNvmlSuccess)
    return;
  std::vector<Dev> devs;
  for (const NvmlGpu& g : gpus) {
    Dev d = device(unsigned(g.index));
    // NOT_SUPPORTED on GPUs without events (and on MIG-enabled ones for some drivers): skipped.
    devs.push_back(d != nullptr && a.register_events(d, kNvmlEventXid, set) == kNvmlSuccess ? d : nullptr);
  }
  // One wait per event until a wait times out: a flood of Xids is capped so the doctor never hangs.
  for (int k = 0; k < 64; ++k) {
    EventData e{};
    if (a.event_wait(set, &e, unsigned(wait_ms)) != kNvmlSuccess) break;
    if (e.type != kNvmlEventXid) continue;
    for (size_t i = 0; i < devs.size(); ++i)
      if (devs[i] != nullptr && devs[i] == e.device) gpus[i].xids.push_back(e.data);
  }
  if (a.event_set_free != nullptr) a.event_set_free(set);
}

bool Nvml::sample(Dev d, Sample& s) const {
  if (!ready() || d == nullptr) return false;
  const Api& a = *api_;
  bool any = false;
  if (Utilization u{}; a.utilization != nullptr && a.utilization(d, &u) == kNvmlSuccess) s.utilization_gpu = int(u.gpu), any = true;
  if (Memory m{}; a.memory != nullptr && a.memory(d, &m) == kNvmlSuccess) s.memory_used = m.used, s.memory_total = m.total, any = true;
  if (unsigned mw = 0; a.power != nullptr && a.power(d, &mw) == kNvmlSuccess) s.power_mw = int(mw), any = true;
  if (unsigned mw = 0; a.power_limit != nullptr && a.power_limit(d, &mw) == kNvmlSuccess) s.power_limit_mw = int(mw);
  if (unsigned c = 0; a.temperature != nullptr && a.temperature(d, 0, &c) == kNvmlSuccess) s.temperature_c = int(c), any = true;
  return any;
}

XidMeaning xid_meaning(unsigned long long xid) {
  // After NVIDIA's Xid catalogue (https://docs.nvidia.com/deploy/xid-errors/): its "resolution
  // bucket" decides whether the GPU (stops_training) or the program is to blame.
  const char* reset = "reset the GPU (`sudo nvidia-smi -r -i N`) or reboot; if it comes back, report it to the vendor (RMA)";
  switch (xid) {
    case 13: return {"graphics engine exception: usually a program's illegal memory access or bad launch", false,
                     "rerun with `compute-sanitizer` to find the kernel; if every program hits it, reset the GPU"};
    case 31: return {"GPU memory page fault: usually a program's illegal address", false,
                     "rerun with `compute-sanitizer`; if every program hits it, reset the GPU"};
    case 43: return {"GPU stopped processing: a program's fault stopped its channel (the GPU is usually fine)", false,
                     "restart the program that failed"};
    case 45: return {"preemptive cleanup: a channel was torn down after a program exited or was killed", false,
                     "nothing, unless it follows another Xid"};
    case 48: return {"double-bit ECC error: uncorrectable memory error", true, reset};
    case 63: return {"ECC page retirement or row remapping recorded: takes effect at the next reset", false,
                     "reset the GPU (`sudo nvidia-smi -r -i N`) when it is idle"};
    case 64: return {"ECC page retirement or row remapping failed to record: failing memory", true,
                     "reset the GPU; if it recurs, report it to the vendor (RMA)"};
    case 74: return {"NVLink error: multi-GPU training over NVLink will fail", true,
                     "reset the GPUs on the link; `nvidia-smi nvlink -s` shows the links; RMA if it recurs"};
    case 79: return {"GPU has fallen off the bus: the host cannot reach it", true,
                     "reboot (a reset cannot reach a GPU off the bus); check its power cables, seating and PCIe slot"};
    case 92: return {"high single-bit ECC error rate: memory degrading", false,
                     "watch `nvidia-smi -q -d ECC`; plan to replace the GPU if it keeps rising"};
    case 94: return {"contained ECC error: the affected program was stopped, others run", false,
                     "restart the program; reset the GPU when idle so the row is remapped"};
    case 95: return {"uncontained ECC error: every program on the GPU is affected", true, reset};
    case 119: return {"GSP RPC timeout: the GPU's firmware stopped answering", true,
                      "reset the GPU or reboot; update the driver if it recurs"};
    case 120: return {"GSP error: the GPU's firmware failed", true, "reset the GPU or reboot; update the driver if it recurs"};
  }
  return {"see NVIDIA's Xid catalogue (docs.nvidia.com/deploy/xid-errors)", false,
          "look up the Xid in NVIDIA's catalogue; `dmesg | grep Xid` shows the driver's line"};
}

nlohmann::json nvml_gpu_json(const NvmlGpu& g) {
  nlohmann::json procs = nlohmann::json::array();
  for (const auto& [pid, bytes] : g.processes) procs.push_back({{"pid", pid}, {"used_memory", bytes}});
  return {{"index", g.index}, {"name", g.name}, {"uuid", g.uuid}, {"memory_total", g.memory_total},
          {"memory_used", g.memory_used}, {"processes", procs}, {"mig_mode", g.mig_mode},
          {"mig_instances", g.mig_instances}, {"ecc_uncorrected", g.ecc_uncorrected},
          {"ecc_aggregate_uncorrected", g.ecc_aggregate_uncorrected}, {"clock_event_reasons", g.clock_event_reasons},
          {"persistence_mode", g.persistence_mode}, {"display_active", g.display_active},
          {"retired_pages_sbe", g.retired_pages_sbe}, {"retired_pages_dbe", g.retired_pages_dbe},
          {"retired_pages_pending", g.retired_pages_pending},
          {"remapped_rows_correctable", g.remapped_rows_correctable},
          {"remapped_rows_uncorrectable", g.remapped_rows_uncorrectable}, {"remap_pending", g.remap_pending},
          {"remap_failure", g.remap_failure}, {"xids", g.xids}, {"clock_sm", g.clock_sm},
          {"clock_sm_max", g.clock_sm_max}, {"clock_mem", g.clock_mem}, {"clock_mem_max", g.clock_mem_max},
          {"power_mw", g.power_mw}, {"power_limit_mw", g.power_limit_mw}, {"temperature_c", g.temperature_c},
          {"utilization_gpu", g.utilization_gpu}, {"utilization_memory", g.utilization_memory}};
}

NvmlGpu nvml_gpu_from_json(const nlohmann::json& j) {
  NvmlGpu g;
  auto get = [&](const char* key, auto& field) {
    if (auto it = j.find(key); it != j.end() && !it->is_null()) it->get_to(field);
  };
  get("index", g.index), get("name", g.name), get("uuid", g.uuid), get("memory_total", g.memory_total);
  get("memory_used", g.memory_used), get("mig_mode", g.mig_mode), get("mig_instances", g.mig_instances);
  get("ecc_uncorrected", g.ecc_uncorrected), get("ecc_aggregate_uncorrected", g.ecc_aggregate_uncorrected);
  get("clock_event_reasons", g.clock_event_reasons), get("persistence_mode", g.persistence_mode);
  get("display_active", g.display_active), get("retired_pages_sbe", g.retired_pages_sbe);
  get("retired_pages_dbe", g.retired_pages_dbe), get("retired_pages_pending", g.retired_pages_pending);
  get("remapped_rows_correctable", g.remapped_rows_correctable);
  get("remapped_rows_uncorrectable", g.remapped_rows_uncorrectable), get("remap_pending", g.remap_pending);
  get("remap_failure", g.remap_failure), get("xids", g.xids), get("clock_sm", g.clock_sm);
  get("clock_sm_max", g.clock_sm_max), get("clock_mem", g.clock_mem), get("clock_mem_max", g.clock_mem_max);
  get("power_mw", g.power_mw), get("power_limit_mw", g.power_limit_mw), get("temperature_c", g.temperature_c);
  get("utilization_gpu", g.utilization_gpu), get("utilization_memory", g.utilization_memory);
  if (auto it = j.find("processes"); it != j.end())
    for (const auto& p : *it) g.processes.emplace_back(p.at("pid").get<unsigned>(), p.at("used_memory").get<uint64_t>());
  return g;
}

std::string nvml_report(const std::vector<std::string>& names, int xid_wait_ms) {
  Nvml nvml;
  nlohmann::json out = {{"loaded", false}};
  const bool ready = nvml.open(names);
  out["loaded"] = !nvml.path().empty() || !nvml.error().empty();
  out["path"] = nvml.path();
  out["error"] = nvml.error();
  nlohmann::json gpus = nlohmann::json::array();
  if (ready) {
    std::vector<NvmlGpu> all;
    for (unsigned i = 0, n = nvml.device_count(); i < n; ++i)
      if (nvml.device(i) != nullptr) all.push_back(nvml.read_gpu(i));
    nvml.watch_xids(all, xid_wait_ms);
    for (const NvmlGpu& g : all) gpus.push_back(nvml_gpu_json(g));
  }
  out["gpus"] = gpus;
  return out.dump() + "\n";
}

}  // namespace ember::env::detail
