// The doctor's compatibility tables (src/env/compat_tables.json, compiled in): which driver each
// CUDA toolkit needs on Linux and Windows, which toolkits, driver branches, kernel modules and cuDNN
// releases support each compute capability, which PyTorch wheel index carries which architectures
// and torch releases, what each TensorFlow release was built for, JAX's floors, NVIDIA's pip wheel
// names and the distributions' own packages. Every row carries its source and the date it was
// checked. One source of truth for every version the doctor prints in a fix;
// tests/unit/test_doctor_compat.cpp checks each family of facts and its rules.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ember/env/doctor.h"

namespace ember::env::compat {

// Where a row comes from: a key of Tables::sources, the date it was checked (YYYY-MM-DD), whether
// the source confirmed it, and what the source leaves open.
struct Provenance {
  std::string source, checked, note;
  bool confirmed = true;
};

struct ToolkitRow {
  Version cuda;                // major.minor
  std::string linux_driver;    // Linux x86_64 driver of its GA release, "550.54.14"; "" = not confirmed
  std::string windows_driver;  // Windows driver of its GA release; "" = NVIDIA lists none (CUDA 13)
  int branch_at_least = 0;     // for a row without linux_driver: the lowest branch the sources allow
  Provenance from;
};
struct MinorCompatRow {
  int cuda_major = 0;
  std::string linux_driver;    // the lowest driver that runs any CUDA of this major (no PTX JIT)
  std::string windows_driver;  // "" = none named (CUDA 13: R580)
  Provenance from;
};
struct ArchRow {
  int cc = 0;  // 86 = compute capability 8.6
  std::string family;
  Version first_cuda;                     // first toolkit (from 11.0) that builds for it
  std::optional<Version> last_cuda;       // last toolkit that builds for it; empty = still supported
  std::optional<int> last_driver_branch;  // 580 = R580; empty = still supported
  std::optional<Version> last_cudnn;      // last cuDNN release that supports it
  std::string kernel_modules;             // "proprietary" (before Turing), "either", "open" (Blackwell on)
  Provenance from;
};
struct TorchWheel {
  std::string index;                   // "cu126"
  Version cuda;
  Version first_torch;                 // the first torch release on this index
  std::optional<Version> last_torch;   // the last; empty = still built (carries the newest torch)
  std::vector<int> archs;              // SASS of the x86_64 wheels
  bool ptx = false;                    // PTX of the newest arch too
  Provenance from;
};
struct TensorflowRow {
  Version version;          // this release and every later one up to the next row
  Version cuda, cudnn;      // what it was built for ("10.0", "7.4")
  bool and_cuda = false;    // pip's tensorflow[and-cuda] installs that CUDA and cuDNN
  std::string package;      // "tensorflow-gpu" (TF <= 2.0) or "tensorflow": the package of the GPU build
  Provenance from;
};
struct JaxRow {
  std::string extra;  // "cuda13": pip install 'jax[cuda13]'
  int cuda_major = 0, min_cc = 0, min_driver_branch = 0;
  Provenance from;
};
struct PipWheels {  // the PyPI names of NVIDIA's libraries for one CUDA major
  int cuda_major = 0;
  std::string cudart, cublas, cudnn, nccl;
  Provenance from;
};
struct DistroDriver {
  std::string id, version_id;  // os-release ID and VERSION_ID: "debian", "12"
  std::string package;         // "nvidia-driver"
  std::string version;         // the newest the distribution's archive has: "535.309.01"
  std::string suite;           // where that version is: "bookworm-security"
  std::string backports;       // the newest in its backports ("" = none)
  std::string cudnn_package;   // its own cuDNN package ("nvidia-cudnn"; "" = none), an installer that
  std::string cudnn_version;   //   downloads this cuDNN ("8.5.0.96") from NVIDIA,
  int cudnn_cuda_major = 0;    //   built for this CUDA major,
  std::string cudnn_component; //   from this archive component ("contrib", "non-free")
  Provenance from;
};
struct Tables {
  int schema = 0;
  std::string date;
  std::map<std::string, std::string> sources;  // key -> what was read, where
  std::vector<std::string> checked;            // the log of checks
  std::vector<ToolkitRow> toolkits;            // ascending
  std::vector<MinorCompatRow> minor_compat;
  std::vector<ArchRow> archs;                  // ascending cc
  std::vector<TorchWheel> torch_wheels;        // ascending cuda
  std::vector<TensorflowRow> tensorflow;       // ascending version
  std::vector<JaxRow> jax;                     // ascending cuda_major
  std::vector<PipWheels> pip_wheels;           // ascending cuda_major
  std::vector<DistroDriver> distro_drivers;
};

// The tables compiled into this build (parsed once). Throws InternalError if the data is malformed,
// which the tests catch first.
const Tables& tables();
// Parses a tables document (tests give it variants). Throws std::runtime_error naming the field.
Tables parse(const std::string& json);
// "2026-12": the month of the tables, for messages about what is newer than them.
std::string tables_month();

// What the tables say of the driver CUDA `cuda` (major.minor) needs on Linux.
struct DriverAdvice {
  std::string driver;       // "580.65.06"; "" when no number is confirmed
  bool exact = false;       // the row of this very minor names its driver
  int branch_at_least = 0;  // the branch the driver must at least be of (580 for "580.65.06")
  bool past_table = false;  // `cuda` is newer than every row: a floor only
};
std::optional<DriverAdvice> min_driver_for(const Version& cuda);  // nullopt: older than the table (10.x)
// The driver CUDA `cuda` needs, in words for a fix: "580.65.06 or newer"; for a toolkit whose driver is
// not confirmed, or one past the table, the branch it needs at least and why no number is named.
std::string driver_requirement(const Version& cuda);
// The same for a Windows driver (WSL2 runs the Windows one): the GA row's Windows number, else the
// major's minor-version floor, else the branch (NVIDIA names no Windows number for CUDA 13).
std::string windows_driver_requirement(const Version& cuda);
// Whether `cuda` is newer than the newest toolkit the tables know (13.6 on tables that end at 13.5).
bool newer_than_tables(const Version& cuda);

// The driver's branch: 580 from "580.95.05"; 0 when it does not parse.
int driver_branch(const std::string& driver_version);
// Whether driver version `a` is at least `b`, numerically by component ("535.261.03" >= "535.54.03").
bool driver_at_least(const std::string& a, const std::string& b);
// The lowest driver branch that runs CUDA `cuda` natively (580 for 13.0, 615 for 13.4), from the
// toolkit table; 0 unknown.
int driver_branch_for(const Version& cuda);
const MinorCompatRow* minor_compat(int cuda_major);
// Whether a driver (its version, "" unknown, and the CUDA it reports) runs code built with CUDA
// `cuda`: natively, or through minor-version compatibility (same major, from CUDA 11, and at least
// the major's floor: a 450.51 driver runs CUDA 11.0 but not 11.1).
bool driver_runs(const std::string& driver_version, const std::optional<Version>& driver_cuda, const Version& cuda);
// The NVIDIA driver a distribution release ships (distro_drivers), or nullptr.
const DistroDriver* distro_driver(const std::string& id, const std::string& version_id);
// The PyPI names of NVIDIA's libraries for CUDA `cuda_major` (the newest row for a newer major).
const PipWheels& pip_wheels(int cuda_major);

const ArchRow* arch(int cc);
// Whether toolkit `cuda` can compile for `cc` (false for an unknown cc).
bool toolkit_builds_for(const Version& cuda, int cc);
// The newest toolkit in the table that builds for `cc` and whose driver the table names (the
// last_cuda, or the newest confirmed row: 13.3 on tables that name no driver for 13.4).
std::optional<Version> newest_toolkit_for(int cc);
// The newest toolkit a driver of branch `branch` runs natively (R470 -> 11.4 is not in the table:
// the newest row whose driver is of that branch or older).
std::optional<Version> newest_toolkit_for_branch(int branch);

// Whether a wheel with these archs runs on `cc` (SASS of the same major and a lower minor, or PTX).
bool wheel_runs_on(const TorchWheel& w, int cc);
// The PyTorch wheel index to install: among those whose architectures run on every cc given and
// whose CUDA this driver runs (driver_runs), the one that carries the newest torch; of those alike,
// one whose CUDA the driver supports natively, then the newer CUDA. nullptr when none fits.
const TorchWheel* torch_wheel_for(const std::string& driver_version, const std::optional<Version>& driver_cuda,
                                  const std::vector<int>& ccs);
// The index to install once the driver is upgraded: the newest torch for these GPUs, and of those
// alike the one that needs the oldest driver. nullptr when no index carries every cc.
const TorchWheel* torch_wheel_after_upgrade(const std::vector<int>& ccs);
// "2.7" / "2.9 and later": the torch releases an index carries, in words.
std::string torch_releases(const TorchWheel& w);

// The TensorFlow row covering release `version` (the last row at or below it), or nullptr.
const TensorflowRow* tensorflow_row(const Version& version);
// The newest TensorFlow built for CUDA `cuda_major` with cuDNN `cudnn_major` (0: any), or nullptr.
const TensorflowRow* tensorflow_for(int cuda_major, int cudnn_major = 0);
// The newest TensorFlow whose CUDA this driver runs, or nullptr.
const TensorflowRow* newest_tensorflow_for_driver(const std::string& driver_version,
                                                  const std::optional<Version>& driver_cuda);

// The JAX extra for this driver and these GPUs: the newest CUDA major whose floors (compute
// capability, driver branch) they all meet; nullptr when none does.
const JaxRow* jax_extra_for(const std::string& driver_version, const std::optional<Version>& driver_cuda,
                            const std::vector<int>& ccs);
const JaxRow* jax_row(int cuda_major);

// The tables as Markdown (docs/doctor.md prints them; `ember doctor --tables`), each row with its
// source key and date, then the sources.
std::string markdown_tables();

}  // namespace ember::env::compat
