// Reads the doctor's compatibility tables (src/env/compat_tables.json, compiled in as a string by
// CMakeLists.txt) and answers the questions the verdict asks of them: which driver a toolkit
// needs, which toolkit still builds for a GPU, which PyTorch wheel index fits a driver and GPU.
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

Version parse_version(const nlohmann::json& j, const char* field) {
  if (!j.is_string()) throw std::runtime_error(std::string("compat tables: '") + field + "' is not a version string");
  Version v;
  if (std::sscanf(j.get<std::string>().c_str(), "%d.%d", &v.major, &v.minor) != 2)
    throw std::runtime_error(std::string("compat tables: '") + field + "' = " + j.dump() + " is not major.minor");
  return v;
}

std::optional<Version> opt_version(const nlohmann::json& row, const char* field) {
  if (!row.contains(field) || row[field].is_null()) return std::nullopt;
  return parse_version(row[field], field);
}

}  // namespace

Tables parse(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text);
  Tables t;
  t.schema = j.at("schema").get<int>();
  t.date = j.at("date").get<std::string>();
  for (const auto& s : j.at("sources")) t.sources.push_back(s.get<std::string>());
  for (const auto& r : j.at("toolkits"))
    t.toolkits.push_back({parse_version(r.at("cuda"), "cuda"), r.at("min_driver").get<std::string>()});
  for (const auto& r : j.at("minor_compat"))
    t.minor_compat.push_back({r.at("cuda_major").get<int>(), r.at("min_driver").get<std::string>()});
  for (const auto& r : j.at("archs")) {
    ArchRow a;
    a.cc = r.at("cc").get<int>();
    a.family = r.at("family").get<std::string>();
    a.first_cuda = parse_version(r.at("first_cuda"), "first_cuda");
    a.last_cuda = opt_version(r, "last_cuda");
    if (r.contains("last_driver_branch") && !r["last_driver_branch"].is_null())
      a.last_driver_branch = r["last_driver_branch"].get<int>();
    a.last_cudnn = opt_version(r, "last_cudnn");
    t.archs.push_back(a);
  }
  for (const auto& r : j.at("torch_wheels"))
    t.torch_wheels.push_back({r.at("index").get<std::string>(), parse_version(r.at("cuda"), "cuda"),
                              r.at("archs").get<std::vector<int>>(), r.at("ptx").get<bool>()});
  if (j.contains("distro_drivers"))
    for (const auto& r : j.at("distro_drivers"))
      t.distro_drivers.push_back({r.at("id").get<std::string>(), r.at("version_id").get<std::string>(),
                                  r.at("package").get<std::string>(), r.at("version").get<std::string>(),
                                  r.value("backports", std::string())});
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

std::optional<DriverAdvice> min_driver_for(const Version& cuda) {
  const ToolkitRow* best = nullptr;
  for (const ToolkitRow& r : tables().toolkits)
    if (r.cuda.major == cuda.major && r.cuda.minor <= cuda.minor) best = &r;
  if (best == nullptr) return std::nullopt;
  return DriverAdvice{best->min_driver, best->cuda.minor == cuda.minor};
}

std::string driver_requirement(const Version& cuda) {
  const Version mm{cuda.major, cuda.minor, 0};
  if (auto d = min_driver_for(mm)) {
    if (d->exact) return d->driver + " or newer";
    return fmt::format("newer than {} (CUDA {} is past ember's tables of {}; its release notes name the driver)",
                       d->driver, mm.str(), tables().date);
  }
  return fmt::format("one that supports CUDA {} (the CUDA release notes' driver table)", mm.str());
}

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
  const auto d = min_driver_for(Version{cuda.major, cuda.minor, 0});
  return d ? driver_branch(d->driver) : 0;
}

const DistroDriver* distro_driver(const std::string& id, const std::string& version_id) {
  for (const DistroDriver& d : tables().distro_drivers)
    if (d.id == id && (d.version_id == version_id || version_id.starts_with(d.version_id + "."))) return &d;
  return nullptr;
}

const ArchRow* arch(int cc) {
  for (const ArchRow& a : tables().archs)
    if (a.cc == cc) return &a;
  return nullptr;
}

bool toolkit_builds_for(const Version& cuda, int cc) {
  const ArchRow* a = arch(cc);
  if (a == nullptr) return false;
  const Version mm{cuda.major, cuda.minor, 0};
  return a->first_cuda <= mm && (!a->last_cuda || mm <= *a->last_cuda);
}

std::optional<Version> newest_toolkit_for(int cc) {
  std::optional<Version> best;
  for (const ToolkitRow& r : tables().toolkits)
    if (toolkit_builds_for(r.cuda, cc)) best = r.cuda;
  return best;
}

bool wheel_runs_on(const TorchWheel& w, int cc) {
  for (int a : w.archs)
    if (a / 10 == cc / 10 && a % 10 <= cc % 10) return true;
  if (w.ptx && !w.archs.empty() && *std::max_element(w.archs.begin(), w.archs.end()) <= cc) return true;
  return false;
}

const TorchWheel* torch_wheel_for(const Version& driver_cuda, const std::vector<int>& ccs) {
  const TorchWheel* best = nullptr;
  for (const TorchWheel& w : tables().torch_wheels) {
    if (driver_cuda < w.cuda) continue;
    if (std::all_of(ccs.begin(), ccs.end(), [&](int cc) { return wheel_runs_on(w, cc); })) best = &w;
  }
  return best;
}

}  // namespace ember::env::compat
