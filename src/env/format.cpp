// Printing the doctor's findings: an aligned text report for people, JSON for scripts and bug
// reports. Both take the facts and the verdict; neither probes anything.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>

#include "ember/env/doctor.h"
#include "env/compat.h"
#include "env/nvml.h"

namespace ember::env {
namespace {
std::string opt_str(const std::optional<Version>& v, const char* none = "not found") {
  return v ? v->str() : none;
}
constexpr size_t kWidth = 80;

// Word-wraps `text` to kWidth columns: the first line starts with `first`, the others with `indent`
// spaces. A word longer than a line (a path, a URL) is broken after a '/', so a file name is never
// cut in two (issue 48); only one path component longer than a whole line is cut, so no line ever
// passes kWidth.
std::string wrap(const std::string& first, size_t indent, const std::string& text) {
  std::string out = first, word;
  size_t col = first.size();
  bool has_word = false;
  auto newline = [&] {
    out += '\n';
    out.append(indent, ' ');
    col = indent;
    has_word = false;
  };
  auto put = [&](std::string w) {
    if (has_word && col + 1 + w.size() > kWidth) newline();
    if (has_word) out += ' ', ++col;
    while (col + w.size() > kWidth) {
      const size_t room = kWidth > col ? kWidth - col : 0;
      // The longest head that fits and ends with '/': the rest starts a line with a whole name.
      const size_t slash = room == 0 ? std::string::npos : w.rfind('/', room - 1);
      size_t cut = slash != std::string::npos && slash > 0 ? slash + 1 : 0;
      if (cut == 0 && col > indent) {  // nothing fits after what is on this line: a fresh line first
        newline();
        continue;
      }
      if (cut == 0) cut = room;  // one component longer than a whole line
      out += w.substr(0, cut);
      w.erase(0, cut);
      newline();
    }
    out += w;
    col += w.size();
    has_word = true;
  };
  for (char c : text) {
    if (c == ' ' || c == '\n') {
      if (!word.empty()) put(word), word.clear();
    } else {
      word += c;
    }
  }
  if (!word.empty()) put(word);
  return out + "\n";
}

std::string archs(const std::vector<int>& a) {
  std::string s;
  for (int x : a) {
    if (!s.empty()) s += ' ';
    s += std::to_string(x);
  }
  return s.empty() ? "-" : s;
}
// ", persistence on, SM 1410/1980 MHz, 312/700 W, 61 C, 87% busy, MIG-…": the rest of what NVML
// said of a GPU, each part left out when unknown (the checks judge them).
std::string nvml_health(const NvmlGpu& g) {
  std::string s;
  if (g.persistence_mode >= 0) s += g.persistence_mode ? ", persistence on" : ", persistence off";
  if (g.clock_sm >= 0) s += g.clock_sm_max > 0 ? fmt::format(", SM {}/{} MHz", g.clock_sm, g.clock_sm_max) : fmt::format(", SM {} MHz", g.clock_sm);
  if (g.power_mw >= 0) s += g.power_limit_mw > 0 ? fmt::format(", {}/{} W", g.power_mw / 1000, g.power_limit_mw / 1000) : fmt::format(", {} W", g.power_mw / 1000);
  if (g.temperature_c >= 0) s += fmt::format(", {} C", g.temperature_c);
  if (g.utilization_gpu >= 0) s += fmt::format(", {}% busy", g.utilization_gpu);
  if (g.retired_pages_sbe > 0 || g.retired_pages_dbe > 0)
    s += fmt::format(", retired pages {} single-bit + {} double-bit", std::max(0ll, g.retired_pages_sbe), std::max(0ll, g.retired_pages_dbe));
  if (g.remapped_rows_correctable > 0 || g.remapped_rows_uncorrectable > 0)
    s += fmt::format(", remapped rows {} + {} uncorrectable", g.remapped_rows_correctable, g.remapped_rows_uncorrectable);
  for (unsigned long long x : g.xids) s += fmt::format(", Xid {}", x);
  for (const auto& u : g.mig_instances) s += ", " + u;
  return s;
}
}  // namespace

std::string format_report(const EnvFacts& f, const Verdict& v) {
  std::string out;
  auto row = [&](const char* k, const std::string& val) { out += wrap(fmt::format("  {:<22}", k), 24, val); };
  out += "ember build\n";
  row("version", f.ember_version);
  row("compiler", f.compiler + (f.build_type.empty() ? "" : " (" + f.build_type + ")"));
  row("CUDA", f.built_with_cuda ? "compiled with " + opt_str(f.cuda_compiled, "?") + ", sm: " + archs(f.cuda_sass_archs) +
                                      ", PTX: " + archs(f.cuda_ptx_archs)
                                : std::string("not compiled in (CPU-only build)"));
  row("oneDNN", f.onednn_version);
  row("BLAS", f.blas + (f.blas_build.empty() ? "" : ", " + f.blas_build + " build") +
                 (f.blas_path.empty() ? "" : " (" + f.blas_path + ")"));
  row("compat tables", compat::tables().date + " (the versions its fixes name; `ember doctor --tables`)");
  out += "host\n";
  row("OS", f.os);
  row("CPU", f.cpu_model);
  row("ISA", fmt::format("AVX2 {}, AVX-512 {}, AVX-512 bf16 {}, AMX {}", f.avx2 ? "yes" : "no", f.avx512f ? "yes" : "no",
                         f.avx512_bf16 ? "yes" : "no", f.amx ? "yes" : "no"));
  row("cores", std::to_string(f.cores));
  row("memory", fmt::format("{:.1f} GiB", double(f.memory_bytes) / double(1ull << 30)));
  if (!f.os_release.id.empty())
    row("distribution", f.os_release.id + (f.os_release.version_id.empty() ? "" : " " + f.os_release.version_id));
  if (!f.container.empty()) row("container", f.container + " (" + f.container_hint + ")");
  if (f.secure_boot) row("Secure Boot", *f.secure_boot ? "on" : "off");
  if (!f.conflicting_modules.empty()) {
    std::string mods;
    for (const auto& m : f.conflicting_modules) mods += (mods.empty() ? "" : ", ") + m;
    row("other GPU modules", mods + " loaded");
  }
  out += "NVIDIA\n";
  row("PCI bus", !f.nvidia_pci_gpus ? std::string(f.wsl ? "cannot tell (WSL2: the GPU is the Windows side's)"
                                                         : "cannot tell (/sys/bus/pci unreadable)")
                 : *f.nvidia_pci_gpus == 0 ? std::string("no NVIDIA GPU")
                                           : fmt::format("{} NVIDIA GPU(s)", *f.nvidia_pci_gpus));
  row("driver", f.driver_found ? (f.driver_version.empty() ? std::string("loaded") : f.driver_version) +
                                     (f.driver_cuda ? " (CUDA " + f.driver_cuda->str() + ")" : std::string())
                               : "not found (" + (f.driver_error.empty() ? std::string("libcuda.so.1 missing") : f.driver_error) +
                                     ")");
  if (!f.driver_path.empty())
    row("libcuda", f.driver_path + (!f.libcuda_version.empty() && f.libcuda_version != f.driver_version
                                        ? " (" + f.libcuda_version + ")"
                                        : std::string()));
  auto at = [](const std::string& path) { return path.empty() ? std::string() : ", " + path; };
  row("CUDA runtime", opt_str(f.cuda_runtime) + at(f.cudart_path));
  row("cuDNN", (f.cudnn ? f.cudnn->str() + (f.cudnn_cuda_major ? fmt::format(" (for CUDA {})", *f.cudnn_cuda_major) : "")
                        : std::string(f.cudnn_error.empty() ? "not found" : "broken (see checks)")) +
                   at(f.cudnn_path));
  row("cuBLAS", (f.cublas_error.empty() ? opt_str(f.cublas) : std::string("broken (see checks)")) + at(f.cublas_path));
  if (f.built_with_cuda || f.nccl || !f.nccl_error.empty())
    row("NCCL", f.nccl ? f.nccl->str() + at(f.nccl_path)
                       : std::string(f.nccl_error.empty() ? "not found (multi-GPU training only)" : "broken (see checks)"));
  row("GPUs", f.gpus.empty() ? std::string("none") : std::to_string(f.gpus.size()));
  for (const auto& g : f.gpus)
    row(("  cuda:" + std::to_string(g.index)).c_str(),
        fmt::format("{}, sm_{}{}, {:.1f} GiB", g.name, g.cc_major, g.cc_minor, double(g.total_memory) / double(1ull << 30)));
  if (!f.nvml_path.empty()) row("NVML", f.nvml_path);
  for (const auto& g : f.nvml_gpus)
    row(("  smi:" + std::to_string(g.index)).c_str(),
        fmt::format("{}, {:.1f}/{:.1f} GiB used, {} process(es), MIG {}, ECC uncorrected {}", g.name,
                    double(g.memory_used) / double(1ull << 30), double(g.memory_total) / double(1ull << 30),
                    g.processes.size(), g.mig_mode == 1 ? "on" : g.mig_mode == 0 ? "off" : "-",
                    g.ecc_uncorrected < 0 ? std::string("-") : std::to_string(g.ecc_uncorrected)) +
            nvml_health(g));
  row("CUDA_VISIBLE_DEVICES", f.cuda_visible_devices ? "'" + *f.cuda_visible_devices + "'" : std::string("(unset)"));
  if (!f.library_copies.empty()) {
    // Every copy found, so a second one with another version is visible before the checks name it.
    out += "library copies\n";
    for (const auto& c : f.library_copies)
      out += wrap(fmt::format("  {:<22}", c.soname), 24,
                  (c.version.empty() ? std::string("(version unknown)") : c.version) + " " + c.path + " (" +
                      c.source + ")");
  }
  if (!f.pythons.empty()) {
    out += "Python\n";
    for (const auto& p : f.pythons) {
      std::vector<std::string> parts;
      if (!p.error.empty()) parts.push_back("not audited: " + p.error);
      if (!p.python_version.empty()) parts.push_back("Python " + p.python_version + " (" + p.found_by + ")");
      if (p.torch)
        parts.push_back("torch " + p.torch->version +
                        (!p.torch->imported       ? std::string(" (does not import)")
                         : p.torch->cuda.empty()  ? std::string(" (CPU)")
                                                  : " (CUDA " + p.torch->cuda +
                                                        (p.torch->cuda_available == true ? ", sees the GPU)"
                                                         : p.torch->cuda_available == false ? ", no GPU seen)"
                                                                                            : ")")));
      if (p.tensorflow)
        parts.push_back((p.tensorflow->package.empty() ? std::string("tensorflow") : p.tensorflow->package) + " " +
                        p.tensorflow->version +
                        (!p.tensorflow->imported     ? std::string(" (does not import)")
                         : p.tensorflow->cuda_build ? " (CUDA " + p.tensorflow->cuda +
                                                          (p.tensorflow->gpus >= 0
                                                               ? fmt::format(", {} GPU(s) seen)", p.tensorflow->gpus)
                                                               : std::string(")"))
                                                    : std::string(" (CPU)")));
      if (p.jax) parts.push_back("jaxlib " + (p.jax->jaxlib.empty() ? std::string("-") : p.jax->jaxlib));
      if (p.onnxruntime) parts.push_back("onnxruntime " + p.onnxruntime->version);
      std::string wheels;  // their library directories are in --json
      for (const auto& w : p.nvidia_wheels) wheels += (wheels.empty() ? "nvidia wheels: " : ", ") + w.name + " " + w.version;
      if (!wheels.empty()) parts.push_back(wheels);
      std::string line;
      for (const auto& x : parts) line += (line.empty() ? "" : "; ") + x;
      out += wrap("  ", 4, p.path);
      out += wrap("    ", 4, line);
    }
  }
  out += "checks\n";
  for (const auto& c : v.checks) {
    if (c.name == "verdict") continue;  // said last, on its own
    out += wrap(fmt::format("  {}  {:<16}", level_name(c.level), c.name), 24, c.message);
    if (!c.fix.empty()) out += wrap(std::string(24, ' ') + "fix: ", 29, c.fix);
  }
  // The last two lines: the verdict, and the first thing to do.
  int fails = 0, warns = 0;
  for (const auto& c : v.checks)
    if (c.name != "verdict") fails += c.level == Level::Fail, warns += c.level == Level::Warn;
  std::string counts;
  if (fails || warns) counts = fmt::format(" ({} FAIL, {} WARN)", fails, warns);
  out += wrap("verdict: ", 9, v.summary + counts);
  if (!v.first_fix.empty())
    out += wrap("first:   ", 9, v.first_fix_check + ": " + v.first_fix);
  else if (fails == 0 && warns > 0)  // a working GPU, or no GPU at all: the WARN lines are advice, not a first step
    out += wrap("first:   ", 9, fmt::format("nothing blocks training; the WARN line{} above {} advice",
                                            warns > 1 ? "s" : "", warns > 1 ? "are" : "is"));
  return out;
}

namespace {
nlohmann::json nvml_json(const EnvFacts& f) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& g : f.nvml_gpus) gpus.push_back(detail::nvml_gpu_json(g));
  return {{"path", f.nvml_path}, {"error", f.nvml_error}, {"gpus", gpus}};
}

