// ember doctor: what this machine offers for training (build, CPU, NVIDIA driver, CUDA runtime,
// cuDNN, cuBLAS, GPUs) and a verdict on each part. Probing (probe_environment) reads /proc and
// dlopen()s the NVIDIA libraries without linking them; the verdict (diagnose) is a pure function
// of the collected facts, so every rule is tested over tables of versions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ember::env {

// A version as major.minor.patch; CUDA encodes 12.4 as 12040 (from_cuda_int).
struct Version {
  int major = 0, minor = 0, patch = 0;
  static Version from_cuda_int(int v) { return {v / 1000, (v % 1000) / 10, 0}; }
  std::string str() const;  // "12.4" (patch only when non-zero)
  friend auto operator<=>(const Version&, const Version&) = default;
};

struct GpuInfo {
  int index = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;  // compute capability
  uint64_t total_memory = 0;       // bytes
};

// A CUDA library a framework needs (its shared objects' DT_NEEDED, or the sonames its build info
// names), loaded in that interpreter the way the framework would: from its environment's nvidia-*
// wheels first, then through the dynamic loader.
struct LibraryLoad {
  std::string soname;  // "libcudart.so.10.0"
  std::string path;    // where it loaded from ("" = through the loader's own search, or not loaded)
  std::string error;   // why it did not load (dlerror); "" = it loaded
};

// What one Python interpreter has installed (audit_pythons): each framework's build as it reports
// it, read by a small probe script the interpreter runs in a child process with a timeout. When the
// import fails the build is still reported (imported = false): its version from the package's
// metadata and the libraries its shared objects need, each loaded to see which one is missing.
struct TorchBuild {
  std::string version;                   // torch.__version__, "2.5.1+cu121"
  bool imported = true;                  // false: `import torch` raised (import_errors says what)
  std::string cuda;                      // torch.version.cuda, "12.1"; "" = a CPU-only build
  int cudnn = 0;                         // torch.backends.cudnn.version(): the cuDNN it loads, 90100
  int cudnn_compiled = 0;                // the cuDNN it was built with (same encoding); 0 = unknown
  std::string cudnn_error;               // what asking the cuDNN version raised
  std::vector<std::string> arch_list;    // torch.cuda.get_arch_list(): "sm_80", "compute_90"
  std::optional<bool> cuda_available;    // torch.cuda.is_available(); nullopt = not asked
  int device_count = -1;                 // torch.cuda.device_count() when available
  std::string cuda_error;                // the warnings is_available() raised ("CUDA initialization: ...")
  std::vector<LibraryLoad> libraries;    // CUDA libraries it needs, tried when the import failed
};
struct TensorflowBuild {
  std::string version;
  std::string package;                   // the distribution: "tensorflow", "tensorflow-gpu", "tensorflow-cpu"
  bool imported = true;                  // false: `import tensorflow` raised (import_errors says what)
  bool cuda_build = false;               // sysconfig.get_build_info()["is_cuda_build"]
  std::string cuda, cudnn;               // "12.3", "9" or "9.3" as the build info says
  int gpus = -1;                         // len(tf.config.list_physical_devices('GPU')); -1 = not asked
  std::string gpu_error;                 // what asking raised
  std::vector<LibraryLoad> libraries;    // the CUDA libraries it needs (tried when it sees no GPU)
};
struct JaxBuild {
  std::string jax, jaxlib;               // versions ("" = not installed)
  std::vector<std::pair<std::string, std::string>> cuda_plugins;  // {"jax-cuda12-plugin", "0.4.30"}
  std::vector<std::string> devices;      // jax.devices()' platforms ("cuda", "cpu"); asked with a plugin
  std::string devices_error;             // what jax.devices() raised
};
struct OnnxruntimeBuild {
  std::string version;
  std::vector<std::string> providers;    // get_available_providers()
};
struct PipWheel {
  std::string name, version;             // "nvidia-cudnn-cu12", "9.1.0.70"
  std::vector<std::string> lib_dirs;     // where its lib*.so* files are
};
struct PythonEnv {
  std::string path;                      // the interpreter as found
  std::string found_by;                  // "PATH", "VIRTUAL_ENV", "CONDA_PREFIX", "--python", "sys.executable"
  std::string error;                     // why it could not be read (timed out, crashed, not Python)
  std::string python_version;
  std::optional<TorchBuild> torch;
  std::optional<TensorflowBuild> tensorflow;
  std::optional<JaxBuild> jax;
  std::optional<OnnxruntimeBuild> onnxruntime;
  std::map<std::string, std::string> import_errors;  // framework -> what importing it raised
  std::vector<PipWheel> nvidia_wheels;   // the nvidia-* distributions
};

