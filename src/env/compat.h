// The doctor's compatibility tables (src/env/compat_tables.json, compiled in): which driver each
// CUDA toolkit needs, which toolkits, driver branches and cuDNN releases support each compute
// capability, and which PyTorch wheel index carries which architectures. One source of truth for
// every version the doctor prints in a fix; tests/unit/test_doctor_compat.cpp checks its rules.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ember/env/doctor.h"

namespace ember::env::compat {

struct ToolkitRow {
  Version cuda;            // major.minor
  std::string min_driver;  // Linux x86_64 driver of its first GA release, "550.54.14"
};
struct MinorCompatRow {
  int cuda_major = 0;
  std::string min_driver;  // the lowest driver that runs any CUDA of this major (no PTX JIT)
};
struct ArchRow {
  int cc = 0;  // 86 = compute capability 8.6
  std::string family;
  Version first_cuda;                     // first toolkit (from 11.0) that builds for it
  std::optional<Version> last_cuda;       // last toolkit that builds for it; empty = still supported
  std::optional<int> last_driver_branch;  // 580 = R580; empty = still supported
  std::optional<Version> last_cudnn;      // last cuDNN release that supports it
};
struct TorchWheel {
  std::string index;  // "cu126"
  Version cuda;
  std::vector<int> archs;  // SASS
  bool ptx = false;        // PTX of the newest arch too
};
struct DistroDriver {
  std::string id, version_id;  // os-release ID and VERSION_ID: "debian", "12"
  std::string package;         // "nvidia-driver"
  std::string version;         // the newest the distribution's archive has: "535.261.03"
  std::string backports;       // the newest in its backports ("" = none)
};
struct Tables {
  int schema = 0;
  std::string date;
  std::vector<std::string> sources;
  std::vector<ToolkitRow> toolkits;  // ascending
  std::vector<MinorCompatRow> minor_compat;
  std::vector<ArchRow> archs;        // ascending cc
  std::vector<TorchWheel> torch_wheels;  // ascending cuda
  std::vector<DistroDriver> distro_drivers;  // optional in the document
};

// The tables compiled into this build (parsed once). Throws InternalError if the data is malformed,
// which the tests catch first.
const Tables& tables();
// Parses a tables document (tests give it variants). Throws std::runtime_error naming the field.
Tables parse(const std::string& json);

// The driver to install for CUDA `cuda` ("580.65.06 or newer"): the table row of that minor; for a
// minor newer than the table knows, the newest row of its major with "(CUDA X.Y needs a newer one)".
struct DriverAdvice {
  std::string driver;  // "580.65.06"
  bool exact = false;  // false: `cuda` is past the table; `driver` is only a floor
};
std::optional<DriverAdvice> min_driver_for(const Version& cuda);
// The driver CUDA `cuda` needs, in words for a fix: "580.65.06 or newer".
std::string driver_requirement(const Version& cuda);

// The driver's branch: 580 from "580.95.05"; 0 when it does not parse.
int driver_branch(const std::string& driver_version);
// Whether driver version `a` is at least `b`, numerically by component ("535.261.03" >= "535.54.03").
bool driver_at_least(const std::string& a, const std::string& b);
// The lowest driver branch that runs CUDA `cuda` (580 for 13.0), from the toolkit table; 0 unknown.
int driver_branch_for(const Version& cuda);
// The NVIDIA driver a distribution release ships (distro_drivers), or nullptr.
const DistroDriver* distro_driver(const std::string& id, const std::string& version_id);

const ArchRow* arch(int cc);
// Whether toolkit `cuda` can compile for `cc` (false for an unknown cc).
bool toolkit_builds_for(const Version& cuda, int cc);
// The newest toolkit in the table that builds for `cc` (the last_cuda, or the newest row).
std::optional<Version> newest_toolkit_for(int cc);

// Whether a wheel with these archs runs on `cc` (SASS of the same major and a lower minor, or PTX).
bool wheel_runs_on(const TorchWheel& w, int cc);
// The PyTorch wheel index to install: the newest whose CUDA the driver supports (driver_cuda) and
// whose architectures run on every cc given. nullptr when none does.
const TorchWheel* torch_wheel_for(const Version& driver_cuda, const std::vector<int>& ccs);

}  // namespace ember::env::compat
