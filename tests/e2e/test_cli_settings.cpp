// End-to-end tests of `ember train`'s settings table (ember/train/settings.h) through the real
// binary: the new flags (--accumulate, --val-split, --early-stop, --device-resident) checked,
// shown and recorded; --config TOML files with a [train] table; resumed manifests whose values
// the flags would refuse (exit 2 with the flag's message, never a crash or a JSON exception).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "e2e_util.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

using e2e::Result;
using e2e::run;

class CliSettings : public e2e::Fixture {};

json read_json(const fs::path& p) { return json::parse(e2e::read_text(p)); }
void write_json(const fs::path& p, const json& j) { std::ofstream(p) << j.dump(2); }

// Every file of a run directory with its bytes: "nothing was written" is an equality.
std::map<std::string, std::string> snapshot(const fs::path& root) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.is_regular_file()) out[fs::relative(e.path(), root).string()] = e2e::read_text(e.path());
  return out;
}

}  // namespace

TEST_F(CliSettings, NewFlagsAreCheckedLikeEveryFlag) {
  struct Case {
    std::string args, piece;
  };
  const Case cases[] = {
      {"--accumulate 0", "--accumulate must be at least 1 (got 0)"},
      {"--accumulate 1.5", "--accumulate must be a whole number"},
      {"--val-split 1", "--val-split must be at least 0 and less than 1 (got 1)"},
      {"--val-split nan", "--val-split must be a finite number"},
      {"--early-stop -1", "--early-stop must be at least 0 (got -1)"},
      {"--optimizer adamm", "did you mean adam?"},
      {"--schedule linear", "--schedule must be none, step, cosine or onecycle (got 'linear')"},
  };
  for (const Case& c : cases) {
    Result r = run(tiny("bad") + " " + c.args);
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.out;
    EXPECT_HAS(r.out, c.piece);
    EXPECT_FALSE(fs::exists(dir / "bad")) << c.args;
  }
  Result r = run("train --help");
  EXPECT_HAS(r.out, "--accumulate");
  EXPECT_HAS(r.out, "--val-split FLOAT:in [0, 1)=0.1");
  EXPECT_HAS(r.out, "{sgd,adam,adamw,adadelta,adagrad,rmsprop}");
  EXPECT_HAS(r.out, "onecycle (warm up to --lr");
}

// The banner says what the new settings do; config.json records them; a resume adopts the run's
// own (a different --val-split is ignored with a warning) and may change --early-stop.
TEST_F(CliSettings, NewSettingsAreShownRecordedAndResumed) {
  Result r = run(tiny("run") + " --epochs 2 --accumulate 2 --val-split 0.25 --early-stop 3 --device-resident "
                 "--schedule cosine --stop-after-steps 2");
  ASSERT_EQ(r.code, 130) << r.out;
  EXPECT_HAS(r.out, "(batch 32 x 2 accumulated = 64)");
  EXPECT_HAS(r.out, "validation 25% of the training set, seeded: 66 samples");
  EXPECT_HAS(r.out, "early stop after 3 epochs without a better validation accuracy");
  EXPECT_HAS(r.out, "the whole dataset uploaded to cpu once (--device-resident)");
  EXPECT_HAS(r.out, "data       fashion-mnist: 256 train, 64 test");
  json cfg = read_json(dir / "run" / "config.json");
  EXPECT_EQ(cfg["accumulate"], 2);
  EXPECT_EQ(cfg["val_split"], 0.25);
  EXPECT_EQ(cfg["early_stop_patience"], 3);
  EXPECT_EQ(cfg["device_resident"], true);
  r = run("train --resume " + (dir / "run").string() + " --val-split 0.5 --early-stop 1 --stop-after-steps 3");
  ASSERT_EQ(r.code, 130) << r.out;
  EXPECT_HAS(r.out, "--val-split is ignored with --resume: the run was started with val_split = 0.25");
  EXPECT_HAS(r.out, "validation 25% of the training set, seeded: 66 samples");
  EXPECT_HAS(r.out, "early stop after 1 epoch without a better validation accuracy");
  cfg = read_json(dir / "run" / "config.json");
  EXPECT_EQ(cfg["val_split"], 0.25);
  EXPECT_EQ(cfg["early_stop_patience"], 1);
  // --val-split 0: no validation set, as before the flag existed.
  r = run(tiny("plain") + " --val-split 0");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "validation none (--val-split 0)");
  EXPECT_HAS(r.out, "train loss  train acc  test loss");
  // A run with validation shows its columns beside the test set's, in the report too.
  r = run(tiny("val"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "validation 10% of the training set, seeded: 30 samples");
  EXPECT_HAS(r.out, "train            val             test");
  const std::string html = e2e::read_text(dir / "val" / "report.html");
  EXPECT_HAS(html, "<th>val acc</th>");
  EXPECT_HAS(html, "<th>test acc</th>");
  EXPECT_HAS(html, "<th>val_split</th><td>0.1</td>");
}