// What NVML (libnvidia-ml.so.1, loaded lazily) says of one GPU, in nvidia-smi's order.
struct NvmlGpu {
  int index = 0;
  std::string name;
  uint64_t memory_total = 0, memory_used = 0;                    // bytes
  std::vector<std::pair<unsigned, uint64_t>> processes;          // {pid, bytes} of compute processes
  int mig_mode = -1;                                             // 1 on, 0 off, -1 unknown / not supported
  long long ecc_uncorrected = -1;                                // volatile uncorrected ECC errors; -1 unknown
  uint64_t clock_event_reasons = 0;                              // nvmlClocksEventReason* bits
  // Below: -1 = unknown (NVML too old, not supported by this GPU, or not asked).
  std::string uuid;                                              // "GPU-…"
  int persistence_mode = -1;                                     // 1 on, 0 off
  int display_active = -1;                                       // 1: a display is driven (not headless)
  long long ecc_aggregate_uncorrected = -1;                      // uncorrected ECC errors over the GPU's life
  long long retired_pages_sbe = -1, retired_pages_dbe = -1;      // pages retired (multiple single-bit, double-bit)
  int retired_pages_pending = -1;                                // 1: a page waits for a reset to be retired
  long long remapped_rows_correctable = -1, remapped_rows_uncorrectable = -1;  // Ampere+ row remapping
  int remap_pending = -1;                                        // 1: a row waits for a reset to be remapped
  int remap_failure = -1;                                        // 1: a remapping failed (no spare rows left)
  std::vector<unsigned long long> xids;                          // Xid critical errors seen while the doctor watched
  int clock_sm = -1, clock_sm_max = -1, clock_mem = -1, clock_mem_max = -1;  // MHz
  int power_mw = -1, power_limit_mw = -1;                        // draw and the enforced limit
  int temperature_c = -1;
  int utilization_gpu = -1, utilization_memory = -1;             // %
  std::vector<std::string> mig_instances;                        // the MIG instances' UUIDs ("MIG-…")
};

// /etc/os-release, the fields the doctor's fix lines depend on (distro.cpp).
struct OsRelease {
  std::string id;                    // "debian", "ubuntu", "rocky", "fedora", "arch"; "" = no os-release
  std::vector<std::string> id_like;  // ID_LIKE: {"rhel", "centos", "fedora"}
  std::string version_id;            // "12", "24.04", "9.4"
  std::string pretty_name;           // "Debian GNU/Linux 12 (bookworm)"
};

// A /dev/nvidia* node the driver needs (nvidiactl, nvidia-uvm, nvidia<minor>).
struct DeviceNode {
  std::string path;        // "/dev/nvidia0" (without the probe's root)
  bool exists = false;
  bool usable = false;     // access(2) grants this process read and write
  std::string owner;       // "root:video crw-rw----": who may open it, for the message
};

// One copy of an NVIDIA library found on this machine (provenance: the same library in several
// places, each with its version, and whether the dynamic loader would find it).
struct LibraryCopy {
  std::string soname;      // "libcudnn.so.9"
  std::string path;        // where it was found: "/opt/cudnn/lib/libcudnn.so.9"
  std::string real_path;   // links resolved
  std::string version;     // "9.1.0" (its file name, its pip wheel, or asked in a child); "" unknown
  std::string source;      // "LD_LIBRARY_PATH", "ld.so cache", "CUDA_HOME", "/usr/local/cuda-12.4",
                           // "pip nvidia-cudnn-cu12 (/usr/bin/python3)"
  int loader_rank = -1;    // the dynamic loader's search order (0 = first); -1: not on its path
  bool loaded = false;     // the copy the doctor's own probe loaded
};

