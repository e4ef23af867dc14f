// End-to-end tests of the real `ember` binary: exit codes and messages for bad input, resume
// exactness, signals, doctor and bench. Each test writes a tiny IDX dataset of its own.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <array>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "e2e_util.h"
#include "ember/cuda.h"

#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#include <stb/stb_image.h>
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>

namespace fs = std::filesystem;

namespace {

using e2e::be32;
using e2e::Result;
using e2e::run;
using e2e::write_split;

class Cli : public e2e::Fixture {};

}  // namespace

TEST_F(Cli, HelpAndUsageErrors) {
  for (std::string sub : {"", "train ", "eval ", "predict ", "doctor ", "bench ", "bench matmul ", "bench train "}) {
    Result r = run(sub + "--help");
    EXPECT_EQ(r.code, 0) << sub << r.out;
    EXPECT_HAS(r.out, "Usage");
  }
  Result r = run("");
  EXPECT_EQ(r.code, 2);
  r = run("frobnicate");
  EXPECT_EQ(r.code, 2);
  EXPECT_HAS(r.out, "frobnicate");
  r = run("train --frob");
  EXPECT_EQ(r.code, 2);
  EXPECT_HAS(r.out, "--frob");
  EXPECT_EQ(run("--version").code, 0);
}

TEST_F(Cli, BadValuesAreUsageErrors) {
  struct Case {
    std::string args, piece;
  };
  const Case cases[] = {
      {"--model nope", "nope"},         {"--data nope", "nope"},         {"--epochs 0", "--epochs"},
      {"--epochs -1", "--epochs"},      {"--batch-size 0", "--batch-size"}, {"--batch-size -5", "--batch-size"},
      {"--batch-size abc", "abc"},      {"--lr -1", "--lr"},             {"--optimizer lbfgs", "lbfgs"},
      {"--device gpu", "invalid device"},
      {"--hflip 1.5", "--hflip"},       {"--crop-padding -1", "--crop-padding"},
      {"--label-smoothing 2", "--label-smoothing"}, {"--crop-padding 28", "not smaller than the images (28x28)"},
  };
  for (const Case& c : cases) {
    Result r = run(tiny("bad") + " " + c.args);
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.out;
    EXPECT_HAS(r.out, c.piece);
    EXPECT_EQ(r.out.find("terminate called"), std::string::npos);
  }
}

TEST_F(Cli, DeviceRequestsWithoutAGpu) {
  if (ember::cuda::device_count() > 0) GTEST_SKIP() << "this machine has a GPU";
  Result r = run(tiny("c7") + " --device cuda:7");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_HAS(r.out, "no CUDA device 7");
  r = run(tiny("req") + " --device cuda --require-gpu");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_HAS(r.out, "--require-gpu");
  r = run(tiny("fallback") + " --device cuda --limit-train 64 --limit-test 32");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "falling back to the CPU");
  EXPECT_HAS(r.out, "device     cpu");
}

// A training run on the CPU must not load cuBLAS: mapping libcublas + libcublasLt costs ~150 MB of
// resident memory (src/cuda/cublas_lazy.cpp). LD_DEBUG=files makes the dynamic loader name every
// library it opens, so the check is exact in any build (CPU-only, CUDA, sanitizers).
// The CUDA libraries a CPU run must never map: cuBLAS alone costs ~150 MB resident, and none of
// them need be installed for a CPU run of a CUDA build (the runtime is linked statically).
const char* const kCudaLibraries[] = {"libcudart", "libcublas", "libcudnn", "libnccl"};

TEST_F(Cli, CpuRunDoesNotLoadCublas) {
  Result r = run(tiny("nocublas") + " --device cpu --limit-train 64 --limit-test 32", "LD_DEBUG=files ");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "libdnnl");  // LD_DEBUG did report the libraries it loaded
  for (const char* lib : kCudaLibraries) {
    const size_t at = r.out.find(lib);
    EXPECT_EQ(at, std::string::npos) << lib << ":\n"
                                     << r.out.substr(at == std::string::npos ? 0 : (at > 3000 ? at - 3000 : 0), 3500);
  }
}

// One binary for every machine: the CUDA build links no CUDA library (ldd), so `ember --version`
// starts where none is installed, and loads none (LD_DEBUG). The driver, libcuda.so.1, is not
// linked either: the static CUDA runtime opens it on the first CUDA call.
TEST_F(Cli, StartsWithNoCudaLibraryInstalled) {
  FILE* p = popen(("ldd " + std::string(EMBER_BIN) + " 2>&1").c_str(), "r");
  std::string ldd;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) ldd.append(buf.data(), n);
  pclose(p);
  EXPECT_HAS(ldd, "libember");
  for (const char* lib : {"libcudart", "libcublas", "libcudnn", "libnccl", "libcuda.so"})
    EXPECT_EQ(ldd.find(lib), std::string::npos) << "ember links " << lib << ":\n" << ldd;
  Result r = run("--version", "LD_DEBUG=files ");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "libember");
  for (const char* lib : kCudaLibraries) EXPECT_EQ(r.out.find(lib), std::string::npos) << lib << ":\n" << r.out;
}

