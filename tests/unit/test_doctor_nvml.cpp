// `ember doctor`'s NVML checks in full, through the parametrised fake libnvidia-ml
// (tests/fakes/fake_nvml.c, every value chosen by an environment variable): persistence, ECC,
// retired pages, remapped rows, Xid events, clocks / power / temperature / utilisation, MIG
// instances. Each WARN and FAIL is asserted with its fix; the JSON and the 80-column text too.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <sstream>

#include "ember/env/doctor.h"
#include "env/nvml.h"
#include "env/probe_nvidia.h"

using namespace ember::env;

namespace {

const std::string kFakeNvml = std::string(EMBER_FAKE_LIBS_DIR) + "/nvml/libnvidia-ml.so.1";

#define EXPECT_HAS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

// Sets the fake NVML's variables for one test and clears every one it knows afterwards (the
// probe's child inherits them).
struct FakeNvml {
  explicit FakeNvml(std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (auto [k, v] : vars) setenv(k, v, 1);
  }
  ~FakeNvml() {
    for (const char* k : {"FAKE_NVML_GPUS", "FAKE_NVML_PROCS", "FAKE_NVML_INIT_RC", "FAKE_NVML_PERSISTENCE",
                          "FAKE_NVML_DISPLAY", "FAKE_NVML_ECC_AGGREGATE", "FAKE_NVML_RETIRED", "FAKE_NVML_REMAP",
                          "FAKE_NVML_CLOCKS", "FAKE_NVML_POWER", "FAKE_NVML_TEMP", "FAKE_NVML_UTIL", "FAKE_NVML_MIG",
                          "FAKE_NVML_XIDS"})
      unsetenv(k);
  }
};

EnvFacts probed() {
  EnvFacts f;
  f.built_with_cuda = true;
  f.cuda_compiled = f.cuda_runtime = Version{13, 0, 0};
  detail::probe_nvml(f, {kFakeNvml}, /*xid_wait_ms=*/1);
  return f;
}

std::vector<Check> checks_named(const Verdict& v, const std::string& name) {
  std::vector<Check> out;
  for (const Check& c : v.checks)
    if (c.name == name) out.push_back(c);
  return out;
}

// The check of `name` whose message holds `part` (a GPU may have several).
Check with(const Verdict& v, const std::string& name, const std::string& part) {
  for (const Check& c : checks_named(v, name))
    if (c.message.find(part) != std::string::npos) return c;
  ADD_FAILURE() << "no check " << name << " saying " << part;
  return {};
}

}  // namespace

// Every value the fake offers comes back through the forked child and its JSON.
TEST(DoctorNvml, ReadsEveryFieldThroughTheChild) {
  FakeNvml env({{"FAKE_NVML_GPUS", "Fake H100:80:10:1:0:0"},
                {"FAKE_NVML_PERSISTENCE", "1"},
                {"FAKE_NVML_DISPLAY", "0"},
                {"FAKE_NVML_ECC_AGGREGATE", "4"},
                {"FAKE_NVML_RETIRED", "2:1:0"},
                {"FAKE_NVML_REMAP", "3:1:0:0"},
                {"FAKE_NVML_CLOCKS", "1410:1980:2619:2619"},
                {"FAKE_NVML_POWER", "312:700"},
                {"FAKE_NVML_TEMP", "61"},
                {"FAKE_NVML_UTIL", "87:40"},
                {"FAKE_NVML_MIG", "MIG-aaaa;MIG-bbbb"},
                {"FAKE_NVML_XIDS", "0:13"}});
  const EnvFacts f = probed();
  ASSERT_TRUE(f.nvml_error.empty()) << f.nvml_error;
  ASSERT_EQ(f.nvml_gpus.size(), 1u);
  const NvmlGpu& g = f.nvml_gpus[0];
  EXPECT_EQ(g.uuid, "GPU-fake-0");
  EXPECT_EQ(g.persistence_mode, 1);
  EXPECT_EQ(g.display_active, 0);
  EXPECT_EQ(g.ecc_aggregate_uncorrected, 4);
  EXPECT_EQ(g.retired_pages_sbe, 2);
  EXPECT_EQ(g.retired_pages_dbe, 1);
  EXPECT_EQ(g.retired_pages_pending, 0);
  EXPECT_EQ(g.remapped_rows_correctable, 3);
  EXPECT_EQ(g.remapped_rows_uncorrectable, 1);
  EXPECT_EQ(g.remap_pending, 0);
  EXPECT_EQ(g.remap_failure, 0);
  EXPECT_EQ(g.clock_sm, 1410);
  EXPECT_EQ(g.clock_sm_max, 1980);
  EXPECT_EQ(g.clock_mem_max, 2619);
  EXPECT_EQ(g.power_mw, 312000);
  EXPECT_EQ(g.power_limit_mw, 700000);
  EXPECT_EQ(g.temperature_c, 61);
  EXPECT_EQ(g.utilization_gpu, 87);
  EXPECT_EQ(g.utilization_memory, 40);
  EXPECT_EQ(g.mig_instances, (std::vector<std::string>{"MIG-aaaa", "MIG-bbbb"}));
  EXPECT_EQ(g.xids, (std::vector<unsigned long long>{13}));
}