nlohmann::json os_json(const EnvFacts& f) {
  using nlohmann::json;
  json nodes = json::array();
  for (const auto& d : f.device_nodes)
    nodes.push_back({{"path", d.path}, {"exists", d.exists}, {"usable", d.usable}, {"owner", d.owner}});
  return {{"id", f.os_release.id}, {"id_like", f.os_release.id_like}, {"version_id", f.os_release.version_id},
          {"pretty_name", f.os_release.pretty_name}, {"container", f.container},
          {"container_hint", f.container_hint},
          {"secure_boot", f.secure_boot ? json(*f.secure_boot) : json(nullptr)},
          {"conflicting_modules", f.conflicting_modules}, {"device_nodes", nodes}};
}

nlohmann::json copies_json(const EnvFacts& f) {
  using nlohmann::json;
  json all = json::array();
  for (const auto& c : f.library_copies)
    all.push_back({{"soname", c.soname}, {"path", c.path}, {"real_path", c.real_path}, {"version", c.version},
                   {"source", c.source}, {"loader_rank", c.loader_rank}, {"loaded", c.loaded}});
  return all;
}

nlohmann::json loads_json(const std::vector<LibraryLoad>& loads) {
  nlohmann::json all = nlohmann::json::array();
  for (const LibraryLoad& l : loads) all.push_back({{"soname", l.soname}, {"path", l.path}, {"error", l.error}});
  return all;
}

