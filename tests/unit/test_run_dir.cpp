// Run-directory safety in the library: the run lock, a created directory removed again unless
// kept, finding the resume point of a path, typed manifest fields, and optimizer state that lacks
// a buffer (issue 15, items 1-4, 8, 14).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ember/ember.h"
#include "ember/io/run_dir.h"
#include "ember/train/checkpoint.h"
#include "ember/train/resume.h"
#include "ember/train/run_dir.h"
#include "ember/train/settings.h"
#include "io/json_fields.h"
#include "support/files.h"

using namespace ember;
namespace fs = std::filesystem;

namespace {
using test::message_of;
using test::TempDir;

// A run directory with checkpoints at steps 3 (best) and 5 (latest).
fs::path make_run(const fs::path& root) {
  const fs::path run = root / "runs" / "r1";
  train::CheckpointManifest m;
  m.config_json = R"({"lr":0.01})";
  m.step = 3;
  train::save_checkpoint(run / "checkpoints", "best", m, {{"model/w", zeros({2})}});
  m.step = 5;
  train::save_checkpoint(run / "checkpoints", "latest", m, {{"model/w", ones({2})}});
  return run;
}
}  // namespace

TEST(RunDir, LockIsExclusiveNamesTheOwnerAndIsReleased) {
  TempDir d("rundir");
  {
    io::RunDirLock first(d.path());
    EXPECT_TRUE(fs::exists(d.path() / ".lock"));
    // flock locks belong to an open file, so a second open in this process conflicts like a
    // second process would.
    try {
      io::RunDirLock second(d.path());
      FAIL() << "a second lock was granted";
    } catch (const io::RunDirInUse& e) {
      EXPECT_NE(std::string(e.what()).find("(pid " + std::to_string(::getpid()) + ")"), std::string::npos) << e.what();
      EXPECT_NE(e.hint().find("kill " + std::to_string(::getpid())), std::string::npos) << e.hint();
    }
  }
  EXPECT_FALSE(fs::exists(d.path() / ".lock")) << "release removes the lock file";
  // A lock file left by a process that died (nobody holds the flock) does not block.
  std::ofstream(d.path() / ".lock") << "999999\n";
  io::RunDirLock again(d.path());
  std::ifstream f(d.path() / ".lock");
  std::string pid;
  f >> pid;
  EXPECT_EQ(pid, std::to_string(::getpid()));
}

TEST(RunDir, NewRunDirRemovesWhatItCreatedUnlessKept) {
  TempDir d("rundir");
  {
    io::NewRunDir nd(d.path() / "a" / "b" / "run");
    EXPECT_TRUE(nd.created());
    EXPECT_TRUE(fs::is_directory(d.path() / "a" / "b" / "run"));
    std::ofstream(d.path() / "a" / "b" / "run" / "config.json") << "{}";
  }
  EXPECT_FALSE(fs::exists(d.path() / "a")) << "the topmost directory it created is removed";
  {
    io::NewRunDir nd(d.path() / "kept");
    nd.keep();
  }
  EXPECT_TRUE(fs::is_directory(d.path() / "kept"));
  std::ofstream(d.path() / "kept" / "mine.txt") << "x";
  {
    io::NewRunDir nd(d.path() / "kept");  // existed: never removed
    EXPECT_FALSE(nd.created());
  }
  EXPECT_TRUE(fs::exists(d.path() / "kept" / "mine.txt"));
  EXPECT_THROW(io::NewRunDir(fs::path("/proc/ember-cannot-write-here")), IOError);
}

