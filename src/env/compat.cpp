// Reads the doctor's compatibility tables (src/env/compat_tables.json, compiled in as a string by
// CMakeLists.txt) and answers the questions the verdict asks of them: which driver a toolkit
// needs on Linux and Windows, which toolkit still builds for a GPU, which PyTorch wheel index,
// TensorFlow release and JAX extra fit a driver and its GPUs.
#include "env/compat.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "ember/core/error.h"

namespace ember::env::detail {
extern const char kCompatTablesJson[];  // generated from src/env/compat_tables.json
}

namespace ember::env::compat {
namespace {

using nlohmann::json;

Version parse_version(const json& j, const char* field) {
  if (!j.is_string()) throw std::runtime_error(std::string("compat tables: '") + field + "' is not a version string");
  Version v;
  if (std::sscanf(j.get<std::string>().c_str(), "%d.%d", &v.major, &v.minor) != 2)
    throw std::runtime_error(std::string("compat tables: '") + field + "' = " + j.dump() + " is not major.minor");
  return v;
}

std::optional<Version> opt_version(const json& row, const char* field) {
  if (!row.contains(field) || row[field].is_null()) return std::nullopt;
  return parse_version(row[field], field);
}

std::string opt_string(const json& row, const char* field) {
  if (!row.contains(field) || row[field].is_null()) return "";
  return row[field].get<std::string>();
}

// Every row names a known source and the date it was checked.
Provenance provenance(const json& row, const Tables& t, const char* table) {
  Provenance p;
  p.source = row.at("source").get<std::string>();
  p.checked = row.at("checked").get<std::string>();
  p.note = opt_string(row, "note");
  p.confirmed = row.value("confirmed", true);
  if (!t.sources.count(p.source))
    throw std::runtime_error(fmt::format("compat tables: a row of '{}' names source '{}', which 'sources' does not "
                                         "define", table, p.source));
  if (p.checked.size() != 10 || p.checked[4] != '-' || p.checked[7] != '-')
    throw std::runtime_error(fmt::format("compat tables: a row of '{}' has checked = '{}', not YYYY-MM-DD", table,
                                         p.checked));
  return p;
}

Version mm(const Version& v) { return {v.major, v.minor, 0}; }

// The wheel ranking's torch key: the last release an index carries, the current ones highest.
Version last_torch_key(const TorchWheel& w) { return w.last_torch ? *w.last_torch : Version{999, 0, 0}; }

}  // namespace

Tables parse(const std::string& text) {
  const json j = json::parse(text);
  Tables t;
  t.schema = j.at("schema").get<int>();
  t.date = j.at("date").get<std::string>();
  for (const auto& [k, v] : j.at("sources").items()) t.sources[k] = v.get<std::string>();
  for (const auto& s : j.at("checked")) t.checked.push_back(s.get<std::string>());
  for (const auto& r : j.at("toolkits")) {
    ToolkitRow row;
    row.cuda = parse_version(r.at("cuda"), "cuda");
    row.linux_driver = opt_string(r, "linux");
    row.windows_driver = opt_string(r, "windows");
    row.branch_at_least = row.linux_driver.empty() ? r.at("branch_at_least").get<int>() : driver_branch(row.linux_driver);
    row.from = provenance(r, t, "toolkits");
    t.toolkits.push_back(row);
  }
  for (const auto& r : j.at("minor_compat"))
    t.minor_compat.push_back({r.at("cuda_major").get<int>(), r.at("linux").get<std::string>(), opt_string(r, "windows"),
                              provenance(r, t, "minor_compat")});
  for (const auto& r : j.at("archs")) {
    ArchRow a;
    a.cc = r.at("cc").get<int>();
    a.family = r.at("family").get<std::string>();
    a.first_cuda = parse_version(r.at("first_cuda"), "first_cuda");
    a.last_cuda = opt_version(r, "last_cuda");
    if (r.contains("last_driver_branch") && !r["last_driver_branch"].is_null())
      a.last_driver_branch = r["last_driver_branch"].get<int>();
    a.last_cudnn = opt_version(r, "last_cudnn");
    a.kernel_modules = r.at("kernel_modules").get<std::string>();
    if (a.kernel_modules != "proprietary" && a.kernel_modules != "either" && a.kernel_modules != "open")
      throw std::runtime_error("compat tables: kernel_modules of cc " + std::to_string(a.cc) + " is '" +
                               a.kernel_modules + "', not proprietary, either or open");
    a.from = provenance(r, t, "archs");
    t.archs.push_back(a);
  }
  for (const auto& r : j.at("torch_wheels")) {
    TorchWheel w;
    w.index = r.at("index").get<std::string>();
    w.cuda = parse_version(r.at("cuda"), "cuda");
    w.first_torch = parse_version(r.at("first_torch"), "first_torch");
    w.last_torch = opt_version(r, "last_torch");
    w.archs = r.at("archs").get<std::vector<int>>();
    w.ptx = r.at("ptx").get<bool>();
    w.from = provenance(r, t, "torch_wheels");
    t.torch_wheels.push_back(w);
  }
  for (const auto& r : j.at("tensorflow"))
    t.tensorflow.push_back({parse_version(r.at("version"), "version"), parse_version(r.at("cuda"), "cuda"),
                            parse_version(r.at("cudnn"), "cudnn"), r.at("and_cuda").get<bool>(),
                            r.at("package").get<std::string>(), provenance(r, t, "tensorflow")});
  for (const auto& r : j.at("jax"))
    t.jax.push_back({r.at("extra").get<std::string>(), r.at("cuda_major").get<int>(), r.at("min_cc").get<int>(),
                     r.at("min_driver_branch").get<int>(), provenance(r, t, "jax")});
  for (const auto& r : j.at("pip_wheels"))
    t.pip_wheels.push_back({r.at("cuda_major").get<int>(), r.at("cudart").get<std::string>(),
                            r.at("cublas").get<std::string>(), r.at("cudnn").get<std::string>(),
                            r.at("nccl").get<std::string>(), provenance(r, t, "pip_wheels")});
  for (const auto& r : j.at("distro_drivers"))
    t.distro_drivers.push_back({r.at("id").get<std::string>(), r.at("version_id").get<std::string>(),
                                r.at("package").get<std::string>(), r.at("version").get<std::string>(),
                                r.at("suite").get<std::string>(), opt_string(r, "backports"),
                                opt_string(r, "cudnn_package"), opt_string(r, "cudnn_version"),
                                r.value("cudnn_cuda_major", 0), opt_string(r, "cudnn_component"),
                                provenance(r, t, "distro_drivers")});
  if (t.toolkits.empty() || t.minor_compat.empty() || t.pip_wheels.empty())
    throw std::runtime_error("compat tables: toolkits, minor_compat and pip_wheels must not be empty");
  return t;
}

const Tables& tables() {
  static const Tables t = [] {
    try {
      return parse(detail::kCompatTablesJson);
    } catch (const std::exception& e) {
      throw InternalError(std::string("src/env/compat_tables.json, compiled into this build, is malformed: ") + e.what());
    }
  }();
  return t;
}

std::string tables_month() { return tables().date.substr(0, 7); }

std::optional<DriverAdvice> min_driver_for(const Version& cuda) {
  const Version want = mm(cuda);
  const ToolkitRow* below = nullptr;  // the newest row at or below `want`
  for (const ToolkitRow& r : tables().toolkits)
    if (r.cuda <= want) below = &r;
  if (below == nullptr) return std::nullopt;
  DriverAdvice a;
  a.branch_at_least = below->branch_at_least;
  if (below->cuda == want) {
    a.driver = below->linux_driver;
    a.exact = !below->linux_driver.empty();
    return a;
  }
  // A minor the table skips (12.7 does not exist) lies between rows; past the last row it is a floor.
  a.past_table = below == &tables().toolkits.back();
  if (!a.past_table && below->cuda.major != want.major) return std::nullopt;  // 10.x before the table
  a.driver = below->linux_driver;
  return a;
}

std::string driver_requirement(const Version& cuda) {
  const Version want = mm(cuda);
  const auto a = min_driver_for(want);
  if (!a) return fmt::format("one that supports CUDA {} (the CUDA release notes' driver table)", want.str());
  if (a->exact) return a->driver + " or newer";
  if (a->past_table)
    return fmt::format("of branch R{} or newer at least (CUDA {}: newer than this table ({}): driver floor unknown, "
                       ">= R{} at least; its release notes name it)",
                       a->branch_at_least, want.str(), tables_month(), a->branch_at_least);
  return fmt::format("of branch R{} or newer (CUDA {}'s driver is not confirmed in ember's tables of {})",
                     a->branch_at_least, want.str(), tables().date);
}

std::string windows_driver_requirement(const Version& cuda) {
  const Version want = mm(cuda);
  const MinorCompatRow* floor = minor_compat(want.major);
  const std::string through =
      floor == nullptr ? std::string()
      : floor->windows_driver.empty()
          ? fmt::format(", at least R{} through CUDA {}.x minor-version compatibility", driver_branch(floor->linux_driver),
                        want.major)
          : fmt::format(", or {} or newer through CUDA {}.x minor-version compatibility", floor->windows_driver,
                        want.major);
  for (const ToolkitRow& r : tables().toolkits) {
    if (r.cuda != want) continue;
    if (!r.windows_driver.empty())  // the GA row; the major's floor runs it too, unless it is that floor
      return r.windows_driver + " or newer" +
             (floor != nullptr && floor->windows_driver == r.windows_driver ? std::string() : through);
    return fmt::format("a driver of branch R{} or newer (NVIDIA names no Windows number for CUDA {}){}",
                       r.branch_at_least, want.str(), through);
  }
  const auto a = min_driver_for(want);
  if (!a) return fmt::format("one that supports CUDA {}", want.str());
  return fmt::format("a driver of branch R{} or newer ({}){}", a->branch_at_least,
                     a->past_table ? "CUDA " + want.str() + " is newer than ember's tables of " + tables().date
                                   : "CUDA " + want.str() + "'s Windows driver is not in ember's tables",
                     through);
}

bool newer_than_tables(const Version& cuda) { return tables().toolkits.back().cuda < mm(cuda); }

int driver_branch(const std::string& driver_version) {
  int b = 0;
  return std::sscanf(driver_version.c_str(), "%d", &b) == 1 ? b : 0;
}

bool driver_at_least(const std::string& a, const std::string& b) {
  auto parts = [](const std::string& v) {
    std::vector<long> p;
    long x = 0;
    bool any = false;
    for (char c : v + ".") {
      if (c >= '0' && c <= '9') x = x * 10 + (c - '0'), any = true;
      else if (c == '.') p.push_back(any ? x : 0), x = 0, any = false;
      else break;
    }
    return p;
  };
  std::vector<long> pa = parts(a), pb = parts(b);
  const size_t n = std::max(pa.size(), pb.size());
  pa.resize(n), pb.resize(n);
  return pa >= pb;
}

int driver_branch_for(const Version& cuda) {
  const auto d = min_driver_for(mm(cuda));
  return d ? d->branch_at_least : 0;
}

const MinorCompatRow* minor_compat(int cuda_major) {
  for (const MinorCompatRow& r : tables().minor_compat)
    if (r.cuda_major == cuda_major) return &r;
  return nullptr;
}

bool driver_runs(const std::string& driver_version, const std::optional<Version>& driver_cuda, const Version& cuda) {
  if (!driver_cuda) return false;
  const Version want = mm(cuda);
  if (want <= mm(*driver_cuda)) return true;  // natively (a newer driver runs older CUDA)
  if (want.major != driver_cuda->major || want.major < 11) return false;
  const MinorCompatRow* floor = minor_compat(want.major);
  // The driver reports a CUDA of this major: it is at least the major's first branch; the floor may be
  // a later release of that branch (11.x: 450.80.02, while 11.0 shipped with 450.51.05).
  return floor == nullptr || driver_version.empty() || driver_at_least(driver_version, floor->linux_driver);
}

const DistroDriver* distro_driver(const std::string& id, const std::string& version_id) {
  for (const DistroDriver& d : tables().distro_drivers)
    if (d.id == id && (d.version_id == version_id || version_id.starts_with(d.version_id + "."))) return &d;
  return nullptr;
}

const PipWheels& pip_wheels(int cuda_major) {
  const auto& all = tables().pip_wheels;
  for (const PipWheels& p : all)
    if (p.cuda_major == cuda_major) return p;
  return cuda_major < all.front().cuda_major ? all.front() : all.back();
}

const ArchRow* arch(int cc) {
  for (const ArchRow& a : tables().archs)
    if (a.cc == cc) return &a;
  return nullptr;
}

bool toolkit_builds_for(const Version& cuda, int cc) {
  const ArchRow* a = arch(cc);
  if (a == nullptr) return false;
  const Version want = mm(cuda);
  return a->first_cuda <= want && (!a->last_cuda || want <= *a->last_cuda);
}

std::optional<Version> newest_toolkit_for(int cc) {
  std::optional<Version> best;
  for (const ToolkitRow& r : tables().toolkits)  // one whose driver is known: a fix names it
    if (toolkit_builds_for(r.cuda, cc) && !r.linux_driver.empty()) best = r.cuda;
  return best;
}

std::optional<Version> newest_toolkit_for_branch(int branch) {
  std::optional<Version> best;
  for (const ToolkitRow& r : tables().toolkits)
    if (r.branch_at_least <= branch && !r.linux_driver.empty()) best = r.cuda;
  return best;
}

bool wheel_runs_on(const TorchWheel& w, int cc) {
  for (int a : w.archs)
    if (a / 10 == cc / 10 && a % 10 <= cc % 10) return true;
  if (w.ptx && !w.archs.empty() && *std::max_element(w.archs.begin(), w.archs.end()) <= cc) return true;
  return false;
}

const TorchWheel* torch_wheel_for(const std::string& driver_version, const std::optional<Version>& driver_cuda,
                                  const std::vector<int>& ccs) {
  const TorchWheel* best = nullptr;
  auto key = [&](const TorchWheel& w) {
    const bool native = driver_cuda && w.cuda <= mm(*driver_cuda);
    return std::tuple(last_torch_key(w), native, w.cuda);
  };
  for (const TorchWheel& w : tables().torch_wheels) {
    if (!driver_runs(driver_version, driver_cuda, w.cuda)) continue;
    if (!std::all_of(ccs.begin(), ccs.end(), [&](int cc) { return wheel_runs_on(w, cc); })) continue;
    if (best == nullptr || key(*best) < key(w)) best = &w;
  }
  return best;
}

const TorchWheel* torch_wheel_after_upgrade(const std::vector<int>& ccs) {
  const TorchWheel* best = nullptr;
  for (const TorchWheel& w : tables().torch_wheels) {
    if (!std::all_of(ccs.begin(), ccs.end(), [&](int cc) { return wheel_runs_on(w, cc); })) continue;
    // Newest torch first; of those alike, the oldest CUDA: the smallest driver upgrade.
    if (best == nullptr || last_torch_key(*best) < last_torch_key(w) ||
        (last_torch_key(*best) == last_torch_key(w) && w.cuda < best->cuda))
      best = &w;
  }
  return best;
}

std::string torch_releases(const TorchWheel& w) {
  if (!w.last_torch) return w.first_torch.str() + " and later";
  if (*w.last_torch == w.first_torch) return w.first_torch.str() + " only";
  return w.first_torch.str() + " to " + w.last_torch->str();
}

const TensorflowRow* tensorflow_row(const Version& version) {
  const TensorflowRow* row = nullptr;
  for (const TensorflowRow& r : tables().tensorflow)
    if (r.version <= mm(version)) row = &r;
  return row;
}

const TensorflowRow* tensorflow_for(int cuda_major, int cudnn_major) {
  const TensorflowRow* row = nullptr;
  for (const TensorflowRow& r : tables().tensorflow)
    if (r.cuda.major == cuda_major && (cudnn_major == 0 || r.cudnn.major == cudnn_major)) row = &r;
  return row;
}

const TensorflowRow* newest_tensorflow_for_driver(const std::string& driver_version,
                                                  const std::optional<Version>& driver_cuda) {
  const TensorflowRow* row = nullptr;
  for (const TensorflowRow& r : tables().tensorflow)
    if (driver_runs(driver_version, driver_cuda, r.cuda)) row = &r;
  return row;
}

const JaxRow* jax_extra_for(const std::string& driver_version, const std::optional<Version>& driver_cuda,
                            const std::vector<int>& ccs) {
  const JaxRow* best = nullptr;
  const int branch = driver_branch(driver_version);
  for (const JaxRow& r : tables().jax) {
    const bool driver_ok = branch > 0 ? branch >= r.min_driver_branch : driver_cuda && driver_cuda->major >= r.cuda_major;
    if (!driver_ok) continue;
    if (!std::all_of(ccs.begin(), ccs.end(), [&](int cc) { return cc >= r.min_cc; })) continue;
    best = &r;
  }
  return best;
}

const JaxRow* jax_row(int cuda_major) {
  for (const JaxRow& r : tables().jax)
    if (r.cuda_major == cuda_major) return &r;
  return nullptr;
}

std::string markdown_tables() {
  const Tables& t = tables();
  std::string out;
  auto row = [&](std::initializer_list<std::string> cells) {
    out += "|";
    for (const std::string& c : cells) {
      out += ' ';
      out += c.empty() ? std::string("-") : c;
      out += " |";
    }
    out += "\n";
  };
  auto mark = [](const Provenance& p) { return p.confirmed ? p.source : p.source + " (not confirmed)"; };
  out += fmt::format("Compatibility tables of {} (src/env/compat_tables.json).\n\n", t.date);
  out += "CUDA toolkits and the driver of their GA release:\n\n";
  row({"CUDA", "Linux driver", "Windows driver", "source", "checked", "note"});
  out += "|---|---|---|---|---|---|\n";
  for (const ToolkitRow& r : t.toolkits)
    row({r.cuda.str(), r.linux_driver.empty() ? fmt::format("R{} or newer", r.branch_at_least) : r.linux_driver,
         r.windows_driver, mark(r.from), r.from.checked, r.from.note});
  out += "\nMinor-version compatibility (the lowest driver that runs every minor of a major):\n\n";
  row({"CUDA", "Linux driver", "Windows driver", "source", "checked", "note"});
  out += "|---|---|---|---|---|---|\n";
  for (const MinorCompatRow& r : t.minor_compat)
    row({fmt::format("{}.x", r.cuda_major), r.linux_driver, r.windows_driver, mark(r.from), r.from.checked,
         r.from.note});
  out += "\nGPU architectures:\n\n";
  row({"CC", "family", "first CUDA", "last CUDA", "last driver", "last cuDNN", "kernel modules", "source", "checked"});
  out += "|---|---|---|---|---|---|---|---|---|\n";
  for (const ArchRow& a : t.archs)
    row({fmt::format("{}.{}", a.cc / 10, a.cc % 10), a.family, a.first_cuda.str(), a.last_cuda ? a.last_cuda->str() : "",
         a.last_driver_branch ? fmt::format("R{}", *a.last_driver_branch) : "", a.last_cudnn ? a.last_cudnn->str() : "",
         a.kernel_modules, mark(a.from), a.from.checked});
  out += "\nPyTorch wheel indexes (https://download.pytorch.org/whl/INDEX):\n\n";
  row({"index", "CUDA", "torch", "SASS", "PTX", "source", "checked", "note"});
  out += "|---|---|---|---|---|---|---|---|\n";
  for (const TorchWheel& w : t.torch_wheels) {
    std::string archs;
    for (int a : w.archs) archs += fmt::format("{}sm_{}", archs.empty() ? "" : " ", a);
    row({w.index, w.cuda.str(), torch_releases(w), archs, w.ptx ? "yes" : "no", mark(w.from), w.from.checked,
         w.from.note});
  }
  out += "\nTensorFlow GPU builds (a row covers its release and the later ones up to the next row):\n\n";
  row({"TensorFlow", "CUDA", "cuDNN", "package", "tensorflow[and-cuda]", "source", "checked"});
  out += "|---|---|---|---|---|---|---|\n";
  for (const TensorflowRow& r : t.tensorflow)
    row({r.version.str(), r.cuda.str(), r.cudnn.str(), r.package, r.and_cuda ? "yes" : "no", mark(r.from),
         r.from.checked});
  out += "\nJAX's CUDA extras:\n\n";
  row({"extra", "CUDA", "lowest CC", "lowest driver", "source", "checked"});
  out += "|---|---|---|---|---|---|\n";
  for (const JaxRow& r : t.jax)
    row({fmt::format("jax[{}]", r.extra), std::to_string(r.cuda_major), fmt::format("{}.{}", r.min_cc / 10, r.min_cc % 10),
         fmt::format("R{}", r.min_driver_branch), mark(r.from), r.from.checked});
  out += "\nNVIDIA's pip wheels:\n\n";
  row({"CUDA", "runtime", "cuBLAS", "cuDNN", "NCCL", "source", "checked"});
  out += "|---|---|---|---|---|---|---|\n";
  for (const PipWheels& p : t.pip_wheels)
    row({std::to_string(p.cuda_major), p.cudart, p.cublas, p.cudnn, p.nccl, mark(p.from), p.from.checked});
  out += "\nThe distributions' own packages:\n\n";
  row({"distribution", "driver package", "version", "backports", "cuDNN package", "source", "checked"});
  out += "|---|---|---|---|---|---|---|\n";
  for (const DistroDriver& d : t.distro_drivers)
    row({d.id + " " + d.version_id, d.package, d.version + " (" + d.suite + ")", d.backports,
         d.cudnn_package.empty() ? ""
                                 : fmt::format("{} {} (CUDA {}, {})", d.cudnn_package, d.cudnn_version,
                                               d.cudnn_cuda_major, d.cudnn_component),
         mark(d.from), d.from.checked});
  out += "\nSources:\n\n";
  for (const auto& [key, text] : t.sources) out += "- `" + key + "`: " + text + "\n";
  return out;
}

}  // namespace ember::env::compat

namespace ember::env {
std::string compat_tables_markdown() { return compat::markdown_tables(); }
}  // namespace ember::env