// A run from before --val-split and --accumulate resumes as it was trained: no validation split,
// one micro-batch per step (not today's defaults).
TEST_F(CliSettings, OldRunsResumeWithoutTheNewSettings) {
  ASSERT_EQ(run(tiny("old") + " --epochs 2 --val-split 0 --stop-after-steps 3").code, 130);
  const fs::path manifest = dir / "old" / "checkpoints" / "latest.json";
  json m = read_json(manifest);
  for (const char* k : {"val_split", "accumulate", "early_stop_patience", "device_resident"}) m["config"].erase(k);
  write_json(manifest, m);
  Result r = run("train --resume " + (dir / "old").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "validation none (the run was started without one)");  // no flag was given (issue 22)
  EXPECT_HAS(r.out, "(batch 32)");
}

TEST_F(CliSettings, ConfigFileWithATrainTableAndFlagsOverridingIt) {
  std::ofstream(dir / "cfg.toml") << "# ember train settings\n"
                                     "name = \"from-config\"\n"
                                     "[train]\n"
                                     "epochs = 3\n"
                                     "batch-size = 64\n"
                                     "learning_rate = 0.002\n"
                                     "optimizer = \"sgd\"\n"
                                     "val_split = 0.2\n"
                                     "threads = 2\n"
                                     "data-dir = \"" + data.string() + "\"\n";
  Result r = run("train --config " + (dir / "cfg.toml").string() + " --epochs 1 --run-dir " + (dir / "c").string());
  ASSERT_EQ(r.code, 0) << r.out;
  json cfg = read_json(dir / "c" / "config.json");
  EXPECT_EQ(cfg["epochs"], 1);  // the flag wins
  EXPECT_EQ(cfg["batch_size"], 64);
  EXPECT_EQ(cfg["lr"], 0.002);
  EXPECT_EQ(cfg["optimizer"], "sgd");
  EXPECT_EQ(cfg["val_split"], 0.2);
  EXPECT_EQ(cfg["name"], "from-config");
  // An inline table is the same [train] table.
  std::ofstream(dir / "inline.toml") << "train = { epochs = 1, batch_size = 32, threads = 2, data_dir = \"" +
                                            data.string() + "\" }\n";
  r = run("train --config " + (dir / "inline.toml").string() + " --run-dir " + (dir / "i").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(read_json(dir / "i" / "config.json")["batch_size"], 32);

  // Mistakes: the file and line, the key, the expected type; exit 2 and nothing written.
  struct Case {
    std::string text, piece;
  };
  const std::string at = "config file '" + (dir / "bad.toml").string() + "', line ";
  const Case cases[] = {
      {"[train]\nepochs = 1\nbatch_sise = 32\n", at + "3: unknown setting \"train.batch_sise\"; did you mean batch_size?"},
      {"[train]\nepochs = \"1\"\n", at + "2: \"train.epochs\" must be an integer, it is the string \"1\""},
      {"[train]\nlr = [0.1, 0.01]\n", at + "2: \"train.lr\" must be a number, it is an array"},
      {"optimizer = { name = \"sgd\" }\n", at + "1: \"optimizer\" must be a string, it is a table"},
      {"[train]\nbatch_size = 0\n", at + "2: train.batch_size = 0: --batch-size must be at least 1 (got 0)"},
      {"lr = nan\n", "--lr must be a finite number"},
      {"[trian]\nepochs = 1\n", "did you mean [train]?"},
      {"epochs = \n", "not valid TOML"},
  };
  for (const Case& c : cases) {
    std::ofstream(dir / "bad.toml") << c.text;
    r = run(tiny("bad") + " --config " + (dir / "bad.toml").string());
    EXPECT_EQ(r.code, 2) << c.text << "\n" << r.out;
    EXPECT_HAS(r.out, c.piece);
    EXPECT_EQ(r.out.find("arguments were not expected"), std::string::npos) << r.out;
    EXPECT_FALSE(fs::exists(dir / "bad")) << c.text;
  }
}

// Issue 11: values a flag refuses, found in a resumed manifest, used to crash the run (batch_size
// 0: SIGFPE; threads 100000: SIGSEGV) or print "internal error: [json.exception.type_error.302]".
// Each is now the flag's message naming the manifest, exit 2, with the run directory untouched.
TEST_F(CliSettings, ResumingAManifestWithBadValuesIsAUsageError) {
  ASSERT_EQ(run(tiny("run") + " --epochs 2 --stop-after-steps 3").code, 130);
  const fs::path manifest = dir / "run" / "checkpoints" / "latest.json";
  const json good = read_json(manifest);
  struct Case {
    const char* key;
    json value;
    const char* piece;
  };
  const Case cases[] = {
      {"batch_size", 0, "--batch-size must be at least 1 (got 0)"},
      {"threads", 100000, "--threads must be between 0 and 1024 (got 100000)"},
      {"batch_size", "abc", "\"config.batch_size\" must be an integer, it is the string \"abc\""},
      {"accumulate", 0, "--accumulate must be at least 1 (got 0)"},
      {"val_split", 2.0, "--val-split must be at least 0 and less than 1 (got 2)"},
      {"optimizer", "rmsprop2", "--optimizer must be sgd, adam, adamw, adadelta, adagrad or rmsprop (got 'rmsprop2'); did you mean rmsprop?"},
  };
  for (const Case& c : cases) {
    json edited = good;
    edited["config"][c.key] = c.value;
    write_json(manifest, edited);
    const auto before = snapshot(dir / "run");
    Result r = run("train --resume " + (dir / "run").string());
    EXPECT_EQ(r.code, 2) << c.key << " = " << c.value << "\n" << r.out;
    EXPECT_HAS(r.out, c.piece);
    EXPECT_HAS(r.out, "checkpoint manifest '" + manifest.string() + "'");
    EXPECT_EQ(r.out.find("internal error"), std::string::npos) << r.out;
    EXPECT_TRUE(snapshot(dir / "run") == before) << c.key << ": the run directory was changed";
  }
}

// --precision: fp16 is refused on the CPU with the reason; bf16 runs under autocast where the CPU
// has AMX-BF16 or AVX512-BF16 and is refused (exit 2, nothing written) where it has not; auto says
// which it chose and why; config.json records the setting and a resume keeps it.
TEST_F(CliSettings, PrecisionIsChosenForTheDeviceRecordedAndResumed) {
  Result r = run(tiny("fp16") + " --precision fp16 --device cpu");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "--precision fp16: float16 is a GPU mode");
  EXPECT_FALSE(fs::exists(dir / "fp16"));

  r = run(tiny("auto") + " --precision auto --stop-after-steps 2");
  ASSERT_EQ(r.code, 130) << r.out;
  const bool bf16 = r.out.find("precision  bf16 autocast") != std::string::npos;
  if (!bf16) EXPECT_HAS(r.out, "precision  fp32\n           auto: ");
  EXPECT_EQ(read_json(dir / "auto" / "config.json")["precision"], "auto");

  r = run(tiny("bf16") + " --precision bf16 --epochs 2 --stop-after-steps 3");
  // auto may keep fp32 where bf16 runs but slower (an Intel CPU's AVX512-BF16 without AMX); only a
  // CPU without bf16 hardware refuses --precision bf16.
  if (r.code == 2) {
    EXPECT_FALSE(bf16) << "auto chose bf16 where --precision bf16 is refused";
    EXPECT_HAS(r.out, "does not run bfloat16 in hardware");
    EXPECT_FALSE(fs::exists(dir / "bf16"));
    GTEST_SKIP() << "this CPU has no bf16 hardware (no AMX-BF16 or AVX512-BF16): the bf16 run itself is not tested here";
  }
  ASSERT_EQ(r.code, 130) << r.out;
  EXPECT_HAS(r.out, "precision  bf16 autocast (float32 weights and gradients)");
  EXPECT_EQ(read_json(dir / "bf16" / "config.json")["precision"], "bf16");
  r = run("train --resume " + (dir / "bf16").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "precision  bf16 autocast");
  EXPECT_HAS(r.out, "test accuracy:");

  // The bf16-trained run evaluates in fp32 and in bf16 (its checkpoint holds float32 weights).
  r = run("eval " + (dir / "bf16").string() + " --json --precision fp32");
  ASSERT_EQ(r.code, 0) << r.out;
  const json as_fp32 = json::parse(r.out.substr(r.out.find('{')));
  EXPECT_EQ(as_fp32["precision"], "fp32");
  r = run("eval " + (dir / "bf16").string() + " --json --precision bf16");
  ASSERT_EQ(r.code, 0) << r.out;
  const json as_bf16 = json::parse(r.out.substr(r.out.find('{')));
  EXPECT_EQ(as_bf16["precision"], "bf16");
  EXPECT_NEAR(as_bf16["accuracy"].get<double>(), as_fp32["accuracy"].get<double>(), 0.05);  // bf16 rounding, 64 images
}