TEST(RunDir, ResumePointAcceptsTheRunItsCheckpointsAndNamedWeights) {
  TempDir d("rundir");
  const fs::path run = make_run(d.path());
  const fs::path ckd = run / "checkpoints";
  for (const fs::path& p : {run, fs::path(run.string() + "/"), ckd, ckd / "latest.json"}) {
    train::ResumePoint rp = train::find_resume_point(p);
    EXPECT_TRUE(fs::equivalent(rp.run_dir, run)) << p;
    EXPECT_EQ(rp.manifest.filename(), "latest.json") << p;
  }
  EXPECT_EQ(train::find_resume_point(ckd / "best.json").manifest.filename(), "best.json");
  // A weights file resumes through the manifest that names it.
  EXPECT_EQ(train::find_resume_point(ckd / "step-000000005.safetensors").manifest.filename(), "latest.json");
  EXPECT_EQ(train::find_resume_point(ckd / "step-000000003.safetensors").manifest.filename(), "best.json");
  // Refused: weights no manifest names, files outside a run, a directory that is not a run.
  fs::copy_file(ckd / "step-000000005.safetensors", ckd / "step-000000004.safetensors");
  EXPECT_NE(message_of([&] { train::find_resume_point(ckd / "step-000000004.safetensors"); })
                .find("no checkpoint manifest"),
            std::string::npos);
  EXPECT_THROW(train::find_resume_point(ckd / "step-000000004.safetensors"), ValueError);
  fs::copy_file(ckd / "latest.json", d.path() / "loose.json");
  EXPECT_THROW(train::find_resume_point(d.path() / "loose.json"), ValueError);
  EXPECT_THROW(train::find_resume_point(d.path()), ValueError);
  EXPECT_THROW(train::find_resume_point(d.path() / "nothing"), IOError);
  fs::create_directories(d.path() / "runs" / "empty" / "checkpoints");
  EXPECT_THROW(train::find_resume_point(d.path() / "runs" / "empty"), IOError);  // no checkpoint yet
  EXPECT_EQ(train::run_dir_of(ckd / "step-000000005.safetensors"), ckd.parent_path());
  EXPECT_FALSE(train::run_dir_of(d.path() / "loose.json").has_value());
}

TEST(RunDir, SpecModelsResolveToTheRunsCopy) {
  TempDir d("rundir");
  EXPECT_EQ(train::spec_copy_name("/abs/path/my_net.toml"), "my_net.toml");
  EXPECT_EQ(train::spec_copy_name("rel/my_net.toml"), "my_net.toml");
  EXPECT_EQ(train::run_model("lenet5", d.path()), "lenet5");
  EXPECT_EQ(train::run_model("my_net.toml", d.path()), "my_net.toml");  // no copy: as recorded
  std::ofstream(d.path() / "my_net.toml") << "";
  EXPECT_EQ(train::run_model("my_net.toml", d.path()), (d.path() / "my_net.toml").string());
  EXPECT_EQ(train::run_model("old/rel/my_net.toml", d.path()), "old/rel/my_net.toml");  // runs before the copy
}

TEST(RunDir, TypedJsonFieldsNameKeyTypeAndFile) {
  const nlohmann::json j = nlohmann::json::parse(R"({"a": "x", "b": -1, "c": 1.5, "d": 1e30, "e": 7, "f": true})");
  auto msg = [&](auto f) { return message_of(f); };
  EXPECT_EQ(msg([&] { io::json_get<int64_t>(j, "a", "manifest 'm.json'", ""); }),
            "manifest 'm.json': \"a\" must be an integer, it is the string \"x\"");
  EXPECT_EQ(msg([&] { io::json_get<uint64_t>(j, "b", "F", ""); }),
            "F: \"b\" must be a non-negative integer, it is the number -1");
  EXPECT_EQ(msg([&] { io::json_get<int64_t>(j, "c", "F", ""); }), "F: \"c\" must be an integer, it is the number 1.5");
  EXPECT_THROW(io::json_get<int64_t>(j, "d", "F", ""), FormatError);  // no silent truncation
  EXPECT_THROW(io::json_get<int>(nlohmann::json::parse(R"({"n": 5000000000})"), "n", "F", ""), FormatError);
  EXPECT_EQ(msg([&] { io::json_get<double>(j, "f", "F", "", "config.f"); }),
            "F: \"config.f\" must be a number, it is the boolean true");
  EXPECT_EQ(msg([&] { io::json_get<std::string>(j, "zz", "F", ""); }), "F: the key \"zz\" is missing");
  EXPECT_EQ(io::json_get<int64_t>(j, "e", "F", ""), 7);
  EXPECT_EQ(io::json_get<double>(j, "e", "F", ""), 7.0);
  EXPECT_EQ(io::json_get_or<int64_t>(j, "zz", 3, "F", ""), 3);
}

TEST(RunDir, WrongTypedManifestNamesTheKey) {
  train::CheckpointManifest m;
  m.weights = "step-000000001.safetensors";
  nlohmann::json j = nlohmann::json::parse(train::manifest_to_json(m));
  j["epoch"] = "one";
  try {
    train::manifest_from_json(j.dump(), "runs/x/checkpoints/latest.json");
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_STREQ(e.what(),
                 "checkpoint manifest 'runs/x/checkpoints/latest.json': \"epoch\" must be an integer, it is the "
                 "string \"one\"");
  }
  j["epoch"] = 1;
  j["rng"]["seed"] = -4;
  EXPECT_NE(message_of([&] { train::manifest_from_json(j.dump(), "m"); }).find("\"rng.seed\" must be a non-negative"),
            std::string::npos);
}