// An older GPU or driver answers NOT_SUPPORTED: every such field stays -1 and nothing is judged on it.
TEST(DoctorNvml, UnsupportedFieldsStayUnknownAndPass) {
  FakeNvml env({{"FAKE_NVML_GPUS", "Fake T4:16:2:0:0:0"}});
  const EnvFacts f = probed();
  ASSERT_EQ(f.nvml_gpus.size(), 1u);
  const NvmlGpu& g = f.nvml_gpus[0];
  EXPECT_EQ(g.persistence_mode, -1);
  EXPECT_EQ(g.remap_failure, -1);
  EXPECT_EQ(g.retired_pages_dbe, -1);
  EXPECT_EQ(g.clock_sm, -1);
  EXPECT_EQ(g.power_mw, -1);
  EXPECT_TRUE(g.xids.empty());
  const Verdict v = diagnose(f);
  const auto mine = checks_named(v, "nvml gpu 0");
  ASSERT_EQ(mine.size(), 1u);
  EXPECT_EQ(mine[0].level, Level::Pass);
}

// What stops training is a FAIL naming the reset or the RMA; what slows it is a WARN.
TEST(DoctorNvml, EachFindingIsAVerdictWithItsFix) {
  FakeNvml env({{"FAKE_NVML_GPUS", "Fake A100:80:1:0:0:0,Fake A100:80:1:0:0:0,Fake V100:32:1:0:0:0,"
                                   "Fake H100:80:1:0:0:0,Fake H100:80:1:1:0:0,Fake L40S:48:1:0:0:0"},
                {"FAKE_NVML_REMAP", "0:9:0:1,0:1:1:0,,,,"},
                {"FAKE_NVML_RETIRED", ",,0:3:1,,,"},
                {"FAKE_NVML_XIDS", "3:79;3:13;5:48"},
                {"FAKE_NVML_MIG", ",,,,MIG-1111;MIG-2222,"}});
  const Verdict v = diagnose(probed());
  struct Row {
    const char* name;
    const char* says;
    Level level;
    const char* fix;
  };
  const Row rows[] = {
      {"nvml gpu 0", "row remapping failed (9 row(s)", Level::Fail, "RMA"},
      {"nvml gpu 1", "waits for a GPU reset to be remapped", Level::Fail, "sudo nvidia-smi -r -i 1"},
      {"nvml gpu 2", "a memory page waits for a reset to be retired (3 page(s)", Level::Fail, "sudo nvidia-smi -r -i 2"},
      {"nvml gpu 3", "Xid 79 while the doctor watched: GPU has fallen off the bus", Level::Fail, "reboot"},
      {"nvml gpu 3", "Xid 13 while the doctor watched: graphics engine exception", Level::Warn, "compute-sanitizer"},
      {"nvml gpu 4", "MIG mode is on", Level::Warn, "CUDA_VISIBLE_DEVICES=MIG-1111"},
      {"nvml gpu 5", "Xid 48 while the doctor watched: double-bit ECC", Level::Fail, "sudo nvidia-smi -r -i 5"},
  };
  for (const Row& r : rows) {
    const Check c = with(v, r.name, r.says);
    EXPECT_EQ(c.level, r.level) << r.name << ": " << c.message;
    EXPECT_HAS(c.fix, r.fix);
  }
  EXPECT_HAS(with(v, "nvml gpu 4", "MIG mode").message, "instances: MIG-1111, MIG-2222");
  // The FAIL of GPU 3 comes before its WARN: the worst first.
  const auto gpu3 = checks_named(v, "nvml gpu 3");
  ASSERT_EQ(gpu3.size(), 2u);
  EXPECT_EQ(gpu3[0].level, Level::Fail);
}

// Every common Xid has words and a fix; the ones that mean the hardware stop training.
TEST(DoctorNvml, XidTableNamesTheCommonOnes) {
  for (unsigned long long x : {13, 31, 43, 45, 48, 63, 64, 74, 79, 92, 94, 95, 119, 120}) {
    const detail::XidMeaning m = detail::xid_meaning(x);
    EXPECT_EQ(std::string(m.words).find("catalogue"), std::string::npos) << "Xid " << x << " has no words";
    EXPECT_FALSE(std::string(m.fix).empty());
  }
  for (unsigned long long x : {48, 64, 74, 79, 95, 119, 120}) EXPECT_TRUE(detail::xid_meaning(x).stops_training) << x;
  for (unsigned long long x : {13, 31, 43, 45, 63, 92, 94}) EXPECT_FALSE(detail::xid_meaning(x).stops_training) << x;
  EXPECT_HAS(detail::xid_meaning(4242).words, "catalogue");
}