// --accumulate with the default one-cycle schedule: the schedule is sized in optimizer steps, so a
// run with accumulation reaches its end (stepping one-cycle past its total throws).
TEST_F(CliSettings, AccumulationRunsTheWholeOneCycleSchedule) {
  Result r = run(tiny("acc") + " --epochs 2 --accumulate 3 --schedule onecycle");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "(batch 32 x 3 accumulated = 96)");
  EXPECT_HAS(r.out, "test accuracy:");
}

// Out of memory inside a step (a memory cap on the caching allocator, EMBER_MEMORY_CAP, makes the
// CPU raise what a full GPU would): the micro-batch halves and accumulation keeps the samples per
// optimizer step; the run says so once, records it in metrics.jsonl and the report, and finishes.
// A cap that is not a byte count is refused with the reason.
TEST_F(CliSettings, OutOfMemoryHalvesTheMicroBatchAndSaysSo) {
  Result r = run(tiny("oom") + " --batch-size 128 --val-split 0", "EMBER_MEMORY_CAP=6M ");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "out of memory at micro-batch 128: continuing with micro-batches of 64 x accumulate 2");
  EXPECT_HAS(r.out, "test accuracy:");
  const std::string metrics = e2e::read_text(dir / "oom" / "metrics.jsonl");
  EXPECT_HAS(metrics, R"("kind":"oom")");
  EXPECT_HAS(metrics, R"("previous_micro_batch":128.0)");
  EXPECT_HAS(e2e::read_text(dir / "oom" / "report.html"), "<th>out of memory</th><td>micro-batch 128 -&gt; 64 x accumulate 2");

  r = run(tiny("badcap"), "EMBER_MEMORY_CAP=banana ");
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "EMBER_MEMORY_CAP = 'banana' is not a byte count");
}