TEST(RunDir, OptimizerStateMissingABufferIsRefusedByName) {
  Tensor w = randn({3, 2}, {.requires_grad = true});
  optim::AdamW opt({w}, {.lr = 0.1});
  w.set_grad(ones({3, 2}));
  opt.step();
  StateDict sd = opt.state_dict();
  ASSERT_TRUE(sd.contains("state.0.exp_avg"));
  StateDict partial;
  for (const auto& [k, t] : sd)
    if (k != "state.0.exp_avg") partial.insert(k, t);
  optim::AdamW fresh({randn({3, 2}, {.requires_grad = true})}, {.lr = 0.1});
  try {
    fresh.load_state_dict(partial);
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("missing 'state.0.exp_avg'"), std::string::npos) << e.what();
  }
  // SGD with momentum needs its momentum buffer too; without momentum it has none.
  Tensor v = randn({4}, {.requires_grad = true});
  optim::SGD sgd({v}, {.lr = 0.1, .momentum = 0.9});
  v.set_grad(ones({4}));
  sgd.step();
  StateDict s2;
  for (const auto& [k, t] : sgd.state_dict())
    if (k != "state.0.momentum_buffer") s2.insert(k, t);
  optim::SGD sgd2({randn({4}, {.requires_grad = true})}, {.lr = 0.1, .momentum = 0.9});
  EXPECT_THROW(sgd2.load_state_dict(s2), ValueError);
  optim::SGD plain({randn({4}, {.requires_grad = true})}, {.lr = 0.1});
  optim::SGD plain2({randn({4}, {.requires_grad = true})}, {.lr = 0.1});
  plain.param_groups()[0].params[0].set_grad(ones({4}));
  plain.step();
  EXPECT_NO_THROW(plain2.load_state_dict(plain.state_dict()));
}

// Issue 48, item 1: every run gets its own directory. A generated name whose directory exists
// (two runs started in the same second) is numbered like Lightning's version_N; a name or a
// directory the caller gave that holds a run is refused, with the hint in the caller's words.
TEST(RunDir, GeneratedNamesAreNumberedAndGivenOnesRefusedInTheCallersWords) {
  TempDir dir("run_dir_names");
  const fs::path old = fs::current_path();
  fs::current_path(dir.path());
  struct Back {
    fs::path to;
    ~Back() { fs::current_path(to); }
  } back{old};
  fs::create_directories("runs/net-data-20261204-090435/checkpoints");
  std::ofstream("runs/net-data-20261204-090435/checkpoints/latest.json") << "{}";
  fs::create_directories("runs/net-data-20261204-090435-2");  // a run starting there (no checkpoint yet)
  std::string name;
  EXPECT_EQ(train::new_run_dir(name, "", "net-data-20261204-090435"), fs::path("runs/net-data-20261204-090435-3"));
  EXPECT_EQ(name, "net-data-20261204-090435-3");
  name.clear();
  EXPECT_EQ(train::new_run_dir(name, "", "net-data-20261204-090436"), fs::path("runs/net-data-20261204-090436"));

  name = "net-data-20261204-090435";  // given: refused, never renamed behind the caller's back
  auto refusal = [&](train::FrontEnd front_end) -> std::string {
    try {
      train::new_run_dir(name, "", "ignored", front_end);
    } catch (const train::SettingError& e) {
      return std::string(e.what()) + "\nhint: " + e.hint();
    }
    return "<no SettingError>";
  };
  const std::string cli = refusal(train::FrontEnd::Cli);
  EXPECT_NE(cli.find("already holds a run"), std::string::npos) << cli;
  EXPECT_NE(cli.find("ember train --resume runs/net-data-20261204-090435"), std::string::npos) << cli;
  EXPECT_NE(cli.find("--name or --run-dir"), std::string::npos) << cli;
  const std::string py = refusal(train::FrontEnd::Python);
  EXPECT_NE(py.find("ember.fit(resume=\"runs/net-data-20261204-090435\")"), std::string::npos) << py;
  EXPECT_NE(py.find("name= or run_dir="), std::string::npos) << py;
  EXPECT_EQ(py.find("--name"), std::string::npos) << py;
}