// --deterministic: an MLP and a CNN train to bit-identical weights and optimizer state with 1 and
// with 2 threads (GEMMs and conv weight gradients on fixed partitions, src/cpu/gemm.cpp and
// nn_conv.cpp; without --deterministic both differ).
TEST_F(Cli, DeterministicRunsAreBitIdentical) {
  auto tensors = [](const fs::path& run) {
    std::ifstream in(run / "checkpoints" / "latest.json");
    nlohmann::json latest = nlohmann::json::parse(in);
    std::ifstream st(run / "checkpoints" / latest["weights"].get<std::string>(), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(st)), {});
    uint64_t n = 0;
    std::memcpy(&n, bytes.data(), 8);
    return bytes.substr(8 + n);  // the tensor bytes, without the header (its metadata names the run)
  };
  auto train = [&](const std::string& name, const std::string& model, int threads) {
    Result r = run("train --model " + model + " --data-dir " + data.string() + " --epochs 1 --batch-size 32 --threads " +
                   std::to_string(threads) + " --run-dir " + (dir / name).string() + " --device cpu --deterministic --seed 3");
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_HAS(r.out, "deterministic");
    return tensors(dir / name);
  };
  const std::string mlp1 = train("mlp1", "mlp", 1), mlp2 = train("mlp2", "mlp", 2);
  EXPECT_FALSE(mlp1.empty());
  EXPECT_TRUE(mlp1 == mlp2) << "mlp: --deterministic runs with 1 and 2 threads wrote different weights";
  const std::string cnn1 = train("cnn1", "lenet5", 1), cnn2 = train("cnn2", "lenet5", 2);
  EXPECT_FALSE(cnn1.empty());
  EXPECT_TRUE(cnn1 == cnn2) << "lenet5: --deterministic runs with 1 and 2 threads wrote different weights";
}

TEST_F(Cli, MissingDatasetAndUnwritableRunDir) {
  Result r = run("train --data-dir " + (dir / "nowhere").string() + " --run-dir " + (dir / "r").string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_HAS(r.out, "not found");
  EXPECT_HAS(r.out, "apt-get install dataset-fashion-mnist");
  r = run("train --data-dir " + data.string() + " --run-dir /proc/ember-cannot-write-here");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_HAS(r.out, "run directory");
  EXPECT_HAS(r.out, "hint:");
}

TEST_F(Cli, TrainWritesTheRunAndEvalPredictReadIt) {
  Result r = run(tiny("run") + " --log-placement");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "test accuracy:");
  EXPECT_HAS(r.out, "placement  conv1.weight -> cpu");
  for (const char* f : {"config.json", "metrics.jsonl", "report.html", "checkpoints/latest.json", "checkpoints/best.json"})
    EXPECT_TRUE(fs::exists(dir / "run" / f)) << f;
  std::ifstream rep(dir / "run" / "report.html");
  std::string html((std::istreambuf_iterator<char>(rep)), {});
  EXPECT_HAS(html, "<svg");
  EXPECT_HAS(html, "Confusion matrix");

  r = run("eval " + (dir / "run").string() + " --data-dir " + data.string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "per-class accuracy");
  EXPECT_HAS(r.out, "confusion matrix");
  r = run("eval " + (dir / "run").string() + " --json");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["samples"], 64);
  r = run("predict " + (dir / "run").string() + " --index 3 --top-k 3");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "1. ");
  r = run("predict " + (dir / "run").string() + " --index 640");
  EXPECT_EQ(r.code, 2) << r.out;
  // Image files: a 40x40 grey PNG (resized to 28x28), and a file that is not an image.
  {
    std::vector<unsigned char> px(40 * 40);
    for (int i = 0; i < 40 * 40; ++i) px[size_t(i)] = (i / 40) / 4 == 3 ? 230 : 10;
    ASSERT_NE(stbi_write_png((dir / "band.png").c_str(), 40, 40, 1, px.data(), 40), 0);
    std::ofstream(dir / "notes.png") << "not an image";
  }
  r = run("predict " + (dir / "run").string() + " " + (dir / "band.png").string() + " --top-k 2");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "band.png (1x28x28 as fashion-mnist)");
  EXPECT_HAS(r.out, "2. ");
  r = run("predict " + (dir / "run").string() + " " + (dir / "notes.png").string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_HAS(r.out, "notes.png: cannot decode image");
  r = run("predict " + (dir / "run").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "predict needs something to classify: image files or --index N");
  // A second train into the same directory is refused with a hint to --resume.
  r = run(tiny("run"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "--resume");
}

TEST_F(Cli, ConfigFileAndFlagsOverrideIt) {
  std::ofstream(dir / "cfg.toml") << "epochs = 3\nbatch-size = 64\nmodel = \"lenet5\"\n";
  Result r = run("train --config " + (dir / "cfg.toml").string() + " --epochs 1 --data-dir " + data.string() +
                 " --run-dir " + (dir / "c").string());
  ASSERT_EQ(r.code, 0) << r.out;
  auto cfg = nlohmann::json::parse(std::ifstream(dir / "c" / "config.json"));
  EXPECT_EQ(cfg["epochs"], 1);
  EXPECT_EQ(cfg["batch_size"], 64);
  EXPECT_EQ(cfg["model"], "lenet5");
  std::ofstream(dir / "bad.toml") << "epochs = 0\n";
  EXPECT_EQ(run("train --config " + (dir / "bad.toml").string()).code, 2);
  EXPECT_EQ(run("train --config " + (dir / "missing.toml").string()).code, 2);
}

TEST_F(Cli, ResumeIsBitwiseExact) {
  // mnistnet has dropout, so this also checks the RNG state is restored.
  const std::string common = "train --model mnistnet --data-dir " + data.string() +
                             " --epochs 2 --batch-size 32 --threads 2 --limit-test 32 --run-dir ";
  Result a = run(common + (dir / "straight").string());
  ASSERT_EQ(a.code, 0) << a.out;
  Result b = run(common + (dir / "cut").string() + " --stop-after-steps 5");
  ASSERT_EQ(b.code, 130) << b.out;
  EXPECT_HAS(b.out, "resume with: ember train --resume");
  Result c = run("train --resume " + (dir / "cut").string() + " --stop-after-steps 11");  // stop again in epoch 2
  ASSERT_EQ(c.code, 130) << c.out;
  Result d = run("train --resume " + (dir / "cut").string());
  ASSERT_EQ(d.code, 0) << d.out;
  auto sha = [&](const std::string& run) {
    return nlohmann::json::parse(std::ifstream(dir / run / "checkpoints" / "latest.json"))["weights_sha256"];
  };
  EXPECT_EQ(sha("straight"), sha("cut"));
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(dir / "cut" / "checkpoints" / "latest.json"))["step"], 16);
}