nlohmann::json pythons_json(const EnvFacts& f) {
  using nlohmann::json;
  json all = json::array();
  auto or_null = [](bool has, json j) { return has ? j : json(nullptr); };
  for (const auto& p : f.pythons) {
    json wheels = json::array();
    for (const auto& w : p.nvidia_wheels) wheels.push_back({{"name", w.name}, {"version", w.version}, {"lib_dirs", w.lib_dirs}});
    json jax = nullptr;
    if (p.jax) {
      json plugins = json::object();
      for (const auto& [n, ver] : p.jax->cuda_plugins) plugins[n] = ver;
      jax = {{"jax", p.jax->jax}, {"jaxlib", p.jax->jaxlib}, {"cuda_plugins", plugins}, {"devices", p.jax->devices},
             {"devices_error", p.jax->devices_error}};
    }
    all.push_back({
        {"path", p.path}, {"found_by", p.found_by}, {"error", p.error}, {"python", p.python_version},
        {"torch", or_null(p.torch.has_value(),
                          p.torch ? json{{"version", p.torch->version}, {"imported", p.torch->imported},
                                         {"cuda", p.torch->cuda}, {"cudnn", p.torch->cudnn},
                                         {"cudnn_compiled", p.torch->cudnn_compiled},
                                         {"cudnn_error", p.torch->cudnn_error}, {"arch_list", p.torch->arch_list},
                                         {"cuda_available", p.torch->cuda_available ? json(*p.torch->cuda_available)
                                                                                    : json(nullptr)},
                                         {"device_count", p.torch->device_count}, {"cuda_error", p.torch->cuda_error},
                                         {"libraries", loads_json(p.torch->libraries)}}
                                  : json())},
        {"tensorflow", or_null(p.tensorflow.has_value(),
                               p.tensorflow ? json{{"version", p.tensorflow->version},
                                                   {"package", p.tensorflow->package},
                                                   {"imported", p.tensorflow->imported},
                                                   {"is_cuda_build", p.tensorflow->cuda_build},
                                                   {"cuda", p.tensorflow->cuda}, {"cudnn", p.tensorflow->cudnn},
                                                   {"gpus", p.tensorflow->gpus}, {"gpu_error", p.tensorflow->gpu_error},
                                                   {"libraries", loads_json(p.tensorflow->libraries)}}
                                            : json())},
        {"jax", jax},
        {"onnxruntime", or_null(p.onnxruntime.has_value(),
                                p.onnxruntime ? json{{"version", p.onnxruntime->version},
                                                     {"providers", p.onnxruntime->providers}}
                                              : json())},
        {"import_errors", p.import_errors},
        {"nvidia_wheels", wheels},
    });
  }
  return all;
}
}  // namespace

