// End-to-end tests of `ember bench matmul` and `ember bench train` on the CPU: the table and JSON
// shapes, --seed reproducibility, the CPU size cap, and the line that says why there is no GPU
// column; each point's steady-state timing (median of the repeats, the spread, steps and seconds
// in --json) and bench train's --precision. GPU columns (timings, speed-up, max relative
// difference) need a GPU and skip without one. Every run bounds its timing with small values.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "cli_test_util.h"
#include "ember/autocast.h"
#include "ember/cuda.h"

using ember::e2e::run_ember;

namespace {

// Small timing values: each point's repeats take milliseconds, not the defaults' seconds.
const std::string kQuickMatmul = " --min-time 0.01 --min-calls 1 --repeats 1 --max-warmup-time 0";
const std::string kQuickTrain = " --min-time 0.01 --repeats 1 --max-warmup-time 0";

bool has(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }

nlohmann::json run_json(const std::string& args) {
  auto r = run_ember(args);
  EXPECT_EQ(r.code, 0) << r.out;
  nlohmann::json j;
  EXPECT_NO_THROW(j = nlohmann::json::parse(r.out)) << r.out;
  return j;
}

// The checksum on the table row of size n ("    16  0123456789abcdef  ...").
std::string table_checksum(const std::string& out, int n) {
  std::smatch m;
  std::regex row("\\n\\s*" + std::to_string(n) + "\\s+([0-9a-f]{16})\\s");
  return std::regex_search(out, m, row) ? m[1].str() : "";
}

TEST(CliBench, MatmulJsonShapeOnTheCpu) {
  auto j = run_json("bench matmul --sizes 16,32 --cpu-max-size 16 --seed 3 --threads 2 --json" + kQuickMatmul);
  EXPECT_EQ(j["seed"], 3);
  EXPECT_EQ(j["cpu_max_size"], 16);
  EXPECT_EQ(j["dtype"], "float32");
  ASSERT_EQ(j["results"].size(), 2u);
  const auto& small = j["results"][0];
  EXPECT_EQ(small["n"], 16);
  EXPECT_EQ(small["checksum"].get<std::string>().size(), 16u);
  EXPECT_GT(small["cpu_gflops"].get<double>(), 0);
  EXPECT_GT(small["cpu_ms"].get<double>(), 0);
  const auto& big = j["results"][1];  // above --cpu-max-size: no CPU figures, and why
  EXPECT_FALSE(big.contains("cpu_gflops")) << big.dump();
  EXPECT_HAS(big["cpu_skipped"].get<std::string>(), "--cpu-max-size 16");
  if (ember::cuda::device_count() > 0) {
    EXPECT_TRUE(small.contains("cuda0_max_rel_diff")) << small.dump();
    EXPECT_FALSE(big.contains("cuda0_max_rel_diff")) << big.dump();  // nothing on the CPU to compare with
    return;
  }
  EXPECT_EQ(j["gpus"], 0);
  EXPECT_HAS(j["gpu"].get<std::string>(), "no CUDA device");
  for (const auto& row : j["results"])
    for (const auto& [k, v] : row.items()) EXPECT_FALSE(has(k, "cuda")) << row.dump();
}

TEST(CliBench, MatmulSeedGivesReproducibleInputs) {
  auto sum = [](const std::string& args) {
    return run_json("bench matmul --sizes 24 --threads 2 --json " + args + kQuickMatmul)["results"][0]["checksum"].get<std::string>();
  };
  const std::string s5 = sum("--seed 5");
  EXPECT_EQ(sum("--seed 5"), s5);    // same seed, same A and B
  EXPECT_NE(sum("--seed 6"), s5);    // another seed, other A and B
  EXPECT_EQ(sum(""), sum("--seed 0"));  // the default seed is 0
  // The table prints the same checksum, and names the seed.
  auto r = run_ember("bench matmul --sizes 24 --seed 5 --threads 2" + kQuickMatmul);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "Philox seed 5");
  EXPECT_HAS(r.out, "A,B checksum");
  EXPECT_EQ(table_checksum(r.out, 24), s5) << r.out;
}