// Augmentation is part of the run: recorded in config.json, taken back on --resume (flags not
// repeated), and its random choices replayed exactly (same weights as a straight run).
TEST_F(Cli, AugmentationIsRecordedAndResumesExactly) {
  const std::string common = "train --model lenet5 --data-dir " + data.string() +
                             " --epochs 2 --batch-size 32 --threads 2 --limit-test 32 --hflip 0.5 --crop-padding 2 --run-dir ";
  Result a = run(common + (dir / "straight").string());
  ASSERT_EQ(a.code, 0) << a.out;
  EXPECT_HAS(a.out, "horizontal flip p 0.5, random crop (padding 2)");
  auto cfg = nlohmann::json::parse(std::ifstream(dir / "straight" / "config.json"));
  EXPECT_EQ(cfg["hflip"], 0.5);
  EXPECT_EQ(cfg["crop_padding"], 2);
  EXPECT_EQ(cfg["label_smoothing"], 0.1);  // the default recipe's
  Result b = run(common + (dir / "cut").string() + " --stop-after-steps 5");
  ASSERT_EQ(b.code, 130) << b.out;
  Result c = run("train --resume " + (dir / "cut").string());
  ASSERT_EQ(c.code, 0) << c.out;
  auto sha = [&](const std::string& name) {
    return nlohmann::json::parse(std::ifstream(dir / name / "checkpoints" / "latest.json"))["weights_sha256"];
  };
  EXPECT_EQ(sha("straight"), sha("cut"));
  // Without augmentation the weights differ: the flags did something.
  Result d = run("train --model lenet5 --data-dir " + data.string() +
                 " --epochs 2 --batch-size 32 --threads 2 --limit-test 32 --hflip 0 --run-dir " + (dir / "plain").string());
  ASSERT_EQ(d.code, 0) << d.out;
  EXPECT_HAS(d.out, "no augmentation");
  EXPECT_NE(sha("straight"), sha("plain"));
}