// Everything probe_environment() finds. Optional fields are empty when the thing is not there.
struct EnvFacts {
  // ember's build
  std::string ember_version, compiler, build_type;
  bool built_with_cuda = false;
  std::optional<Version> cuda_compiled;  // the toolkit ember was compiled with
  std::vector<int> cuda_sass_archs;      // e.g. {80, 90}: real architectures compiled
  std::vector<int> cuda_ptx_archs;       // virtual architectures shipped as PTX
  int cudnn_compiled_major = 0;          // the cuDNN major ember loads (libcudnn.so.N); 0 = built without
  std::string onednn_version, blas;
  // The OpenBLAS this process loaded (issue 22: Debian's alternative picks a pthreads, OpenMP or
  // serial build): its threading model from openblas_get_parallel() ("serial", "pthreads",
  // "openmp"; "" = could not ask), the file it was loaded from (links resolved), its version, and
  // the thread count it reports now (ember pins a pthreads or serial build to 1).
  std::string blas_build, blas_path;
  std::optional<Version> blas_version;
  int blas_threads = 0;
  // host
  std::string os, cpu_model;
  bool avx2 = false, avx512f = false, avx512_bf16 = false, amx = false;
  int cores = 0;                // logical CPUs this process may use
  uint64_t memory_bytes = 0;    // MemTotal
  bool cpu_smoke_ok = true;     // a small matmul on the CPU matched the reference loop
  std::string cpu_smoke_error;
  // NVIDIA side
  bool driver_found = false;                 // libcuda.so.1 loaded
  std::string driver_version;                // "550.54.14" from /proc/driver/nvidia/version
  std::optional<Version> driver_cuda;        // highest CUDA the driver supports (cuDriverGetVersion)
  std::string driver_error;                  // why the driver is unusable (dlopen or cuInit error)
  std::string driver_fix;                    // the fix for driver_error, when the probe knows it
  // The kernel side (/proc/driver/nvidia): true when its version file is there, false when it is
  // not (the module is not loaded), nullopt when that cannot mean anything (WSL has no module).
  std::optional<bool> kernel_module_loaded;
  bool wsl = false;                          // Windows Subsystem for Linux (/usr/lib/wsl/lib/libcuda.so.1)
  std::optional<Version> cuda_runtime;       // libcudart loadable: cudaRuntimeGetVersion
  std::optional<Version> cudnn;              // libcudnn.so.9 (or .8): cudnnGetVersion
  std::optional<int> cudnn_cuda_major;       // the CUDA major cuDNN was built for
  std::optional<Version> cublas;             // libcublas: cublasGetProperty
  std::string cudnn_error, cublas_error;     // a broken install: partial, crashed when loaded, not the library
  // Provenance: the file each library was loaded from (as the dynamic loader resolved it, links
  // followed to the real file); "" when not loaded. A CUDA build carries its runtime statically.
  std::string driver_path, cudart_path, cudnn_path, cublas_path;
  int physical_gpus = -1;                    // /proc/driver/nvidia/gpus entries; -1 = unknown
  // NVIDIA GPUs on the PCI bus (/sys/bus/pci/devices/*: vendor 0x10de, class display or 3D): what is
  // in the machine whatever the driver says; nullopt when /sys cannot tell (no /sys/bus/pci, WSL2).
  std::optional<int> nvidia_pci_gpus;
  std::vector<GpuInfo> gpus;                 // the devices CUDA shows this process
  std::optional<std::string> cuda_visible_devices;  // unset = nullopt
  // NVML: per-GPU memory, processes, MIG, ECC, clock slowdowns; nvml_error when it did not answer.
  std::vector<NvmlGpu> nvml_gpus;
  std::string nvml_path, nvml_error;
  // The Python interpreters audited (audit_pythons; empty when not asked for).
  std::vector<PythonEnv> pythons;
  // The OS layer (probe_os.cpp), read under a root the tests fake: the distribution, the driver
  // version of libcuda's own file (libcuda.so.580.95.05) to hold against the kernel module's,
  // modules that keep the NVIDIA one off the GPU, Secure Boot, the device nodes, a container.
  OsRelease os_release;
  std::string libcuda_version;               // "580.95.05" from the file libcuda.so.1 resolves to; "" unknown
  int driver_error_code = 0;                 // the CUresult behind driver_error (36: driver too old); 0 none
  std::vector<std::string> conflicting_modules;  // "nouveau", "nova_core" listed in /proc/modules
  std::optional<bool> secure_boot;           // EFI SecureBoot variable; nullopt: not EFI or unreadable
  std::vector<DeviceNode> device_nodes;      // checked when the module is loaded (not on WSL)
  std::string container;                     // "docker", "podman", "kubernetes", "lxc", ...; "" = not in one
  std::string container_hint;                // what said so: "/.dockerenv", "container=podman"
  // NCCL (libnccl.so.2, probed in a child: ncclGetVersion), for multi-GPU training.
  std::optional<Version> nccl;
  std::string nccl_path, nccl_error;
  // Every copy of libcuda, libcudart, libcublas, libcudnn, libnccl, libnvidia-ml found on
  // LD_LIBRARY_PATH, in the ld.so cache, under CUDA_HOME and /usr/local/cuda*, and in the audited
  // interpreters' nvidia-* wheels (find_library_copies, after audit_pythons).
  std::vector<LibraryCopy> library_copies;
};

enum class Level { Pass, Warn, Fail };
const char* level_name(Level l);  // "PASS", "WARN", "FAIL"

struct Check {
  Level level = Level::Pass;
  std::string name;     // "driver", "cuda runtime", "cudnn", "device 0", ...
  std::string message;  // what was found
  std::string fix;      // one line on what to do; empty for PASS
};