TEST(CliBench, MatmulTableSaysWhatItSkips) {
  auto r = run_ember("bench matmul --sizes 16,40 --cpu-max-size 16 --threads 2" + kQuickMatmul);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "n = 40: CPU skipped (above --cpu-max-size 16");
  EXPECT_HAS(r.out, "cpu GFLOP/s");
  if (ember::cuda::device_count() > 0) GTEST_SKIP() << "this machine has a GPU";
  EXPECT_HAS(r.out, "no GPU column: no CUDA device: ");
  EXPECT_FALSE(has(r.out, "max rel diff")) << r.out;
  EXPECT_EQ(run_ember("bench matmul --sizes 16 --cpu-max-size 0").code, 2);
  EXPECT_EQ(run_ember("bench matmul --sizes 16 --seed -1").code, 2);
}

// What `--precision auto` runs on the CPU here: the name the table and the JSON must give.
std::string cpu_auto_precision() { return ember::bf16_support(ember::Device::cpu()).fast ? "bf16" : "fp32"; }

TEST(CliBench, TrainTableOnTheCpu) {
  auto r = run_ember("bench train --models lenet5 --batch-sizes 4,8 --steps 2 --warmup 1 --threads 2 --min-time 0.01 "
                     "--repeats 2 --max-warmup-time 0.05");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "median of 2 repeats, each >= 0.01 s and >= 2 steps");
  EXPECT_HAS(r.out, "after 1 warm-up step and until the step time settles (within 10%, at most 0.05 s)");
  EXPECT_HAS(r.out, "every repeat lies within N% of the median");
  // Each cell: the median samples/s and the spread.
  EXPECT_TRUE(std::regex_search(r.out, std::regex("lenet5\\s+4\\s+[0-9.]+ ±[0-9.]+%"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("lenet5\\s+8\\s+[0-9.]+ ±[0-9.]+%"))) << r.out;
  EXPECT_HAS(r.out, "cpu " + cpu_auto_precision());  // the column names the precision
  if (ember::cuda::device_count() > 0) {
    EXPECT_HAS(r.out, "cuda:0/cpu");  // the speed-up column
    return;
  }
  EXPECT_HAS(r.out, "no GPU column: no CUDA device: ");
  EXPECT_FALSE(has(r.out, "/cpu")) << r.out;  // no speed-up column without a GPU
}

TEST(CliBench, TrainJsonShape) {
  auto j = run_json("bench train --models lenet5 --batch-sizes 4,8 --steps 2 --warmup 1 --threads 2 --json" +
                    kQuickTrain);
  EXPECT_EQ(j["models"], nlohmann::json::array({"lenet5"}));
  EXPECT_EQ(j["timing"]["min_steps"], 2);
  EXPECT_EQ(j["timing"]["warmup_steps"], 1);
  EXPECT_EQ(j["devices"][0], "cpu");
  const size_t per_point = j["devices"].size();
  ASSERT_EQ(j["results"].size(), 2 * per_point);
  for (const auto& row : j["results"]) {
    EXPECT_EQ(row["model"], "lenet5");
    EXPECT_GT(row["samples_per_s"].get<double>(), 0) << row.dump();
    if (row["device"] != "cpu") EXPECT_GT(row["speedup_vs_cpu"].get<double>(), 0) << row.dump();
  }
  EXPECT_EQ(j["results"][0]["batch_size"], 4);
  if (ember::cuda::device_count() == 0) {
    EXPECT_EQ(per_point, 1u);
    EXPECT_HAS(j["gpu"].get<std::string>(), "no CUDA device");
  }
}