TEST_F(Cli, CorruptCheckpointsAreReportedNotCrashed) {
  ASSERT_EQ(run(tiny("run")).code, 0);
  auto manifest = nlohmann::json::parse(std::ifstream(dir / "run" / "checkpoints" / "latest.json"));
  fs::path weights = dir / "run" / "checkpoints" / manifest["weights"].get<std::string>();
  fs::resize_file(weights, fs::file_size(weights) - 100);
  for (std::string cmd : {"train --resume " + (dir / "run").string(), "eval " + (dir / "run").string()}) {
    Result r = run(cmd);
    EXPECT_EQ(r.code, 1) << cmd << "\n" << r.out;
    EXPECT_HAS(r.out, "corrupt or truncated");
    EXPECT_HAS(r.out, "hint:");
  }
  std::ofstream(dir / "run" / "checkpoints" / "latest.json") << "{\"format\": 1, \"ep";
  Result r = run("eval " + (dir / "run").string() + " --checkpoint last");  // best.json is intact
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_HAS(r.out, "not valid");
  std::ofstream(dir / "junk.safetensors") << "this is not a checkpoint";
  r = run("eval " + (dir / "junk.safetensors").string() + " --model lenet5");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_HAS(r.out, "corrupt or truncated");
  r = run("eval " + (dir / "nothing").string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_HAS(r.out, "does not exist");
}

TEST_F(Cli, NonFiniteLossStopsWithExit1) {
  Result r = run(tiny("nan") + " --optimizer sgd --lr 1e12 --schedule none --epochs 3");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_HAS(r.out, "the loss became");
  EXPECT_HAS(r.out, "learning rate");
}

TEST_F(Cli, SigtermCheckpointsAndExits143) {
  // A run long enough to still be going after 3 s; timeout sends SIGTERM and passes the status on.
  Result r = run(tiny("term") + " --epochs 1000", "timeout --preserve-status -s TERM 3 ");
  EXPECT_EQ(r.code, 143) << r.out;
  EXPECT_HAS(r.out, "terminated (SIGTERM)");
  EXPECT_HAS(r.out, "resume with: ember train --resume");
  EXPECT_TRUE(fs::exists(dir / "term" / "checkpoints" / "latest.json"));
}

TEST_F(Cli, DoctorAndBench) {
  Result r = run("doctor");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "PASS  cpu");
  EXPECT_HAS(r.out, "\nverdict: training will use ");
  auto j = nlohmann::json::parse(run("doctor --json").out);
  EXPECT_EQ(j["verdict"]["can_train"], true);
  EXPECT_EQ(j["schema"], 2);
  // Exit codes by verdict: --require-gpu fails (1) where the GPU is not usable; a bad flag is 2.
  r = run("doctor --require-gpu");
  EXPECT_EQ(r.code, j["verdict"]["gpu_usable"] == true ? 0 : 1) << r.out;
  EXPECT_EQ(run("doctor --no-such-flag").code, 2);
  // The GPU smoke test: without a usable GPU one SKIP line with the reason, exit 0 (1 with
  // --require-gpu); where a GPU is usable it must pass.
  r = run("doctor --smoke");
  if (j["verdict"]["gpu_usable"] == true) {
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_HAS(r.out, "smoke: PASS");
  } else {
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_HAS(r.out, "SKIP  gpu smoke test: no usable GPU");
    EXPECT_EQ(run("doctor --smoke --require-gpu").code, 1);
    auto sj = nlohmann::json::parse(run("doctor --smoke --json").out);
    EXPECT_EQ(sj["passed"], false);
    EXPECT_NE(sj["skipped"].get<std::string>(), "");
  }
  r = run("bench matmul --sizes 64,128 --threads 2 --min-time 0 --repeats 1 --max-warmup-time 0");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "cpu GFLOP/s");
  r = run("bench matmul --sizes 64,x");
  EXPECT_EQ(r.code, 2) << r.out;
  r = run("bench train --model lenet5 --device cpu --batch-sizes 16 --threads 2 --steps 2 --warmup 1 --min-time 0 "
          "--repeats 1 --max-warmup-time 0 --json");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_GT(nlohmann::json::parse(r.out)["results"][0]["samples_per_s"].get<double>(), 0);
  // The tiny test files are not Fashion-MNIST: verify must say so and exit 1.
  r = run("data verify fashion-mnist --data-dir " + data.string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_HAS(r.out, "FAIL");
  EXPECT_EQ(run("data frob").code, 2);
  if (ember::cuda::device_count() == 0) {
    EXPECT_HAS(run("bench matmul --sizes 64 --min-time 0 --repeats 1 --max-warmup-time 0").out, "no CUDA device");
    r = run("bench bandwidth");
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_HAS(r.out, "no CUDA device:");
  }
}

// report.html rendered by a real browser (Debian's chromium, headless): the charts' lines must be
// drawn, i.e. the screenshot holds many pixels of the series colours. Label `browser`.
class CliBrowser : public Cli {};

TEST_F(CliBrowser, ReportChartsAreDrawnInChromium) {
  std::string chromium;
  for (const char* c : {"/usr/bin/chromium", "/usr/bin/chromium-browser"})
    if (fs::exists(c)) chromium = c;
  if (chromium.empty()) GTEST_SKIP() << "chromium is not installed (apt-get install chromium; scripts/setup.sh does)";
  Result r = run(tiny("run") + " --epochs 3");
  ASSERT_EQ(r.code, 0) << r.out;
  const fs::path report = dir / "run" / "report.html", png = dir / "shot.png";
  const std::string cmd = chromium + " --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1400,2400 "
                          "--screenshot=" + png.string() + " file://" + report.string() + " > " +
                          (dir / "chromium.log").string() + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "chromium failed; see " << (dir / "chromium.log");
  int w = 0, h = 0, ch = 0;
  unsigned char* px = stbi_load(png.c_str(), &w, &h, &ch, 3);
  ASSERT_NE(px, nullptr) << "screenshot is not a PNG: " << stbi_failure_reason();
  // The first two series colours of report.cpp: #1f77b4 (train) and #d62728 (test).
  const int colours[2][3] = {{0x1f, 0x77, 0xb4}, {0xd6, 0x27, 0x28}};
  int64_t hits[2] = {0, 0}, non_white = 0;
  for (int64_t i = 0; i < int64_t(w) * h; ++i) {
    const unsigned char* p = px + 3 * i;
    if (p[0] < 250 || p[1] < 250 || p[2] < 250) ++non_white;
    for (int k = 0; k < 2; ++k)
      if (std::abs(p[0] - colours[k][0]) < 24 && std::abs(p[1] - colours[k][1]) < 24 && std::abs(p[2] - colours[k][2]) < 24)
        ++hits[k];
  }
  stbi_image_free(px);
  EXPECT_GT(non_white, 10000) << "the page rendered (almost) blank";
  EXPECT_GT(hits[0], 200) << "too few train-series pixels: the charts' lines were not drawn";
  EXPECT_GT(hits[1], 200) << "too few test-series pixels: the charts' lines were not drawn";
}