struct Verdict {
  std::vector<Check> checks;
  bool cpu_usable = false;
  bool gpu_usable = false;
  std::string training_device;  // "cuda:0" or "cpu"
  std::string summary;          // the verdict in one line: "training will use the CPU"
  std::string first_fix;        // the first thing to do: the fix of the first FAIL; else, when training
                                // will not use a GPU this machine has (or may have), of the first WARN
  std::string first_fix_check;  // the check it belongs to ("driver"); empty when there is nothing to do
  bool can_train() const { return cpu_usable || gpu_usable; }
};

// Parses CUDA_VISIBLE_DEVICES as the CUDA runtime does: a comma-separated list of indices or
// GPU-/MIG- UUIDs, cut at the first invalid entry (an index < 0 or >= physical_gpus when that is
// known). Returns the number of devices left visible; nullopt when it cannot tell (UUIDs).
std::optional<int> visible_device_count(const std::string& value, int physical_gpus);

// True when a kernel for compute capability (cc_major, cc_minor) can run from what was compiled:
// a SASS build for the same major and a minor <= cc_minor, or any PTX with arch <= cc (JIT).
bool arch_supported(int cc_major, int cc_minor, const std::vector<int>& sass, const std::vector<int>& ptx);

// Pure: the doctor's verdict for a set of facts, every check with its level and fix (src/env/verdict*.cpp:
// the host, the driver, the OS layer, the CUDA libraries and their copies, the devices, NVML, the
// Python frameworks). Named for what it is, apart from train::evaluate (a model's test accuracy).
Verdict diagnose(const EnvFacts& facts);

// Reads this machine. Never throws: whatever cannot be read is left empty. Full opens the CUDA
// runtime, cuDNN and cuBLAS to ask their versions (what `ember doctor` needs); DriverOnly stops
// after the driver and its devices, for callers that must not load cuBLAS (~150 MB resident).
enum class ProbeDepth { Full, DriverOnly };
EnvFacts probe_environment(ProbeDepth depth = ProbeDepth::Full);

// The Python interpreters a user would train with, without duplicates: $VIRTUAL_ENV/bin/python,
// $CONDA_PREFIX/bin/python and python3 on PATH, and `running` (the interpreter a caller runs in,
// found_by "sys.executable"; "" = none); only `explicit_paths` when it is not empty.
std::vector<PythonEnv> find_pythons(const std::vector<std::string>& explicit_paths, const std::string& running = "");
// Runs the framework probe in each interpreter (a child process each, killed after timeout_ms:
// a hung or crashing interpreter is named in `error`, never waited on). Never throws.
void audit_pythons(std::vector<PythonEnv>& pythons, int timeout_ms = 60000);

// Finds every copy of the NVIDIA libraries (EnvFacts::library_copies) in the places the loader and
// the frameworks look, including the audited interpreters' wheels (call after audit_pythons).
void find_library_copies(EnvFacts& facts);

// The doctor's full set of checks, one call for every front-end (`ember doctor`, `ember.doctor()`):
// probe this machine, audit the Python interpreters, find every copy of the NVIDIA libraries (the
// audited interpreters' wheels among the places), and diagnose.
struct DoctorOptions {
  bool audit_python = true;
  std::vector<std::string> pythons;  // audit only these interpreters when not empty (--python)
  std::string running_python;        // also audit the interpreter the caller runs in (ember.doctor())
  int python_timeout_ms = 60000;     // per interpreter
};
struct DoctorReport {
  EnvFacts facts;
  Verdict verdict;
};
DoctorReport run_doctor(const DoctorOptions& options = {});

// Text report, every line within 80 columns (facts, one entry per check with its fix, then the
// verdict and the first thing to do), and JSON ({schema, build, host, nvidia, checks, verdict};
// docs/doctor.md documents it, kJsonSchema its version).
inline constexpr int kJsonSchema = 2;
// Raised when fields are added (a script may rely on them from that minor on); 1: NVML in full;
// 2: the OS layer and library provenance (os, library_copies, nvidia.nccl, ...); 3: the PCI bus
// (nvidia.pci_gpus) and the frameworks loaded for real (pythons[].torch.cuda_available, .libraries,
// tensorflow.gpus, .libraries, jax.devices, ...).
inline constexpr int kJsonSchemaMinor = 3;
std::string format_report(const EnvFacts& facts, const Verdict& verdict);
// The compatibility tables every fix comes from, as Markdown, each row with its source and the date it
// was checked (`ember doctor --tables`; docs/doctor.md prints the same).
std::string compat_tables_markdown();
std::string to_json(const EnvFacts& facts, const Verdict& verdict);

}  // namespace ember::env