// Each point is the median of its repeats, each at least --min-time and --steps long, and the JSON
// says so: min/median/max, the spread, the repeats with their steps and seconds, the warm-up.
TEST(CliBench, TrainJsonCarriesTheSpreadOfEachPoint) {
  auto j = run_json("bench train --models lenet5 --device cpu --batch-sizes 8 --threads 1 --min-time 0.02 --steps 3 "
                    "--repeats 3 --warmup 2 --max-warmup-time 0.1 --json");
  EXPECT_EQ(j["timing"]["min_time"], 0.02);
  EXPECT_EQ(j["timing"]["repeats"], 3);
  EXPECT_EQ(j["timing"]["max_warmup_time"], 0.1);
  ASSERT_EQ(j["results"].size(), 1u);
  const auto& row = j["results"][0];
  ASSERT_EQ(row["repeats"], 3) << row.dump();
  const double lo = row["samples_per_s_min"], med = row["samples_per_s_median"], hi = row["samples_per_s_max"];
  EXPECT_GT(lo, 0) << row.dump();
  EXPECT_LE(lo, med);
  EXPECT_LE(med, hi);
  EXPECT_DOUBLE_EQ(row["samples_per_s"].get<double>(), med);
  // The spread: the farthest repeat's time per step from the median's, as a fraction of it (samples/s
  // are its inverse: the slowest repeat is med / lo times the median's time).
  EXPECT_NEAR(row["spread"].get<double>(), std::max(med / lo - 1, 1 - med / hi), 1e-9) << row.dump();
  ASSERT_EQ(row["per_repeat"].size(), 3u);
  int64_t steps = 0;
  double seconds = 0;
  for (const auto& rep : row["per_repeat"]) {
    EXPECT_GE(rep["steps"].get<int64_t>(), 3) << rep.dump();
    EXPECT_GE(rep["seconds"].get<double>(), 0.02) << rep.dump();
    // A repeat's samples/s is its steps x batch over its seconds.
    EXPECT_NEAR(rep["samples_per_s"].get<double>(), 8.0 * rep["steps"].get<double>() / rep["seconds"].get<double>(),
                1e-6 * rep["samples_per_s"].get<double>());
    steps += rep["steps"].get<int64_t>();
    seconds += rep["seconds"].get<double>();
  }
  EXPECT_EQ(row["steps"], steps);
  EXPECT_NEAR(row["seconds"].get<double>(), seconds, 1e-9);
  EXPECT_GE(row["warmup"]["steps"].get<int64_t>(), 2) << row.dump();  // --warmup 2, then the settling chunks
  EXPECT_GE(row["warmup"]["seconds"].get<double>(), 0);
  EXPECT_TRUE(row["warmup"]["settled"].is_boolean());
}

// --precision is named in the JSON (the flag, what each device runs and why) and in the table.
TEST(CliBench, TrainPrecisionIsNamedInTheJsonAndTheTable) {
  auto j = run_json("bench train --models lenet5 --device cpu --batch-sizes 4 --threads 1 --steps 1 --json" +
                    kQuickTrain);
  EXPECT_EQ(j["precision"], "auto");  // the default
  EXPECT_EQ(j["device_precision"]["cpu"]["precision"], cpu_auto_precision());
  EXPECT_HAS(j["device_precision"]["cpu"]["why"].get<std::string>(), "auto: ");
  EXPECT_EQ(j["results"][0]["precision"], cpu_auto_precision());
  j = run_json("bench train --models lenet5 --device cpu --batch-sizes 4 --threads 1 --steps 1 --precision fp32 --json" +
               kQuickTrain);
  EXPECT_EQ(j["precision"], "fp32");
  EXPECT_EQ(j["results"][0]["precision"], "fp32");
  auto r = run_ember("bench train --models lenet5 --device cpu --batch-sizes 4 --threads 1 --steps 1 --precision fp32" +
                     kQuickTrain);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "precision  --precision fp32");
  EXPECT_TRUE(std::regex_search(r.out, std::regex("model\\s+batch\\s+cpu fp32"))) << r.out;
  r = run_ember("bench train --models lenet5 --device cpu --batch-sizes 4 --threads 1 --steps 1" + kQuickTrain);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "precision  --precision auto");
  EXPECT_HAS(r.out, "cpu " + cpu_auto_precision() + ": auto: ");  // what auto resolved to, and why
}