TEST_F(Cli, ModelSpecFileTrainsAndBadSpecsNameTheLine) {
  const fs::path spec = dir / "net.toml";
  std::ofstream(spec) << "[[layer]]\ntype = \"conv2d\"\nout_channels = 4\nkernel_size = 3\n[[layer]]\ntype = \"relu\"\n"
                         "[[layer]]\ntype = \"maxpool2d\"\nkernel_size = 2\n[[layer]]\ntype = \"flatten\"\n"
                         "[[layer]]\ntype = \"linear\"\nout_features = \"classes\"\n";
  Result r = run("train --model " + spec.string() + " --data-dir " + data.string() +
                 " --epochs 1 --batch-size 32 --threads 2 --run-dir " + (dir / "run").string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "test accuracy");
  std::ofstream(dir / "bad.toml") << "[[layer]]\ntype = \"conv2d\"\nout_channels = 4\nkernel_size = 3\n[[layer]]\n"
                                     "type = \"linear\"\nout_features = 10\n";
  r = run("train --model " + (dir / "bad.toml").string() + " --data-dir " + data.string() + " --run-dir " +
          (dir / "run2").string());
  EXPECT_EQ(r.code, 2) << r.out;  // a spec error is a usage error, as a bad --config file is
  EXPECT_HAS(r.out, "ember: usage error: " + (dir / "bad.toml").string() + ":5: layer 2 (linear): needs a flat input");
  r = run("train --model nosuchnet");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "model spec file");
}

// Issue 22: out_channels = 9223372036854775807 crashed `ember train` with SIGSEGV (exit 139, no
// message), and a residual's out_channels or an adaptiveavgpool2d's output_size of that size did
// too. Now exit 2 with the file, line, layer and range, and no run directory.
TEST_F(Cli, HugeNumbersInASpecAreUsageErrorsNamingTheLine) {
  const std::string big = "9223372036854775807";
  struct Case {
    std::string text, piece;
  };
  const Case cases[] = {
      {"[[layer]]\ntype = \"conv2d\"\nout_channels = " + big + "\nkernel_size = 3\n[[layer]]\ntype = \"flatten\"\n"
       "[[layer]]\ntype = \"linear\"\nout_features = \"classes\"\n",
       ":3: layer 1 (conv2d): 'out_channels' must be between 1 and 65536, got " + big},
      {"[[layer]]\ntype = \"residual\"\nout_channels = " + big + "\n",
       ":3: layer 1 (residual): 'out_channels' must be between 1 and 65536, got " + big},
      {"[[layer]]\ntype = \"adaptiveavgpool2d\"\noutput_size = " + big + "\n",
       ":3: layer 1 (adaptiveavgpool2d): 'output_size' must be between 1 and 4096, got " + big},
      {"[[layer]]\ntype = \"conv2d\"\nout_channels = 4\nkernel_size = 3\npadding = " + big + "\n",
       ":5: layer 1 (conv2d): 'padding' must be between 0 and 4096, got " + big},
  };
  for (const Case& c : cases) {
    std::ofstream(dir / "huge.toml") << c.text;
    Result r = run("train --model " + (dir / "huge.toml").string() + " --data-dir " + data.string() +
                   " --epochs 1 --threads 2 --run-dir " + (dir / "huge").string());
    EXPECT_EQ(r.code, 2) << c.text << "\n" << r.out;
    EXPECT_HAS(r.out, "ember: usage error: " + (dir / "huge.toml").string() + c.piece);
    EXPECT_HAS(r.out, "hint: docs/model-spec.md gives each key's range");
    EXPECT_FALSE(fs::exists(dir / "huge")) << c.text;
  }
}

// A failed EMBER_ASSERT (ember's own invariant) says it is a bug in ember, not the user's doing,
// asks for a report and exits 3, apart from a failed run (1) and a usage error (2).
// EMBER_TEST_INTERNAL_ERROR (set and not empty) makes main() fail one before the command runs.
TEST_F(Cli, InternalErrorsSayTheyAreABugAndExit3) {
  Result r = run("doctor", "EMBER_TEST_INTERNAL_ERROR=1 ");
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_HAS(r.out, "ember: internal error at ");
  EXPECT_HAS(r.out, "main.cpp:");
  EXPECT_HAS(r.out, "hint: this is a bug in ember, not in how it was used; please report it");
  EXPECT_HAS(r.out, "ember doctor --json");
  EXPECT_LACKS(r.out, "ember: error:");
  EXPECT_LACKS(r.out, "internal error: internal error");
  r = run("--help");
  EXPECT_HAS(r.out, "3 internal");
}

// A full disk while writing a checkpoint (simulated with a file-size limit): the run fails with a
// clear message and exit 1, no temporary file is left, and the previous checkpoint stays loadable.
TEST_F(Cli, FullDiskKeepsThePreviousCheckpoint) {
  Result r = run(tiny("run"));
  ASSERT_EQ(r.code, 0) << r.out;
  r = run("train --resume " + (dir / "run").string() + " --epochs 2", "ulimit -f 150; ");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_HAS(r.out, "File too large");
  for (const auto& e : fs::directory_iterator(dir / "run" / "checkpoints"))
    EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos) << "left behind: " << e.path();
  r = run("eval " + (dir / "run").string() + " --data-dir " + data.string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "epoch 1");
}