std::string to_json(const EnvFacts& f, const Verdict& v) {
  using nlohmann::json;
  auto ver = [](const std::optional<Version>& x) { return x ? json(x->str()) : json(nullptr); };
  json gpus = json::array();
  for (const auto& g : f.gpus)
    gpus.push_back({{"index", g.index}, {"name", g.name}, {"compute_capability", fmt::format("{}.{}", g.cc_major, g.cc_minor)},
                    {"total_memory", g.total_memory}});
  json checks = json::array();
  for (const auto& c : v.checks)
    checks.push_back({{"level", level_name(c.level)}, {"name", c.name}, {"message", c.message}, {"fix", c.fix}});
  json j = {
      {"schema", kJsonSchema},
      {"schema_minor", kJsonSchemaMinor},
      {"build", {{"version", f.ember_version}, {"compiler", f.compiler}, {"build_type", f.build_type},
                 {"cuda", f.built_with_cuda}, {"cuda_compiled", ver(f.cuda_compiled)},
                 {"cuda_sass_archs", f.cuda_sass_archs}, {"cuda_ptx_archs", f.cuda_ptx_archs},
                 {"onednn", f.onednn_version}, {"blas", f.blas}, {"blas_build", f.blas_build},
                 {"blas_path", f.blas_path}, {"blas_threads", f.blas_threads}}},
      {"host", {{"os", f.os}, {"cpu", f.cpu_model}, {"avx2", f.avx2}, {"avx512f", f.avx512f},
                {"avx512_bf16", f.avx512_bf16}, {"amx", f.amx}, {"cores", f.cores}, {"memory_bytes", f.memory_bytes}}},
      {"nvidia", {{"driver_found", f.driver_found}, {"driver_version", f.driver_version},
                  {"driver_cuda", ver(f.driver_cuda)}, {"driver_error", f.driver_error}, {"driver_fix", f.driver_fix},
                  {"cuda_runtime", ver(f.cuda_runtime)}, {"cudnn", ver(f.cudnn)},
                  {"cudnn_cuda_major", f.cudnn_cuda_major ? json(*f.cudnn_cuda_major) : json(nullptr)},
                  {"cublas", ver(f.cublas)}, {"cudnn_error", f.cudnn_error}, {"cublas_error", f.cublas_error}, {"physical_gpus", f.physical_gpus}, {"gpus", gpus},
                  {"cuda_visible_devices", f.cuda_visible_devices ? json(*f.cuda_visible_devices) : json(nullptr)},
                  {"kernel_module_loaded", f.kernel_module_loaded ? json(*f.kernel_module_loaded) : json(nullptr)},
                  {"wsl", f.wsl}, {"libcuda_version", f.libcuda_version}, {"driver_error_code", f.driver_error_code},
                  {"pci_gpus", f.nvidia_pci_gpus ? json(*f.nvidia_pci_gpus) : json(nullptr)},
                  {"nccl", ver(f.nccl)}, {"nccl_error", f.nccl_error},
                  {"paths", {{"libcuda", f.driver_path}, {"cudart", f.cudart_path}, {"cudnn", f.cudnn_path},
                             {"cublas", f.cublas_path}, {"nccl", f.nccl_path}}}}},
      {"os", os_json(f)},
      {"library_copies", copies_json(f)},
      {"checks", checks},
      {"verdict", {{"can_train", v.can_train()}, {"cpu_usable", v.cpu_usable}, {"gpu_usable", v.gpu_usable},
                   {"training_device", v.training_device}, {"summary", v.summary}, {"first_fix", v.first_fix},
                   {"first_fix_check", v.first_fix_check}}},
      {"nvml", nvml_json(f)},
      {"pythons", pythons_json(f)},
      {"compat_tables", compat::tables().date},
  };
  return j.dump(2);
}

}  // namespace ember::env