// bf16 on a CPU without bf16 hardware (and fp16 on any CPU) is refused with the reason, exit 2,
// before anything runs; where the CPU has bf16, it runs and says so.
TEST(CliBench, TrainLowPrecisionTheCpuCannotRunIsRefusedWithTheReason) {
  const std::string args = "bench train --models lenet5 --device cpu --batch-sizes 4 --threads 1 --steps 1" + kQuickTrain;
  auto r = run_ember(args + " --precision fp16");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "--precision fp16: float16 is a GPU mode");
  const auto bf16 = ember::bf16_support(ember::Device::cpu());
  r = run_ember(args + " --precision bf16 --json");
  if (bf16.native) {
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_EQ(nlohmann::json::parse(r.out)["results"][0]["precision"], "bf16");
    return;
  }
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "--precision bf16: cpu does not run bfloat16 in hardware");
  EXPECT_HAS(r.out, bf16.reason);
  EXPECT_HAS(r.out, "use --precision fp32");
  if (ember::cuda::device_count() > 0) return;
  // --device all on a machine with only this CPU: no device can run it, so the same refusal.
  r = run_ember("bench train --models lenet5 --batch-sizes 4 --threads 2 --steps 1 --precision bf16" + kQuickTrain);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "does not run bfloat16 in hardware");
}

TEST(CliBench, TimingFlagsAreChecked) {
  struct Case {
    std::string args, says;
  };
  for (const Case& c : {Case{"bench train --min-time -1", "--min-time must be between 0 and 3600 (got -1)"},
                        Case{"bench train --repeats 0", "--repeats must be between 1 and 1000 (got 0)"},
                        Case{"bench train --max-warmup-time nan", "--max-warmup-time must be a finite number"},
                        Case{"bench train --warmup -1", "--warmup must be at least 0 (got -1)"},
                        Case{"bench train --precision fp64", "--precision"},
                        Case{"bench matmul --min-calls 0", "--min-calls must be at least 1 (got 0)"},
                        Case{"bench bandwidth --repeats 0", "--repeats must be between 1 and 1000 (got 0)"}}) {
    auto r = run_ember(c.args);
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.out;
    EXPECT_HAS(r.out, c.says);
  }
}

// bench matmul times each size the same way: the median ms and its spread in the table and JSON.
TEST(CliBench, MatmulJsonCarriesTheSpread) {
  auto j = run_json("bench matmul --sizes 32 --threads 2 --min-time 0.01 --min-calls 2 --repeats 3 "
                    "--max-warmup-time 0.05 --json");
  EXPECT_EQ(j["timing"]["repeats"], 3);
  EXPECT_EQ(j["timing"]["min_calls"], 2);
  const auto& row = j["results"][0];
  const auto& t = row["cpu_timing"];
  ASSERT_EQ(t["repeats"], 3) << row.dump();
  EXPECT_LE(t["ms_min"].get<double>(), t["ms_median"].get<double>());
  EXPECT_LE(t["ms_median"].get<double>(), t["ms_max"].get<double>());
  EXPECT_DOUBLE_EQ(row["cpu_ms"].get<double>(), t["ms_median"].get<double>());
  for (const auto& rep : t["per_repeat"]) {
    EXPECT_GE(rep["calls"].get<int64_t>(), 2) << rep.dump();
    EXPECT_GE(rep["seconds"].get<double>(), 0.01) << rep.dump();
  }
  auto r = run_ember("bench matmul --sizes 32 --threads 2" + kQuickMatmul);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "timing  median of 1 repeat, each >= 0.01 s and >= 1 matmul");
  EXPECT_HAS(r.out, "(no settling: --max-warmup-time 0)");
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\\n\\s*32\\s+[0-9a-f]{16}\\s+[0-9.]+\\s+[0-9.]+\\s+±[0-9.]+%")))
      << r.out;
}

TEST(CliBench, TrainRefusesUnknownModelsAndEmptyLists) {
  auto r = run_ember("bench train --models lenet5,mnistnt --batch-sizes 4 --steps 1");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "unknown model 'mnistnt'");
  EXPECT_HAS(r.out, "did you mean 'mnistnet'?");
  r = run_ember("bench train --models lenet5,,mnistnet --batch-sizes 4 --steps 1");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "--models");
  // --model (one) is still accepted, as before the list.
  r = run_ember("bench train --model lenet5 --device cpu --batch-sizes 4 --steps 1 --warmup 0 --threads 2" + kQuickTrain);
  EXPECT_EQ(r.code, 0) << r.out;
}

}  // namespace