// Paths that are not regular files (issue 15, item 6): a FIFO as a dataset file, as latest.json or
// as the --config file used to block forever; a symlink loop printed "internal error ... filesystem
// error"; a symlink to /dev/zero read until memory ran out. Each now fails at once with what the
// path is. `timeout 60` turns a regression into a failure (exit 124) instead of a hung suite.
TEST_F(Cli, FifosDevicesAndSymlinkLoopsAreRefusedPromptly) {
  const std::string timeout = "timeout 60 ";
  fs::create_directories(dir / "fifo");
  fs::copy(data, dir / "fifo", fs::copy_options::recursive);
  fs::remove(dir / "fifo" / "train-images-idx3-ubyte");
  ASSERT_EQ(::mkfifo((dir / "fifo" / "train-images-idx3-ubyte").c_str(), 0600), 0);
  Result r = run(tiny("r1") + " --data-dir " + (dir / "fifo").string(), timeout);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_HAS(r.out, "train-images-idx3-ubyte is a FIFO (named pipe), not a regular file: expected a dataset file");

  fs::create_directories(dir / "loop");
  fs::copy(data, dir / "loop", fs::copy_options::recursive);
  fs::remove(dir / "loop" / "train-images-idx3-ubyte");
  fs::create_symlink("train-images-idx3-ubyte", dir / "loop" / "train-images-idx3-ubyte");
  r = run(tiny("r2") + " --data-dir " + (dir / "loop").string(), timeout);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_HAS(r.out, "too many levels of symbolic links: " + (dir / "loop" / "train-images-idx3-ubyte").string());
  EXPECT_EQ(r.out.find("internal error"), std::string::npos) << r.out;

  fs::create_directories(dir / "zero");
  fs::copy(data, dir / "zero", fs::copy_options::recursive);
  fs::remove(dir / "zero" / "t10k-labels-idx1-ubyte");
  fs::create_symlink("/dev/zero", dir / "zero" / "t10k-labels-idx1-ubyte");
  r = run(tiny("r3") + " --data-dir " + (dir / "zero").string(), timeout);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_HAS(r.out, "is a character device (it resolves to /dev/zero), not a regular file");

  r = run(tiny("run"));
  ASSERT_EQ(r.code, 0) << r.out;
  fs::remove(dir / "run" / "checkpoints" / "latest.json");
  ASSERT_EQ(::mkfifo((dir / "run" / "checkpoints" / "latest.json").c_str(), 0600), 0);
  r = run("eval " + (dir / "run").string() + " --checkpoint last --data-dir " + data.string(), timeout);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_HAS(r.out, "latest.json is a FIFO (named pipe), not a regular file: expected a checkpoint manifest");
  r = run("train --resume " + (dir / "run").string() + " --epochs 2", timeout);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_HAS(r.out, "latest.json is a FIFO");

  ASSERT_EQ(::mkfifo((dir / "cfg.toml").c_str(), 0600), 0);
  r = run(tiny("r4") + " --config " + (dir / "cfg.toml").string(), timeout);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "--config: " + (dir / "cfg.toml").string() + " is a FIFO (named pipe), not a regular file");
}

// ---- issue 15: messages, bounds, aliases, hints ---------------------------------------------------

namespace {
// stdout only (stderr dropped): what a `--json` reader sees.
Result run_stdout(const std::string& args) {
  Result r = run(args + " 2>/dev/null; exit $?", "");
  return r;
}
bool has(const std::string& out, const std::string& piece) { return out.find(piece) != std::string::npos; }
}  // namespace

// Item 5: --threads far beyond the machine used to segfault in libgomp (100000) or exit 1 with only
// libgomp's message (50000); now a usage error that says the bound and why.
TEST_F(Cli, ThreadCountsAreBounded) {
  for (const std::string& args : {tiny("t") + " --threads 100000", tiny("t") + " --threads 50000",
                                   tiny("t") + " --workers 100000", std::string("bench matmul --sizes 64 --threads 5000"),
                                   std::string("bench train --threads 2000")}) {
    Result r = run(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
    EXPECT_HAS(r.out, "must be between 0 and 1024");
    EXPECT_HAS(r.out, "hardware thread");
    EXPECT_FALSE(has(r.out, "libgomp")) << r.out;
  }
  Result r = run("bench matmul --sizes 64 --threads 1024 --min-time 0 --repeats 1 --max-warmup-time 0");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "cpu (1024 threads)");
  if (std::thread::hardware_concurrency() < 1024) EXPECT_HAS(r.out, "compute will be slower");
}