// Persistence off is worth a WARN only on a headless machine with several GPUs (each new process
// re-initialises each GPU); the fix is NVIDIA's persistence daemon, not only the legacy -pm 1.
TEST(DoctorNvml, PersistenceOffWarnsOnlyOnHeadlessMultiGpu) {
  {
    FakeNvml env({{"FAKE_NVML_GPUS", "Fake A100:80:1:0:0:0,Fake A100:80:1:0:0:0"},
                  {"FAKE_NVML_PERSISTENCE", "0,1"},
                  {"FAKE_NVML_DISPLAY", "0,0"}});
    const Verdict v = diagnose(probed());
    const Check c = with(v, "nvml gpu 0", "persistence mode is off");
    EXPECT_EQ(c.level, Level::Warn);
    EXPECT_HAS(c.fix, "systemctl enable --now nvidia-persistenced");
    EXPECT_EQ(checks_named(v, "nvml gpu 1")[0].level, Level::Pass);
  }
  {  // one GPU: no WARN
    FakeNvml env({{"FAKE_NVML_GPUS", "Fake A100:80:1:0:0:0"}, {"FAKE_NVML_PERSISTENCE", "0"}, {"FAKE_NVML_DISPLAY", "0"}});
    EXPECT_EQ(checks_named(diagnose(probed()), "nvml gpu 0")[0].level, Level::Pass);
  }
  {  // a workstation driving a display: no WARN (the display keeps the driver loaded)
    FakeNvml env({{"FAKE_NVML_GPUS", "Fake RTX:24:1:0:0:0,Fake RTX:24:1:0:0:0"},
                  {"FAKE_NVML_PERSISTENCE", "0,0"},
                  {"FAKE_NVML_DISPLAY", "1,0"}});
    const Verdict v = diagnose(probed());
    EXPECT_EQ(checks_named(v, "nvml gpu 0")[0].level, Level::Pass);
    EXPECT_EQ(checks_named(v, "nvml gpu 1")[0].level, Level::Pass);
  }
}

// A slowed GPU names its clocks against their maximum; a healthy one shows them in its PASS line.
TEST(DoctorNvml, ClocksPowerAndTemperatureAreShown) {
  FakeNvml env({{"FAKE_NVML_GPUS", "Fake L4:24:1:0:0:64,Fake H100:80:1:0:0:0"},
                {"FAKE_NVML_CLOCKS", "795:2040:6251:6251,1980:1980:2619:2619"},
                {"FAKE_NVML_POWER", "72:72,350:700"},
                {"FAKE_NVML_TEMP", "91,45"},
                {"FAKE_NVML_UTIL", "100:80,0:0"}});
  const EnvFacts f = probed();
  const Verdict v = diagnose(f);
  const Check slow = with(v, "nvml gpu 0", "hardware thermal slowdown");
  EXPECT_EQ(slow.level, Level::Warn);
  EXPECT_HAS(slow.message, "SM 795/2040 MHz");
  EXPECT_HAS(slow.message, "72/72 W");
  EXPECT_HAS(slow.message, "91 C");
  const Check fine = checks_named(v, "nvml gpu 1")[0];
  EXPECT_EQ(fine.level, Level::Pass);
  EXPECT_HAS(fine.message, "SM 1980/1980 MHz, memory 2619/2619 MHz, 350/700 W, 45 C, 0% busy");
  // The text stays within 80 columns with every field present.
  std::istringstream text(format_report(f, v));
  for (std::string line; std::getline(text, line);) EXPECT_LE(line.size(), 80u) << line;
}

// --json carries every field under nvml.gpus and the schema's minor version.
TEST(DoctorNvml, JsonHasTheNewFieldsAndSchemaMinor) {
  FakeNvml env({{"FAKE_NVML_GPUS", "Fake H100:80:1:1:0:0"},
                {"FAKE_NVML_REMAP", "0:2:1:0"},
                {"FAKE_NVML_POWER", "350:700"},
                {"FAKE_NVML_MIG", "MIG-1111"},
                {"FAKE_NVML_XIDS", "0:94"}});
  const EnvFacts f = probed();
  const auto j = nlohmann::json::parse(to_json(f, diagnose(f)));
  EXPECT_EQ(j["schema"], kJsonSchema);
  EXPECT_EQ(j["schema_minor"], kJsonSchemaMinor);
  const auto& g = j["nvml"]["gpus"][0];
  EXPECT_EQ(g["uuid"], "GPU-fake-0");
  EXPECT_EQ(g["remap_pending"], 1);
  EXPECT_EQ(g["remapped_rows_uncorrectable"], 2);
  EXPECT_EQ(g["power_limit_mw"], 700000);
  EXPECT_EQ(g["mig_instances"][0], "MIG-1111");
  EXPECT_EQ(g["xids"][0], 94);
  EXPECT_EQ(g["persistence_mode"], -1);
  // The same serialiser reads it back (the child's answer is this JSON).
  const NvmlGpu back = detail::nvml_gpu_from_json(g);
  EXPECT_EQ(back.remap_pending, 1);
  EXPECT_EQ(back.xids, (std::vector<unsigned long long>{94}));
}
