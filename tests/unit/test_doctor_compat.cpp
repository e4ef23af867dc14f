// The doctor's compatibility tables (src/env/compat_tables.json, compiled in) against the rules
// they must keep: dated with sources, monotone drivers, CUDA 13's dropped architectures, and every
// rebuild fix the doctor prints naming a toolkit that builds every architecture it lists.
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

}  // namespace

TEST(DoctorCompat, TablesAreDatedWithSources) {
  const compat::Tables& t = compat::tables();
  EXPECT_EQ(t.schema, 1);
  EXPECT_EQ(t.date.size(), 10u) << t.date;  // YYYY-MM-DD
  EXPECT_GE(t.sources.size(), 4u);
  bool release_notes = false, cudnn = false;
  for (const auto& s : t.sources) {
    release_notes |= s.find("CUDA Toolkit and Corresponding Driver Versions") != std::string::npos;
    cudnn |= s.find("cuDNN support matrix") != std::string::npos;
  }
  EXPECT_TRUE(release_notes && cudnn);
  EXPECT_THROW(compat::parse("{\"schema\": 1}"), std::exception);
}

TEST(DoctorCompat, EveryToolkitMinorFrom11HasAMonotoneDriver) {
  const compat::Tables& t = compat::tables();
  for (const char* minor : {"11.0", "11.1", "11.2", "11.3", "11.4", "11.5", "11.6", "11.7", "11.8", "12.0", "12.1",
                            "12.2", "12.3", "12.4", "12.5", "12.6", "12.8", "12.9", "13.0"}) {
    auto d = compat::min_driver_for(mm(minor));
    ASSERT_TRUE(d) << minor;
    EXPECT_TRUE(d->exact) << minor;
  }
  for (size_t i = 1; i < t.toolkits.size(); ++i) {
    EXPECT_LT(t.toolkits[i - 1].cuda, t.toolkits[i].cuda) << i;
    EXPECT_LT(driver_tuple(t.toolkits[i - 1].min_driver), driver_tuple(t.toolkits[i].min_driver))
        << t.toolkits[i].cuda.str();
  }
  // The minor-version-compatibility floor of a major lies in the branch of its first minor (11.x:
  // 450.80.02, a later R450 than 11.0's own 450.51.05), at or below every later minor's driver.
  for (const auto& floor : t.minor_compat) {
    bool first = true;
    for (const auto& row : t.toolkits) {
      if (row.cuda.major != floor.cuda_major) continue;
      if (first)
        EXPECT_EQ(compat::driver_branch(floor.min_driver), compat::driver_branch(row.min_driver)) << row.cuda.str();
      else
        EXPECT_LE(driver_tuple(floor.min_driver), driver_tuple(row.min_driver)) << row.cuda.str();
      first = false;
    }
  }
  EXPECT_EQ(compat::driver_requirement(Version{12, 4, 1}), "550.54.14 or newer");
  EXPECT_EQ(compat::driver_requirement(Version{13, 0, 0}), "580.65.06 or newer");
  // A minor past the table: a floor, said to be one, never a made-up number.
  const std::string past = compat::driver_requirement(Version{13, 9, 0});
  EXPECT_HAS(past, "newer than " + t.toolkits.back().min_driver);
  EXPECT_HAS(past, "past ember's tables of " + t.date);
  EXPECT_FALSE(compat::min_driver_for(Version{10, 2, 0}));
  EXPECT_EQ(compat::driver_branch("580.95.05"), 580);
  EXPECT_EQ(compat::driver_branch("unknown"), 0);
}

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
  EXPECT_EQ(compat::arch(35)->last_driver_branch, 470);
  EXPECT_FALSE(compat::toolkit_builds_for(Version{12, 0, 0}, 35));
}

TEST(DoctorCompat, TorchWheelIndexFitsTheDriverAndEveryGpu) {
  struct Row {
    Version driver;
    std::vector<int> ccs;
    std::string index;  // "" = none fits
  };
  const Row rows[] = {
      {{12, 2}, {86}, "cu121"},        {{12, 9}, {90}, "cu129"},     {{13, 0}, {120}, "cu130"},
      {{12, 8}, {120}, "cu128"},       {{12, 6}, {120}, ""},         {{12, 9}, {70}, "cu126"},
      {{13, 0}, {70, 90}, "cu126"},    {{11, 4}, {80}, ""},          {{11, 8}, {37}, "cu118"},
      {{13, 0}, {121}, "cu130"},  // PTX of sm_120 JIT-compiles for 12.1
  };
  for (const Row& r : rows) {
    const compat::TorchWheel* w = compat::torch_wheel_for(r.driver, r.ccs);
    EXPECT_EQ(w ? w->index : "", r.index) << r.driver.str() << " sm_" << r.ccs.front();
    if (w) {
      EXPECT_LE(w->cuda, r.driver);
      for (int cc : r.ccs) EXPECT_TRUE(compat::wheel_runs_on(*w, cc));
    }
  }
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
      f.driver_cuda = Version{13, 1, 0};
      f.cuda_sass_archs = {a.cc / 10 == 8 ? 90 : 80};  // never the GPU's major
      f.gpus = {GpuInfo{0, "GPU", a.cc / 10, a.cc % 10, 8ull << 30}};
      const Verdict v = evaluate(f);
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