// With oneDNN capped below AMX, an AMX CPU runs bf16 as an Intel CPU with AVX512-BF16 alone does,
// measured slower than fp32 (docs/benchmarks.md): auto keeps fp32 and says why; --precision bf16
// still runs.
TEST_F(CliSettings, AutoKeepsFp32WhereBf16IsSlower) {
  const std::string capped = "ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16 ";
  Result r = run(tiny("capped") + " --precision auto --stop-after-steps 2", capped);
  ASSERT_EQ(r.code, 130) << r.out;
  if (r.out.find("its AMX is not used") == std::string::npos)
    GTEST_SKIP() << "not an AMX-BF16 CPU, the cap changes nothing here:\n" << r.out.substr(0, 600);
  EXPECT_HAS(r.out, "precision  fp32\n           auto: AVX512-BF16 without AMX on ");
  EXPECT_HAS(r.out, "auto keeps fp32 (--precision bf16 runs it)");
  r = run(tiny("capped_bf16") + " --precision bf16 --stop-after-steps 2", capped);
  ASSERT_EQ(r.code, 130) << r.out;
  EXPECT_HAS(r.out, "precision  bf16 autocast (float32 weights and gradients)");
}

// With oneDNN capped below avx512_core_bf16 no bf16 instruction runs, on any CPU: auto keeps fp32
// and --precision bf16 is refused with the cap named (it once ran, "oneDNN's avx512_core_bf16
// kernels" in its banner, on oneDNN's AVX2 kernels and ember's im2col).
TEST_F(CliSettings, Bf16IsRefusedWhereOneDnnIsCappedBelowIt) {
  const std::string capped = "ONEDNN_MAX_CPU_ISA=AVX2 ";
  Result r = run(tiny("avx2_auto") + " --precision auto --stop-after-steps 2", capped);
  ASSERT_EQ(r.code, 130) << r.out;
  EXPECT_HAS(r.out, "precision  fp32\n           auto: ");
  r = run(tiny("avx2_bf16") + " --precision bf16 --stop-after-steps 2", capped);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "does not run bfloat16 in hardware");
  if (r.out.find("neither AVX512-BF16 nor AMX-BF16") == std::string::npos)  // a CPU with bf16 hardware
    EXPECT_HAS(r.out, "capped below avx512_core_bf16");
}

