// End-to-end tests of `ember bench matmul` and `ember bench train` on the CPU: the table and JSON
// shapes, --seed reproducibility, the CPU size cap, and the line that says why there is no GPU
// column. GPU columns (timings, speed-up, max relative difference) need a GPU and skip without one.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "cli_test_util.h"
#include "ember/cuda.h"

using ember::e2e::run_ember;

namespace {

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
  auto j = run_json("bench matmul --sizes 16,32 --cpu-max-size 16 --seed 3 --threads 2 --json");
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
    return run_json("bench matmul --sizes 24 --threads 2 --json " + args)["results"][0]["checksum"].get<std::string>();
  };
  const std::string s5 = sum("--seed 5");
  EXPECT_EQ(sum("--seed 5"), s5);    // same seed, same A and B
  EXPECT_NE(sum("--seed 6"), s5);    // another seed, other A and B
  EXPECT_EQ(sum(""), sum("--seed 0"));  // the default seed is 0
  // The table prints the same checksum, and names the seed.
  auto r = run_ember("bench matmul --sizes 24 --seed 5 --threads 2");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "Philox seed 5");
  EXPECT_HAS(r.out, "A,B checksum");
  EXPECT_EQ(table_checksum(r.out, 24), s5) << r.out;
}

TEST(CliBench, MatmulTableSaysWhatItSkips) {
  auto r = run_ember("bench matmul --sizes 16,40 --cpu-max-size 16 --threads 2");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "n = 40: CPU skipped (above --cpu-max-size 16");
  EXPECT_HAS(r.out, "cpu GFLOP/s");
  if (ember::cuda::device_count() > 0) GTEST_SKIP() << "this machine has a GPU";
  EXPECT_HAS(r.out, "no GPU column: no CUDA device: ");
  EXPECT_FALSE(has(r.out, "max rel diff")) << r.out;
  EXPECT_EQ(run_ember("bench matmul --sizes 16 --cpu-max-size 0").code, 2);
  EXPECT_EQ(run_ember("bench matmul --sizes 16 --seed -1").code, 2);
}

TEST(CliBench, TrainTableOnTheCpu) {
  auto r = run_ember("bench train --models lenet5 --batch-sizes 4,8 --steps 2 --warmup 1 --threads 2");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "2 timed steps after 1 warm-up");
  EXPECT_TRUE(std::regex_search(r.out, std::regex("lenet5\\s+4\\s+[0-9.]+"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("lenet5\\s+8\\s+[0-9.]+"))) << r.out;
  if (ember::cuda::device_count() > 0) {
    EXPECT_HAS(r.out, "cuda:0/cpu");  // the speed-up column
    return;
  }
  EXPECT_HAS(r.out, "no GPU column: no CUDA device: ");
  EXPECT_FALSE(has(r.out, "/cpu")) << r.out;  // no speed-up column without a GPU
}

TEST(CliBench, TrainJsonShape) {
  auto j = run_json("bench train --models lenet5 --batch-sizes 4,8 --steps 2 --warmup 1 --threads 2 --json");
  EXPECT_EQ(j["models"], nlohmann::json::array({"lenet5"}));
  EXPECT_EQ(j["steps"], 2);
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

TEST(CliBench, TrainRefusesUnknownModelsAndEmptyLists) {
  auto r = run_ember("bench train --models lenet5,mnistnt --batch-sizes 4 --steps 1");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "unknown model 'mnistnt'");
  EXPECT_HAS(r.out, "did you mean 'mnistnet'?");
  r = run_ember("bench train --models lenet5,,mnistnet --batch-sizes 4 --steps 1");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "--models");
  // --model (one) is still accepted, as before the list.
  r = run_ember("bench train --model lenet5 --device cpu --batch-sizes 4 --steps 1 --warmup 0 --threads 2");
  EXPECT_EQ(r.code, 0) << r.out;
}

}  // namespace