// Item 9: range errors in words (no 309-digit bound), NaN/inf refused with exit 2 for every float
// flag, and a seed that does not fit (negative, 1e23, 10^23) refused instead of becoming 2^64-1.
TEST_F(Cli, NumericFlagsAreCheckedInWords) {
  struct Case {
    std::string args, piece;
  };
  const Case cases[] = {
      {"--epochs 0", "--epochs must be at least 1 (got 0)"},
      {"--batch-size 0", "--batch-size must be at least 1 (got 0)"},
      {"--epochs 2.5", "--epochs must be a whole number"},
      {"--lr nan", "--lr must be a finite number"},
      {"--lr inf", "--lr must be a finite number"},
      {"--lr 0", "--lr must be greater than 0 (got 0)"},
      {"--label-smoothing nan", "--label-smoothing must be a finite number"},
      {"--label-smoothing 1.5", "--label-smoothing must be between 0 and 1 (got 1.5)"},
      {"--hflip nan", "--hflip must be a finite number"},
      {"--weight-decay nan", "--weight-decay must be a finite number"},
      {"--weight-decay -inf", "--weight-decay must be a finite number"},
      {"--seed -1", "--seed must be at least 0 (got -1)"},
      {"--seed 1e23", "--seed must be at most 18446744073709551615"},
      {"--seed 10^23", "--seed must be a whole number"},
      {"--seed 18446744073709551616", "--seed must be at most 18446744073709551615"},
      {"--epochs 99999999999999999999", "--epochs must be at most 9223372036854775807"},
  };
  for (const Case& c : cases) {
    Result r = run(tiny("bad") + " " + c.args);
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.out;
    EXPECT_HAS(r.out, c.piece);
    EXPECT_FALSE(has(r.out, "1797693")) << r.out;
    EXPECT_FALSE(has(r.out, "--epochs: --epochs")) << r.out;
  }
  // The same check reads values from a --config file, and covers the other subcommands' flags.
  std::ofstream(dir / "nan.toml") << "lr = nan\n";
  Result r = run("train --config " + (dir / "nan.toml").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "--lr must be a finite number");
  r = run("eval " + dir.string() + " --batch-size 0");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "--batch-size must be at least 1 (got 0)");
  r = run("bench train --steps 0");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "--steps must be at least 1 (got 0)");
}

// Item 10: unexpected arguments in the order typed (CLI11 2.1.2 joined them backwards), "did you
// mean" for mistyped flags and commands, and the names PyTorch/Keras users type first.
TEST_F(Cli, UnknownFlagsInOrderWithSuggestionsAndAliases) {
  Result r = run("train --learnig-rate 0.01 --frob");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "--learnig-rate 0.01 --frob");
  EXPECT_HAS(r.out, "did you mean --learning-rate?");
  r = run("train --epoch 3");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "did you mean --epochs?");
  r = run("trian");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "did you mean 'ember train'?");
  r = run("bench matmu");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "did you mean 'ember bench matmul'?");
  // The aliases set the same settings as the canonical flags (config.json records them).
  r = run("train --model lenet5 --data-dir " + data.string() + " --threads 2 --limit-test 32 --run-dir " +
          (dir / "alias").string() + " --learning-rate 0.005 --max-epochs 1 -b 64 --num-workers 0 --seed 18446744073709551615");
  ASSERT_EQ(r.code, 0) << r.out;
  auto cfg = nlohmann::json::parse(std::ifstream(dir / "alias" / "config.json"));
  EXPECT_EQ(cfg["lr"], 0.005);
  EXPECT_EQ(cfg["epochs"], 1);
  EXPECT_EQ(cfg["batch_size"], 64);
  EXPECT_EQ(cfg["workers"], 0);
  EXPECT_EQ(cfg["seed"], 18446744073709551615ull);
  // Item 11: eval has no --require-gpu, so its CPU fallback must not suggest it.
  if (ember::cuda::device_count() == 0) {
    r = run("eval " + (dir / "alias").string() + " --device cuda --data-dir " + data.string());
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_HAS(r.out, "falling back to the CPU");
    EXPECT_FALSE(has(r.out, "--require-gpu")) << r.out;
    r = run("predict " + (dir / "alias").string() + " --index 0 --device cuda");
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_FALSE(has(r.out, "--require-gpu")) << r.out;
  }
}

// Item 12: a download that cannot reach its server says where the files go, which files, how to
// copy them in by hand, and --base-url; --base-url fetches from a mirror (a local HTTP server).
TEST_F(Cli, DataFetchOfflineSaysWhatToDoAndBaseUrlUsesAMirror) {
  const fs::path target = dir / "mnist";
  Result r = run("data fetch mnist --data-dir " + target.string() + " --base-url http://127.0.0.1:1");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_HAS(r.out, "could not be reached");
  EXPECT_HAS(r.out, target.string() + "/");
  EXPECT_HAS(r.out, "train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz");
  EXPECT_HAS(r.out, "--base-url URL");
  EXPECT_HAS(r.out, "ember data verify mnist --data-dir " + target.string());
  EXPECT_HAS(r.out, "ember train --data mnist --data-dir " + target.string());
  r = run("data fetch cifar10 --data-dir " + (dir / "c10").string() + " --base-url http://127.0.0.1:1");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_HAS(r.out, "tar xzf cifar-10-binary.tar.gz -C " + (dir / "c10").string());

  const fs::path debian = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(debian / "train-images-idx3-ubyte.gz")) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  const int port = 20000 + int(getpid() % 20000);
  const fs::path pidfile = dir / "http.pid";
  const std::string serve = "cd " + debian.string() + " && python3 -m http.server " + std::to_string(port) +
                            " --bind 127.0.0.1 > " + (dir / "http.log").string() + " 2>&1 & echo $! > " + pidfile.string();
  ASSERT_EQ(std::system(serve.c_str()), 0);
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  for (int i = 0; i < 100 && std::system(("curl -sf -o /dev/null " + url + "/").c_str()) != 0; ++i) usleep(100000);
  r = run("data fetch fashion-mnist --data-dir " + (dir / "fm").string() + " --base-url " + url);
  int pid = 0;
  std::ifstream(pidfile) >> pid;
  if (pid > 0) kill(pid, SIGTERM);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "(from " + url + ")");
  EXPECT_HAS(r.out, "downloaded");
  EXPECT_TRUE(fs::exists(dir / "fm" / "t10k-labels-idx1-ubyte.gz"));
}