// The default recipe flips images (--hflip 0.5); a new MNIST run does not flip digits unless asked,
// and says so; a flag given is kept.
TEST_F(CliSettings, DigitsAreNotFlippedByDefault) {
  Result r = run(tiny("digits") + " --data mnist --stop-after-steps 1");
  ASSERT_EQ(r.code, 130) << r.out;
  EXPECT_HAS(r.out, "no augmentation");
  EXPECT_HAS(r.out, "no flips for digits");
  EXPECT_EQ(read_json(dir / "digits" / "config.json")["hflip"], 0.0);
  r = run(tiny("digits_flipped") + " --data mnist --hflip 0.5 --stop-after-steps 1");
  ASSERT_EQ(r.code, 130) << r.out;
  EXPECT_HAS(r.out, "horizontal flip p 0.5");
  r = run(tiny("clothes") + " --stop-after-steps 1");
  ASSERT_EQ(r.code, 130) << r.out;
  EXPECT_HAS(r.out, "horizontal flip p 0.5");
}

// eval and predict --precision: bf16 evaluates under autocast (where the CPU has fast bf16; else
// refused with the reason, exit 2), and --json says which precision produced the numbers.
TEST_F(CliSettings, EvalAndPredictTakeAPrecision) {
  Result r = run(tiny("ev") + " --val-split 0");
  ASSERT_EQ(r.code, 0) << r.out;
  r = run("eval " + (dir / "ev").string() + " --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const json fp32 = json::parse(r.out.substr(r.out.find('{')));
  EXPECT_EQ(fp32["precision"], "fp32");
  r = run("eval " + (dir / "ev").string() + " --json --precision bf16");
  if (r.code == 2) {
    EXPECT_HAS(r.out, "does not run bfloat16 in hardware");
    GTEST_SKIP() << "this CPU has no bf16 hardware: bf16 evaluation not tested here";
  }
  ASSERT_EQ(r.code, 0) << r.out;
  const json bf16 = json::parse(r.out.substr(r.out.find('{')));
  EXPECT_EQ(bf16["precision"], "bf16");
  EXPECT_NEAR(bf16["accuracy"].get<double>(), fp32["accuracy"].get<double>(), 0.05);  // bf16 rounding, 64 images
  r = run("predict " + (dir / "ev").string() + " --index 0 --json --precision bf16");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, R"("precision": "bf16")");
}

// Issue 44: an empty run name is refused wherever it comes from (a flag, a --config file's
// `name = ""`), with one sentence; before, only the flag was, and the file's made the run
// directory runs/ itself.
TEST_F(CliSettings, AnEmptyRunNameIsRefusedFromAConfigFileToo) {
  std::ofstream(dir / "c.toml") << "name = \"\"\n";
  Result r = run("train --config " + (dir / "c.toml").string() + " --data-dir " + data.string() +
                 " --model lenet5 --epochs 1 --threads 2");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "the run name is empty");
  r = run(tiny("x") + " --name \"\"");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "the run name is empty");
}

// Issue 48, item 12: the README's `--device cuda --precision fp16` on a machine without a usable
// GPU falls back together — the CPU in fp32, with a warning for each — instead of falling back
// the device and then refusing fp16 (exit 2). `--device cpu --precision fp16` is still refused.
TEST_F(CliSettings, Fp16FallsBackWithTheDeviceOnAMachineWithoutAGpu) {
  Result probe = run(tiny("probe") + " --device cuda --epochs 1 --stop-after-steps 1");
  if (probe.out.find("falling back to the CPU") == std::string::npos) GTEST_SKIP() << "a GPU is usable here";
  Result r = run(tiny("fp16") + " --device cuda --precision fp16");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "falling back to the CPU");
  EXPECT_HAS(r.out, "--precision fp16 falls back with the device");
  EXPECT_HAS(r.out, "precision  fp32");
  EXPECT_EQ(read_json(dir / "fp16" / "config.json")["precision"], "fp16");  // as asked; the banner says what ran
  r = run(tiny("cpu16") + " --device cpu --precision fp16");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "float16 is a GPU mode");
}
