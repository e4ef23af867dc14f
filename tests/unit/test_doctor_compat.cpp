// The doctor's compatibility tables (src/env/compat_tables.json, compiled in): one test per family of
// facts, each fact as checked against its source on the date the table gives (issue 45), the rules
// the tables must keep (monotone drivers, every row sourced and dated), the choices made from them
// (the PyTorch index, the TensorFlow release, the JAX extra that fit a driver and its GPUs), every
// rebuild fix the doctor prints, and docs/doctor.md printing the same tables.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "ember/env/doctor.h"
#include "env/compat.h"
#include "support/test_data.h"

using namespace ember::env;

namespace {

#define EXPECT_HAS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

std::vector<int> driver_tuple(const std::string& d) {
  std::vector<int> v;
  std::stringstream ss(d);
  std::string part;
  while (std::getline(ss, part, '.')) v.push_back(std::stoi(part));
  return v;
}

Version mm(const std::string& s) {
  Version v;
  std::sscanf(s.c_str(), "%d.%d", &v.major, &v.minor);
  return v;
}

const compat::TorchWheel* wheel(const std::string& index) {
  for (const auto& w : compat::tables().torch_wheels)
    if (w.index == index) return &w;
  return nullptr;
}

std::string tables_json() {
  std::ifstream in(ember::test::data_dir() + "/../src/env/compat_tables.json");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

// Every row names a source the document defines and the date it was checked; a fact the sources did
// not confirm says so. The parser refuses a row without them.
TEST(DoctorCompat, EveryRowHasASourceAndADate) {
  const compat::Tables& t = compat::tables();
  EXPECT_EQ(t.schema, 2);
  EXPECT_EQ(t.date, "2026-12-04");
  EXPECT_EQ(compat::tables_month(), "2026-12");
  EXPECT_HAS(t.sources.at("cuda_table3"), "CUDA Toolkit and Corresponding Driver Versions");
  EXPECT_HAS(t.sources.at("cudnn_matrix"), "cuDNN support matrices");
  EXPECT_HAS(t.sources.at("pytorch_build_cuda"), "build_cuda.sh");
  EXPECT_HAS(t.sources.at("tf_tested"), "Tested build configurations");
  EXPECT_HAS(t.sources.at("jax_install"), "JAX installation guide");
  EXPECT_HAS(t.sources.at("debian_apt"), "apt-cache policy");
  auto sourced = [&](const compat::Provenance& p, const std::string& what) {
    EXPECT_TRUE(t.sources.count(p.source)) << what;
    EXPECT_EQ(p.checked.size(), 10u) << what;
    if (!p.confirmed) EXPECT_FALSE(p.note.empty()) << what << ": a fact not confirmed says why";
  };
  for (const auto& r : t.toolkits) sourced(r.from, "toolkit " + r.cuda.str());
  for (const auto& r : t.minor_compat) sourced(r.from, "minor_compat " + std::to_string(r.cuda_major));
  for (const auto& r : t.archs) sourced(r.from, "arch " + std::to_string(r.cc));
  for (const auto& r : t.torch_wheels) sourced(r.from, r.index);
  for (const auto& r : t.tensorflow) sourced(r.from, "tensorflow " + r.version.str());
  for (const auto& r : t.jax) sourced(r.from, r.extra);
  for (const auto& r : t.pip_wheels) sourced(r.from, "pip " + std::to_string(r.cuda_major));
  for (const auto& r : t.distro_drivers) sourced(r.from, r.id + " " + r.version_id);
  EXPECT_THROW(compat::parse("{\"schema\": 2}"), std::exception);
  // A row naming an undefined source, or without a date, does not parse.
  std::string text = tables_json();
  if (text.empty()) GTEST_SKIP() << "src/env/compat_tables.json is not beside the test data (a bundle)";
  EXPECT_NO_THROW(compat::parse(text));
  std::string bad = text;
  const std::string source = "\"source\": \"cuda_table3\"", checked = "\"checked\": \"2026-12-04\"";
  bad.replace(bad.find(source), source.size(), "\"source\": \"nowhere\"");
  EXPECT_THROW(compat::parse(bad), std::runtime_error);
  bad = text;
  bad.replace(bad.find(checked), checked.size(), "\"checked\": \"Dec 2026\"");
  EXPECT_THROW(compat::parse(bad), std::runtime_error);
}

// Table 3 of the CUDA release notes: the Linux driver of each GA release, monotone, to 13.3; 13.4 and
// 13.5 exist with no confirmed driver; past the table only a floor is named.
TEST(DoctorCompat, ToolkitDriversToCuda133) {
  const compat::Tables& t = compat::tables();
  for (const char* minor : {"11.0", "11.1", "11.2", "11.3", "11.4", "11.5", "11.6", "11.7", "11.8", "12.0", "12.1",
                            "12.2", "12.3", "12.4", "12.5", "12.6", "12.8", "12.9", "13.0", "13.1", "13.2", "13.3"}) {
    auto d = compat::min_driver_for(mm(minor));
    ASSERT_TRUE(d) << minor;
    EXPECT_TRUE(d->exact) << minor;
  }
  EXPECT_EQ(compat::min_driver_for(mm("13.1"))->driver, "590.44.01");
  EXPECT_EQ(compat::min_driver_for(mm("13.2"))->driver, "595.45.04");
  EXPECT_EQ(compat::min_driver_for(mm("13.3"))->driver, "610.43.02");
  EXPECT_EQ(compat::min_driver_for(mm("12.8"))->driver, "570.26");
  EXPECT_EQ(compat::driver_branch_for(mm("13.2")), 595);  // was 590: every 13.2+ install line named too old a branch
  EXPECT_EQ(compat::driver_branch_for(mm("13.3")), 610);
  std::vector<int> last;
  for (const auto& r : t.toolkits) {
    if (r.linux_driver.empty()) continue;
    EXPECT_LT(last, driver_tuple(r.linux_driver)) << r.cuda.str();
    last = driver_tuple(r.linux_driver);
  }
  for (size_t i = 1; i < t.toolkits.size(); ++i) EXPECT_LT(t.toolkits[i - 1].cuda, t.toolkits[i].cuda);
  EXPECT_EQ(compat::driver_requirement(Version{12, 4, 1}), "550.54.14 or newer");
  EXPECT_EQ(compat::driver_requirement(Version{13, 2, 0}), "595.45.04 or newer");
  // 13.4: a toolkit that exists, its driver unconfirmed: the branch it needs at least, said to be so.
  const auto d134 = compat::min_driver_for(mm("13.4"));
  ASSERT_TRUE(d134);
  EXPECT_FALSE(d134->exact);
  EXPECT_GE(d134->branch_at_least, 615);
  EXPECT_HAS(compat::driver_requirement(mm("13.4")), "of branch R615 or newer");
  EXPECT_HAS(compat::driver_requirement(mm("13.4")), "not confirmed");
  EXPECT_TRUE(compat::min_driver_for(mm("13.5")));
  // Past the table: a floor, said to be one, never a made-up number.
  const std::string past = compat::driver_requirement(mm("13.6"));
  EXPECT_HAS(past, "CUDA 13.6: newer than this table (2026-12): driver floor unknown, >= R615 at least");
  EXPECT_TRUE(compat::newer_than_tables(mm("13.6")));
  EXPECT_FALSE(compat::newer_than_tables(mm("13.5")));
  EXPECT_FALSE(compat::min_driver_for(Version{10, 2, 0}));
  EXPECT_EQ(compat::driver_branch("580.95.05"), 580);
  EXPECT_EQ(compat::driver_branch("unknown"), 0);
}

// Table 2 / the compatibility guide: the lowest driver of each major, on Linux and Windows, and which
// drivers run which CUDA through minor-version compatibility.
TEST(DoctorCompat, MinorVersionFloorsOnLinuxAndWindows) {
  ASSERT_NE(compat::minor_compat(11), nullptr);
  EXPECT_EQ(compat::minor_compat(11)->linux_driver, "450.80.02");
  EXPECT_EQ(compat::minor_compat(11)->windows_driver, "452.39");
  EXPECT_EQ(compat::minor_compat(12)->linux_driver, "525.60.13");
  EXPECT_EQ(compat::minor_compat(12)->windows_driver, "527.41");
  EXPECT_EQ(compat::minor_compat(13)->linux_driver, "580.65.06");
  EXPECT_TRUE(compat::minor_compat(13)->windows_driver.empty());  // NVIDIA names no Windows number for 13.x
  struct Row {
    const char* driver;
    Version driver_cuda, cuda;
    bool runs;
  };
  const Row rows[] = {
      {"450.51.06", {11, 0}, {11, 0}, true},   {"450.51.06", {11, 0}, {11, 1}, false},  // below 450.80.02
      {"450.80.02", {11, 0}, {11, 8}, true},   {"470.82.01", {11, 4}, {11, 8}, true},
      {"525.60.13", {12, 0}, {12, 6}, true},   {"535.54.03", {12, 2}, {12, 9}, true},
      {"535.54.03", {12, 2}, {13, 0}, false},  {"580.65.06", {13, 0}, {13, 2}, true},
      {"580.65.06", {13, 0}, {12, 4}, true},   {"418.39", {10, 1}, {10, 2}, false},  // no minor compat before 11
  };
  for (const Row& r : rows)
    EXPECT_EQ(compat::driver_runs(r.driver, r.driver_cuda, r.cuda), r.runs) << r.driver << " and CUDA " << r.cuda.str();
  EXPECT_FALSE(compat::driver_runs("580.65.06", std::nullopt, Version{12, 0, 0}));
}

// The Windows column, for WSL2 (which runs the Windows driver): the GA row's number and the major's floor.
TEST(DoctorCompat, WindowsDriverNumbers) {
  EXPECT_EQ(compat::windows_driver_requirement(mm("12.0")), "527.41 or newer");
  EXPECT_EQ(compat::windows_driver_requirement(mm("12.4")),
            "551.61 or newer, or 527.41 or newer through CUDA 12.x minor-version compatibility");
  EXPECT_EQ(compat::windows_driver_requirement(mm("11.8")),
            "520.06 or newer, or 452.39 or newer through CUDA 11.x minor-version compatibility");
  EXPECT_EQ(compat::windows_driver_requirement(mm("12.9")),
            "576.02 or newer, or 527.41 or newer through CUDA 12.x minor-version compatibility");
  const std::string w13 = compat::windows_driver_requirement(mm("13.0"));
  EXPECT_HAS(w13, "a driver of branch R580 or newer (NVIDIA names no Windows number for CUDA 13.0");
  EXPECT_HAS(w13, "at least R580 through CUDA 13.x minor-version compatibility");
  EXPECT_HAS(compat::windows_driver_requirement(mm("13.2")), "R595 or newer");
}

// Architectures: first and last toolkit, last driver branch, last cuDNN, and the kernel modules.
TEST(DoctorCompat, ArchitectureRowsKeepNvidiasRules) {
  const compat::Tables& t = compat::tables();
  for (size_t i = 0; i < t.archs.size(); ++i) {
    const auto& a = t.archs[i];
    if (i > 0) EXPECT_LT(t.archs[i - 1].cc, a.cc);
    if (a.last_cuda) EXPECT_LE(a.first_cuda, *a.last_cuda) << a.cc;
    // A dropped architecture has its last driver branch and cuDNN; a current one has none.
    EXPECT_EQ(a.last_cuda.has_value(), a.last_driver_branch.has_value()) << a.cc;
    EXPECT_EQ(a.last_cuda.has_value(), a.last_cudnn.has_value()) << a.cc;
    // The first toolkit for it is one the table knows (a driver can be named for it).
    EXPECT_TRUE(compat::min_driver_for(a.first_cuda)) << a.cc;
    // The open kernel modules: Turing and newer; Blackwell needs them.
    EXPECT_EQ(a.kernel_modules, a.cc < 75 ? "proprietary" : a.cc < 100 ? "either" : "open") << a.cc;
  }
  // CUDA 13 dropped sm_50..sm_72 (Maxwell, Pascal, Volta): 12.9 is their last toolkit, R580 their
  // last driver branch, cuDNN 9.10 their last cuDNN; sm_75 and newer build with 13.0.
  for (int cc : {50, 52, 53, 60, 61, 62, 70, 72}) {
    EXPECT_FALSE(compat::toolkit_builds_for(Version{13, 0, 0}, cc)) << cc;
    EXPECT_TRUE(compat::toolkit_builds_for(Version{12, 9, 0}, cc)) << cc;
    ASSERT_NE(compat::arch(cc), nullptr);
    EXPECT_EQ(compat::arch(cc)->last_driver_branch, 580) << cc;
    EXPECT_EQ(compat::newest_toolkit_for(cc), (Version{12, 9, 0})) << cc;
    EXPECT_EQ(compat::arch(cc)->last_cudnn, (Version{9, 10, 0})) << cc;
  }
  for (int cc : {75, 80, 86, 89, 90, 100, 120}) EXPECT_TRUE(compat::toolkit_builds_for(Version{13, 0, 0}, cc)) << cc;
  EXPECT_FALSE(compat::toolkit_builds_for(Version{12, 4, 0}, 120));  // Blackwell needs 12.8
  EXPECT_TRUE(compat::toolkit_builds_for(Version{12, 8, 0}, 120));
  // Kepler: R470 and CUDA 11.8 last; cuDNN 8.5 the newest matrix that lists it (8.9 starts at CC 5.0).
  EXPECT_EQ(compat::arch(35)->last_driver_branch, 470);
  EXPECT_EQ(compat::arch(37)->last_cudnn, (Version{8, 5, 0}));
  EXPECT_FALSE(compat::toolkit_builds_for(Version{12, 0, 0}, 35));
  EXPECT_EQ(compat::newest_toolkit_for(90), (Version{13, 3, 0}));  // 13.4 exists, its driver unconfirmed
  EXPECT_EQ(compat::newest_toolkit_for_branch(470), (Version{11, 4, 0}));
  EXPECT_EQ(compat::newest_toolkit_for_branch(580), (Version{13, 0, 0}));
}

// PyTorch's indexes: the architectures each carries (build_cuda.sh) and the torch releases.
TEST(DoctorCompat, TorchWheelIndexesCarryTheirArchitectures) {
  ASSERT_NE(wheel("cu126"), nullptr);
  EXPECT_EQ(wheel("cu126")->archs, (std::vector<int>{50, 60, 70, 75, 80, 86, 90}));
  EXPECT_EQ(wheel("cu128")->archs, (std::vector<int>{70, 75, 80, 86, 90, 100, 120}));  // sm_70 kept (157517)
  EXPECT_FALSE(wheel("cu128")->ptx);
  EXPECT_EQ(wheel("cu129")->archs, wheel("cu128")->archs);
  EXPECT_TRUE(wheel("cu129")->ptx);
  EXPECT_EQ(compat::torch_releases(*wheel("cu129")), "2.8 only");
  EXPECT_EQ(wheel("cu130")->archs, (std::vector<int>{75, 80, 86, 90, 100, 120}));  // no sm_70; sm_110 on aarch64 only
  ASSERT_NE(wheel("cu132"), nullptr);
  EXPECT_EQ(wheel("cu132")->cuda, (Version{13, 2, 0}));
  EXPECT_EQ(compat::torch_releases(*wheel("cu132")), "2.12 and later");
  EXPECT_FALSE(wheel("cu132")->from.confirmed);  // its arch list is cu130's, not read from the script
  EXPECT_EQ(compat::torch_releases(*wheel("cu118")), "2.0 to 2.7");
  EXPECT_TRUE(compat::wheel_runs_on(*wheel("cu118"), 37));
  EXPECT_FALSE(compat::wheel_runs_on(*wheel("cu118"), 35));  // sm_37 SASS does not run on 3.5
  EXPECT_TRUE(compat::wheel_runs_on(*wheel("cu130"), 121));  // PTX of sm_120
}

// The index to install: the newest torch this driver (natively or through minor-version
// compatibility) and every GPU can run; of those alike, one the driver supports natively.
TEST(DoctorCompat, TorchWheelIndexFitsTheDriverAndEveryGpu) {
  struct Row {
    const char* driver;
    Version driver_cuda;
    std::vector<int> ccs;
    std::string index;  // "" = none fits
  };
  const Row rows[] = {
      {"575.51.03", {12, 9}, {90}, "cu126"},      // not cu129 (torch 2.8 only)
      {"550.54.14", {12, 4}, {80}, "cu126"},      // not cu124 (torch 2.6 at most): cu126 runs on >= 525.60.13
      {"535.54.03", {12, 2}, {86}, "cu126"},      {"580.65.06", {13, 0}, {90}, "cu130"},
      {"595.45.04", {13, 2}, {90}, "cu132"},      {"570.26", {12, 8}, {120}, "cu128"},
      {"520.61.05", {11, 8}, {120}, ""},          {"580.65.06", {13, 0}, {70}, "cu126"},
      {"580.65.06", {13, 0}, {70, 90}, "cu126"},  {"470.82.01", {11, 4}, {37}, "cu118"},  // Kepler on R470
      {"450.51.06", {11, 0}, {80}, ""},           {"450.80.02", {11, 0}, {80}, "cu118"},
      {"580.65.06", {13, 0}, {121}, "cu130"},     {"580.65.06", {13, 0}, {35}, ""},
  };
  for (const Row& r : rows) {
    const compat::TorchWheel* w = compat::torch_wheel_for(r.driver, r.driver_cuda, r.ccs);
    EXPECT_EQ(w ? w->index : "", r.index) << r.driver << " sm_" << r.ccs.front();
    if (w) {
      EXPECT_TRUE(compat::driver_runs(r.driver, r.driver_cuda, w->cuda));
      for (int cc : r.ccs) EXPECT_TRUE(compat::wheel_runs_on(*w, cc));
    }
  }
  // After a driver upgrade: the newest torch, from the index that needs the oldest driver.
  EXPECT_EQ(compat::torch_wheel_after_upgrade({120})->index, "cu130");
  EXPECT_EQ(compat::torch_wheel_after_upgrade({70})->index, "cu126");
  EXPECT_EQ(compat::torch_wheel_after_upgrade({37})->index, "cu118");
  EXPECT_EQ(compat::torch_wheel_after_upgrade({35}), nullptr);
}

// TensorFlow's tested build configurations: what each release was built for, which package holds the
// GPU build, since when tensorflow[and-cuda] brings the libraries.
TEST(DoctorCompat, TensorflowReleasesAndTheirCuda) {
  auto row = [](const char* v) { return compat::tensorflow_row(mm(v)); };
  ASSERT_NE(row("1.14"), nullptr);
  EXPECT_EQ(row("1.14")->cuda, (Version{10, 0, 0}));
  EXPECT_EQ(row("1.14")->cudnn, (Version{7, 4, 0}));
  EXPECT_EQ(row("1.14")->package, "tensorflow-gpu");
  EXPECT_FALSE(row("1.14")->and_cuda);
  EXPECT_EQ(row("2.2")->cuda, (Version{10, 1, 0}));
  EXPECT_EQ(row("2.2")->package, "tensorflow");
  EXPECT_EQ(row("2.10")->cudnn, (Version{8, 1, 0}));
  EXPECT_EQ(row("2.13")->cuda, (Version{11, 8, 0}));
  EXPECT_FALSE(row("2.13")->and_cuda);
  EXPECT_TRUE(row("2.14")->and_cuda);  // the extra exists from 2.14
  EXPECT_EQ(row("2.15")->cuda, (Version{12, 2, 0}));
  EXPECT_EQ(row("2.17")->cuda, (Version{12, 3, 0}));
  EXPECT_EQ(row("2.18")->cudnn, (Version{9, 3, 0}));
  EXPECT_EQ(row("2.21")->cuda, (Version{12, 5, 0}));
  EXPECT_FALSE(row("2.21")->from.confirmed);
  EXPECT_EQ(compat::tensorflow_row(Version{0, 9, 0}), nullptr);
  EXPECT_EQ(compat::tensorflow_for(13), nullptr);  // no TensorFlow is built for CUDA 13
  EXPECT_EQ(compat::tensorflow_for(12, 8)->version, (Version{2, 16, 0}));
  EXPECT_EQ(compat::tensorflow_for(12, 9)->version, (Version{2, 19, 0}));
  EXPECT_EQ(compat::newest_tensorflow_for_driver("580.65.06", Version{13, 0, 0})->version, (Version{2, 19, 0}));
  EXPECT_EQ(compat::newest_tensorflow_for_driver("470.82.01", Version{11, 4, 0})->version, (Version{2, 14, 0}));
}

// JAX's install guide: CUDA 12 from SM 5.2 and R525, CUDA 13 from SM 7.5 and R580.
TEST(DoctorCompat, JaxExtrasAndTheirFloors) {
  ASSERT_NE(compat::jax_row(12), nullptr);
  EXPECT_EQ(compat::jax_row(12)->min_cc, 52);
  EXPECT_EQ(compat::jax_row(12)->min_driver_branch, 525);
  EXPECT_EQ(compat::jax_row(13)->min_cc, 75);
  EXPECT_EQ(compat::jax_row(13)->min_driver_branch, 580);
  auto extra = [](const char* driver, Version cuda, std::vector<int> ccs) {
    const compat::JaxRow* r = compat::jax_extra_for(driver, cuda, ccs);
    return r ? r->extra : std::string();
  };
  EXPECT_EQ(extra("580.65.06", {13, 0}, {90}), "cuda13");
  EXPECT_EQ(extra("580.65.06", {13, 0}, {70}), "cuda12");  // Volta: CUDA 12 JAX on a CUDA 13 driver
  EXPECT_EQ(extra("580.65.06", {13, 0}, {61, 90}), "cuda12");
  EXPECT_EQ(extra("550.54.14", {12, 4}, {90}), "cuda12");
  EXPECT_EQ(extra("580.65.06", {13, 0}, {37}), "");  // Kepler: none
  EXPECT_EQ(extra("470.82.01", {11, 4}, {80}), "");  // driver too old for either
}

// NVIDIA's pip wheels by CUDA major: CUDA 13's toolkit libraries unsuffixed, cuDNN and NCCL -cu13.
TEST(DoctorCompat, PipWheelNamesByCudaMajor) {
  EXPECT_EQ(compat::pip_wheels(11).cublas, "nvidia-cublas-cu11");
  EXPECT_EQ(compat::pip_wheels(11).cudnn, "nvidia-cudnn-cu11");
  EXPECT_EQ(compat::pip_wheels(12).cublas, "nvidia-cublas-cu12");
  EXPECT_EQ(compat::pip_wheels(12).nccl, "nvidia-nccl-cu12");
  EXPECT_EQ(compat::pip_wheels(12).cudart, "nvidia-cuda-runtime-cu12");
  EXPECT_EQ(compat::pip_wheels(13).cublas, "nvidia-cublas");
  EXPECT_EQ(compat::pip_wheels(13).cudart, "nvidia-cuda-runtime");
  EXPECT_EQ(compat::pip_wheels(13).cudnn, "nvidia-cudnn-cu13");
  EXPECT_EQ(compat::pip_wheels(13).nccl, "nvidia-nccl-cu13");
}

// Debian's archive (apt-cache policy, 2026-12-04): its drivers and its cuDNN packages.
TEST(DoctorCompat, DistributionPackages) {
  const compat::DistroDriver* d12 = compat::distro_driver("debian", "12");
  ASSERT_NE(d12, nullptr);
  EXPECT_EQ(d12->version, "535.309.01");
  EXPECT_EQ(d12->suite, "bookworm-security");
  EXPECT_EQ(d12->backports, "535.216.03");
  EXPECT_EQ(d12->cudnn_package, "nvidia-cudnn");
  EXPECT_EQ(d12->cudnn_version, "8.5.0.96");
  EXPECT_EQ(d12->cudnn_cuda_major, 11);
  const compat::DistroDriver* d13 = compat::distro_driver("debian", "13.1");
  ASSERT_NE(d13, nullptr);
  EXPECT_EQ(d13->version, "550.163.01");
  EXPECT_EQ(d13->cudnn_version, "9.0.0.312");
  EXPECT_EQ(d13->cudnn_cuda_major, 12);
  EXPECT_EQ(d13->cudnn_component, "contrib");
  EXPECT_EQ(compat::distro_driver("ubuntu", "24.04"), nullptr);
}

// docs/doctor.md prints the tables as the data file has them (regenerate with `ember doctor --tables`).
TEST(DoctorCompat, DocsPrintTheTables) {
  std::ifstream in(ember::test::data_dir() + "/../docs/doctor.md");
  if (!in) GTEST_SKIP() << "docs/doctor.md is not beside the test data (a bundle)";
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str(), begin = "<!-- compat tables: ember doctor --tables -->\n",
                    end = "<!-- end of compat tables -->";
  const size_t a = doc.find(begin), b = doc.find(end);
  ASSERT_NE(a, std::string::npos) << "docs/doctor.md has no '" << begin << "' marker";
  ASSERT_NE(b, std::string::npos);
  EXPECT_EQ(doc.substr(a + begin.size(), b - a - begin.size()), compat::markdown_tables())
      << "docs/doctor.md's tables differ from src/env/compat_tables.json: paste `ember doctor --tables` between the "
         "markers";
  EXPECT_EQ(compat_tables_markdown(), compat::markdown_tables());
}

// For every GPU in the tables and every toolkit ember could have been built with, a GPU without
// kernels gets a fix whose toolkit builds every architecture the fix lists, the GPU's among them,
// and whose flag is the one CMakeLists.txt reads.
TEST(DoctorCompat, EveryRebuildFixIsPossible) {
  for (const auto& tk : compat::tables().toolkits)
    for (const auto& a : compat::tables().archs) {
      EnvFacts f;
      f.built_with_cuda = true;
      f.cpu_smoke_ok = true;
      f.cuda_compiled = tk.cuda;
      f.cuda_runtime = tk.cuda;
      f.driver_found = true;
      f.driver_cuda = Version{13, 5, 0};
      f.cuda_sass_archs = {a.cc / 10 == 8 ? 90 : 80};  // never the GPU's major
      f.gpus = {GpuInfo{0, "GPU", a.cc / 10, a.cc % 10, 8ull << 30}};
      const Verdict v = diagnose(f);
      auto it = std::find_if(v.checks.begin(), v.checks.end(), [](const Check& c) { return c.name == "device 0"; });
      ASSERT_NE(it, v.checks.end());
      const std::string where = "sm_" + std::to_string(a.cc) + " on CUDA " + tk.cuda.str() + ": " + it->fix;
      EXPECT_EQ(it->level, Level::Fail) << where;
      EXPECT_EQ(it->fix.find("CMAKE_CUDA_ARCHITECTURES"), std::string::npos) << where;
      const size_t flag = it->fix.find("-DEMBER_CUDA_ARCHS=\"");
      ASSERT_NE(flag, std::string::npos) << where;
      const size_t start = flag + 20, end = it->fix.find('"', start);
      const std::string value = it->fix.substr(start, end - start);
      Version build = tk.cuda;
      if (size_t w = it->fix.find("rebuild ember with CUDA "); w != std::string::npos) build = mm(it->fix.substr(w + 24));
      EXPECT_HAS(value, std::to_string(a.cc) + "-real");
      std::stringstream ss(value);
      std::string item;
      while (std::getline(ss, item, ';'))
        EXPECT_TRUE(compat::toolkit_builds_for(build, std::stoi(item))) << item << " with CUDA " << build.str() << "; "
                                                                       << where;
    }
}

// The flag the fixes name is the cache variable the build reads (CMakeLists.txt), not the CMake
// variable it overrides.
TEST(DoctorCompat, FixFlagIsTheOneCMakeListsReads) {
  std::ifstream in(ember::test::data_dir() + "/../CMakeLists.txt");
  if (!in) GTEST_SKIP() << "CMakeLists.txt is not beside the test data (a bundle)";
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_HAS(text.str(), "set(EMBER_CUDA_ARCHS ");
  EXPECT_HAS(text.str(), "set(CMAKE_CUDA_ARCHITECTURES ${EMBER_CUDA_ARCHS})");
}