// Item 16: the zoo in --help, a batch larger than a limited training set trains (one smaller
// batch), "1 epoch", and predict says when an image looks unlike the training data (--invert).
TEST_F(Cli, NewcomerDefaultsAndPredictOnUnlikeImages) {
  Result r = run("train --help");
  EXPECT_EQ(r.code, 0);
  EXPECT_HAS(r.out, "lenet5, mnistnet");
  r = run("train --model lenet5 --data-dir " + data.string() + " --epochs 1 --batch-size 128 --threads 2 --limit-train 100 "
          "--limit-test 32 --run-dir " + (dir / "run").string());
  ASSERT_EQ(r.code, 0) << r.out;
  // 100 samples less the validation split's 10 (one of each class).
  EXPECT_HAS(r.out, "--batch-size 128 is larger than the training set (90 samples): each epoch is one batch of 90");
  EXPECT_HAS(r.out, "1 epoch x 1 step (batch 128)");
  EXPECT_FALSE(has(r.out, "1 epochs")) << r.out;
  r = run("eval " + (dir / "run").string() + " --limit-test 1");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "(1 sample)");
  // White-on-black like the training data; the same picture black-on-white; a colour picture.
  std::vector<unsigned char> px(40 * 40), inv(40 * 40), rgb(40 * 40 * 3);
  for (int i = 0; i < 40 * 40; ++i) {
    px[size_t(i)] = (i / 40) / 4 == 3 ? 230 : 10;
    inv[size_t(i)] = uint8_t(255 - px[size_t(i)]);
    rgb[size_t(3 * i)] = 220, rgb[size_t(3 * i + 1)] = uint8_t(40 + i % 40), rgb[size_t(3 * i + 2)] = 30;
  }
  ASSERT_NE(stbi_write_png((dir / "band.png").c_str(), 40, 40, 1, px.data(), 40), 0);
  ASSERT_NE(stbi_write_png((dir / "inverted.png").c_str(), 40, 40, 1, inv.data(), 40), 0);
  ASSERT_NE(stbi_write_png((dir / "colour.png").c_str(), 40, 40, 3, rgb.data(), 40 * 3), 0);
  const std::string pred = "predict " + (dir / "run").string() + " --data-dir " + data.string() + " ";
  r = run(pred + (dir / "band.png").string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_FALSE(has(r.out, "looks unlike")) << r.out;
  r = run(pred + (dir / "inverted.png").string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "inverted.png looks unlike the images the model was trained on: its background is light");
  EXPECT_HAS(r.out, "try --invert");
  r = run(pred + (dir / "inverted.png").string() + " --invert");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_FALSE(has(r.out, "looks unlike")) << r.out;
  EXPECT_HAS(r.out, "inverted.png (1x28x28 as fashion-mnist, inverted)");
  r = run(pred + (dir / "colour.png").string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "it is a colour image and fashion-mnist is greyscale");
}

// Item 17: bench matmul without a GPU says it runs on the CPU (and why no GPU); a size too large
// names --sizes (not --batch-size); bench bandwidth --json prints JSON with the reason.
TEST_F(Cli, BenchMessagesWithoutAGpu) {
  Result r = run("bench matmul --sizes 1000000");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "--sizes 1000000");
  EXPECT_HAS(r.out, "use smaller --sizes");
  EXPECT_FALSE(has(r.out, "--batch-size")) << r.out;
  if (ember::cuda::device_count() > 0) GTEST_SKIP() << "this machine has a GPU";
  r = run("bench matmul --sizes 64 --threads 2 --min-time 0 --repeats 1 --max-warmup-time 0");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "float32 on the CPU only");
  EXPECT_HAS(r.out, "no CUDA device: ");
  EXPECT_FALSE(has(r.out, "on the GPU")) << r.out;
  r = run_stdout("bench bandwidth --json");
  EXPECT_EQ(r.code, 1) << r.out;
  nlohmann::json j;
  ASSERT_NO_THROW(j = nlohmann::json::parse(r.out)) << r.out;
  EXPECT_TRUE(j["results"].empty());
  EXPECT_NE(j["gpu"].get<std::string>().find("no CUDA device"), std::string::npos);
}

// Issue 48 item 9: --verbose as Keras's fit(verbose=): 0 prints neither the banner nor the epoch
// lines (the result still), 2 the banner and the epoch lines; a bad value names the choices.
TEST_F(Cli, VerboseIsKerasFitsVerbose) {
  auto r = run(tiny("quiet") + " --verbose 0");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_LACKS(r.out, "device     ");
  EXPECT_LACKS(r.out, "samples/s");
  EXPECT_HAS(r.out, "test accuracy:");
  r = run(tiny("epochs") + " --verbose 2");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "device     ");
  EXPECT_HAS(r.out, "samples/s");
  r = run(tiny("bad") + " --verbose 3");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "--verbose");
}
