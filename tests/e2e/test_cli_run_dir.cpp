// End-to-end tests of run-directory safety (issue 15, items 1-4, 8, 14): one process owns a run
// directory, --resume continues only its own run and validates everything before writing, failed
// starts leave nothing behind, damaged checkpoints get clear messages, and a spec model's run keeps
// its spec. Each test works in its own scratch directory with a tiny dataset.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "e2e_util.h"
#include "ember/io/sha256.h"
#include "ember/io/safetensors.h"

extern char** environ;

namespace {
using namespace e2e;
using nlohmann::json;

class CliRunDir : public Fixture {};

// Every file under `root` with its content, to prove a command changed nothing.
std::map<std::string, std::string> snapshot(const fs::path& root) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.is_regular_file()) files[fs::relative(e.path(), root).string()] = read_text(e.path());
  return files;
}

json read_json(const fs::path& p) { return json::parse(read_text(p)); }
void write_json(const fs::path& p, const json& j) { std::ofstream(p) << j.dump(2); }

// Starts `ember args` in the background (output to `log`) and returns its pid.
pid_t spawn_ember(const std::string& args, const fs::path& log) {
  const std::string cmd = "exec " + ember_bin() + " " + args + " > " + log.string() + " 2>&1";
  const char* argv[] = {"/bin/sh", "-c", cmd.c_str(), nullptr};
  pid_t pid = -1;
  EXPECT_EQ(posix_spawn(&pid, "/bin/sh", nullptr, nullptr, const_cast<char**>(argv), environ), 0);
  return pid;
}

bool wait_for(const fs::path& p, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (fs::exists(p)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

const char* kSpec =
    "[[layer]]\ntype = \"conv2d\"\nout_channels = 4\nkernel_size = 3\n[[layer]]\ntype = \"relu\"\n"
    "[[layer]]\ntype = \"maxpool2d\"\nkernel_size = 2\n[[layer]]\ntype = \"flatten\"\n"
    "[[layer]]\ntype = \"linear\"\nout_features = \"classes\"\n";

}  // namespace

// Item 1: a second process is refused while the first owns the run directory (naming its pid);
// after the owner is killed with SIGKILL, its stale lock does not block a resume.
TEST_F(CliRunDir, OneProcessOwnsARunDirectoryAndAStaleLockIsRecovered) {
  const fs::path rd = dir / "run";
  const pid_t owner = spawn_ember(tiny("run") + " --epochs 1000", dir / "owner.log");
  ASSERT_GT(owner, 0);
  ASSERT_TRUE(wait_for(rd / "checkpoints" / "latest.json", 120)) << read_text(dir / "owner.log");

  Result r = run("train --resume " + rd.string() + " --epochs 1000");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "is in use by another process (pid " + std::to_string(owner) + ")");
  EXPECT_HAS(r.out, "hint:");
  r = run(tiny("run"));  // a fresh run there: refused too (the run exists, and it is owned)
  EXPECT_EQ(r.code, 2) << r.out;

  ASSERT_EQ(kill(owner, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(owner, &status, 0), owner);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_TRUE(fs::exists(rd / ".lock")) << "the killed owner's lock file should be left behind (stale)";
  const json latest = read_json(rd / "checkpoints" / "latest.json");
  const int64_t step = latest["step"];
  r = run("train --resume " + rd.string() + " --stop-after-steps " + std::to_string(step + 2));
  EXPECT_EQ(r.code, 130) << r.out;  // it took the run over and trained two more steps
  EXPECT_EQ(read_json(rd / "checkpoints" / "latest.json")["step"], step + 2);
  EXPECT_FALSE(fs::exists(rd / ".lock")) << "a run releases its lock when it ends";
}

// Item 1: two fresh runs started at once into one directory: one trains, the other is refused
// (exit 2), and the run left behind is wholly the winner's (config, checkpoints, eval).
TEST_F(CliRunDir, TwoRunsStartedAtOnceInOneDirectory) {
  pid_t pids[2];
  for (int i = 0; i < 2; ++i)
    pids[i] = spawn_ember(tiny("run") + " --epochs 2 --seed " + std::to_string(i + 1),
                          dir / ("run" + std::to_string(i) + ".log"));
  int codes[2];
  for (int i = 0; i < 2; ++i) {
    int status = 0;
    ASSERT_EQ(waitpid(pids[i], &status, 0), pids[i]);
    ASSERT_TRUE(WIFEXITED(status));
    codes[i] = WEXITSTATUS(status);
  }
  ASSERT_EQ(std::min(codes[0], codes[1]), 0) << read_text(dir / "run0.log") << read_text(dir / "run1.log");
  ASSERT_EQ(std::max(codes[0], codes[1]), 2) << read_text(dir / "run0.log") << read_text(dir / "run1.log");
  const int winner = codes[0] == 0 ? 0 : 1;
  const std::string refused = read_text(dir / ("run" + std::to_string(1 - winner) + ".log"));
  EXPECT_TRUE(refused.find("is in use by another process (pid " + std::to_string(pids[winner]) + ")") !=
                  std::string::npos ||
              refused.find("already holds a run") != std::string::npos)
      << refused;
  EXPECT_EQ(read_json(dir / "run" / "config.json")["seed"], winner + 1);
  EXPECT_EQ(read_json(dir / "run" / "checkpoints" / "latest.json")["step"], 16);
  Result r = run("eval " + (dir / "run").string() + " --data-dir " + data.string());
  EXPECT_EQ(r.code, 0) << r.out;
}

// Item 2: --resume A --run-dir B is refused and leaves B exactly as it was.
TEST_F(CliRunDir, ResumeIntoAnotherRunDirectoryIsRefusedAndChangesNothing) {
  ASSERT_EQ(run(tiny("a")).code, 0);
  ASSERT_EQ(run(tiny("b") + " --seed 7").code, 0);
  const auto b_before = snapshot(dir / "b");
  const auto a_before = snapshot(dir / "a");
  Result r = run("train --resume " + (dir / "a").string() + " --run-dir " + (dir / "b").string() + " --epochs 2");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "--run-dir names another directory");
  EXPECT_HAS(r.out, "cp -r");
  EXPECT_TRUE(snapshot(dir / "b") == b_before) << "B's files were changed";
  EXPECT_TRUE(snapshot(dir / "a") == a_before) << "A's files were changed";
  r = run("train --resume " + (dir / "a").string() + " --run-dir " + (dir / "new").string() + " --epochs 2");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_FALSE(fs::exists(dir / "new"));
  // Naming the run's own directory is fine.
  r = run("train --resume " + (dir / "a").string() + " --run-dir " + (dir / "a").string() + "/ --epochs 2");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(read_json(dir / "a" / "checkpoints" / "latest.json")["epoch"], 2);
}

// Item 3: a step-N.safetensors file resumes through the manifest that names it, with the run's
// settings and position: the result is bitwise the uninterrupted run's. Other files are refused.
TEST_F(CliRunDir, ResumeFromAWeightsFileUsesItsManifest) {
  const std::string common = "train --model lenet5 --data-dir " + data.string() +
                             " --epochs 2 --batch-size 32 --threads 2 --limit-test 32 --lr 0.002 --run-dir ";
  ASSERT_EQ(run(common + (dir / "straight").string()).code, 0);
  ASSERT_EQ(run(common + (dir / "cut").string() + " --stop-after-steps 5").code, 130);
  const fs::path weights = dir / "cut" / "checkpoints" / "step-000000005.safetensors";
  ASSERT_TRUE(fs::exists(weights));
  Result r = run("train --resume " + weights.string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "resuming at epoch 1, step 5");
  EXPECT_EQ(read_json(dir / "cut" / "config.json")["lr"], 0.002);
  EXPECT_EQ(read_json(dir / "straight" / "checkpoints" / "latest.json")["weights_sha256"],
            read_json(dir / "cut" / "checkpoints" / "latest.json")["weights_sha256"]);

  // A weights file that no manifest names any more, and files outside a run: refused, exit 2.
  const json latest = read_json(dir / "cut" / "checkpoints" / "latest.json");
  const fs::path orphan = dir / "cut" / "checkpoints" / "step-000000001.safetensors";
  fs::copy_file(dir / "cut" / "checkpoints" / latest["weights"].get<std::string>(), orphan);
  const auto before = snapshot(dir / "cut");
  r = run("train --resume " + orphan.string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "names 'step-000000001.safetensors'");
  fs::copy_file(orphan, dir / "loose.safetensors");
  fs::copy_file(dir / "cut" / "checkpoints" / "latest.json", dir / "loose.json");
  for (const char* f : {"loose.safetensors", "loose.json", "data/train-images-idx3-ubyte"}) {
    r = run("train --resume " + (dir / f).string());
    EXPECT_EQ(r.code, 2) << f << "\n" << r.out;
    EXPECT_HAS(r.out, "is not a checkpoint of a run");
  }
  r = run("train --resume " + data.string());  // a directory that is not a run
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(snapshot(dir / "cut") == before);
}

// Item 3: a resumed run's settings pass the flags' own validation before anything is written:
// values the flags refuse are usage errors (exit 2, not SIGFPE or SIGSEGV), and the run directory
// is left byte for byte as it was.
TEST_F(CliRunDir, BadSettingsInACheckpointAreRefusedBeforeAnyWrite) {
  ASSERT_EQ(run(tiny("run") + " --epochs 2 --stop-after-steps 5").code, 130);
  const fs::path manifest = dir / "run" / "checkpoints" / "latest.json";
  const json good = read_json(manifest);
  struct Case {
    const char* key;
    json value;
    const char* piece;
  };
  const Case cases[] = {
      {"batch_size", 0, "--batch-size"}, {"batch_size", -3, "--batch-size"}, {"threads", 100000, "--threads"},
      {"epochs", 0, "--epochs"},         {"lr", -1.0, "--lr"},               {"optimizer", "lbfgs", "--optimizer"},
      {"model", "nope", "--model"},      {"hflip", 2.0, "--hflip"},
  };
  for (const Case& c : cases) {
    json edited = good;
    edited["config"][c.key] = c.value;
    write_json(manifest, edited);
    const auto before = snapshot(dir / "run");
    Result r = run("train --resume " + (dir / "run").string());
    EXPECT_EQ(r.code, 2) << c.key << " = " << c.value << "\n" << r.out;
    EXPECT_HAS(r.out, c.piece);
    EXPECT_HAS(r.out, "latest.json");
    EXPECT_TRUE(snapshot(dir / "run") == before) << c.key << ": the run directory was changed";
  }
  // A run config that is missing: refused (its settings are unknown), exit 1.
  json edited = good;
  edited.erase("config");
  write_json(manifest, edited);
  Result r = run("train --resume " + (dir / "run").string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_HAS(r.out, "has no run config");
  // The good manifest resumes.
  write_json(manifest, good);
  r = run("train --resume " + (dir / "run").string());
  EXPECT_EQ(r.code, 0) << r.out;
}

// Item 8: a wrong-typed manifest value names the key, the type expected and the file.
TEST_F(CliRunDir, WrongTypedManifestValuesNameTheKeyTypeAndFile) {
  ASSERT_EQ(run(tiny("run") + " --epochs 2 --stop-after-steps 5").code, 130);
  const fs::path manifest = dir / "run" / "checkpoints" / "latest.json";
  const json good = read_json(manifest);
  struct Case {
    json patch;  // merged into the manifest
    const char* piece;
  };
  const Case cases[] = {
      {{{"config", {{"batch_size", "abc"}}}}, "\"config.batch_size\" must be an integer, it is the string \"abc\""},
      {{{"config", {{"lr", "fast"}}}}, "\"config.lr\" must be a number, it is the string \"fast\""},
      {{{"config", {{"seed", -1}}}}, "the run's seed = -1 is not a valid --seed: --seed must be at least 0 (got -1)"},
      {{{"config", {{"batch_size", 1.5}}}}, "\"config.batch_size\" must be an integer, it is the number 1.5"},
      {{{"step", "five"}}, "\"step\" must be an integer, it is the string \"five\""},
      {{{"rng", {{"offset", true}}}}, "\"rng.offset\" must be a non-negative integer, it is the boolean true"},
      {{{"threads", "2"}}, "\"threads\" must be an integer, it is the string \"2\""},
  };
  for (const Case& c : cases) {
    json edited = good;
    edited.merge_patch(c.patch);
    write_json(manifest, edited);
    const auto before = snapshot(dir / "run");
    for (std::string cmd : {"train --resume " + (dir / "run").string(), "eval " + (dir / "run").string()}) {
      if (cmd.starts_with("eval") && c.patch.contains("config")) continue;  // eval does not read the run config
      Result r = run(cmd);
      // A run setting is checked like its flag (a usage error, exit 2); the rest of the manifest
      // is the checkpoint's own state (a damaged file, exit 1).
      EXPECT_EQ(r.code, c.patch.contains("config") ? 2 : 1) << cmd << "\n" << c.patch << "\n" << r.out;
      EXPECT_HAS(r.out, c.piece);
      EXPECT_HAS(r.out, manifest.string());
      EXPECT_LACKS(r.out, "json.exception");
      EXPECT_LACKS(r.out, "internal error");
    }
    EXPECT_TRUE(snapshot(dir / "run") == before) << c.patch << ": the run directory was changed";
  }
}

// Item 8: a checkpoint missing one optimizer tensor names the tensor and the file (not
// "internal error: map::at"), and the run directory is left as it was.
TEST_F(CliRunDir, MissingOptimizerTensorNamesTheTensorAndTheFile) {
  ASSERT_EQ(run(tiny("run") + " --epochs 2 --stop-after-steps 5").code, 130);
  const fs::path manifest = dir / "run" / "checkpoints" / "latest.json";
  json m = read_json(manifest);
  const fs::path weights = dir / "run" / "checkpoints" / m["weights"].get<std::string>();
  ember::io::StFile file = ember::io::st_load(weights);
  const size_t n = file.tensors.size();
  std::erase_if(file.tensors, [](const ember::io::StTensor& t) { return t.name == "optim/state.0.exp_avg"; });
  ASSERT_EQ(file.tensors.size(), n - 1);
  std::vector<uint8_t> bytes = ember::io::st_serialize(file);
  std::ofstream(weights, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  m["weights_sha256"] = ember::io::sha256_hex(bytes);
  write_json(manifest, m);
  const auto before = snapshot(dir / "run");
  Result r = run("train --resume " + (dir / "run").string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_HAS(r.out, "state.0.exp_avg");
  EXPECT_HAS(r.out, weights.string());
  EXPECT_HAS(r.out, "hint:");
  EXPECT_LACKS(r.out, "map::at");
  EXPECT_LACKS(r.out, "internal error");
  EXPECT_TRUE(snapshot(dir / "run") == before) << "a failed resume changed the run directory";
}

// Item 4: starts that fail (a spec error, a missing spec or dataset, a crop larger than the images:
// the last fails after the data is loaded) leave no run directory, neither a given --run-dir (with
// its new parents) nor runs/<name>. (A batch larger than the set now trains one smaller batch.)
TEST_F(CliRunDir, FailedStartsLeaveNoRunDirectory) {
  std::ofstream(dir / "bad.toml") << "[[layer]]\ntype = \"conv2d\"\nout_channels = 4\nkernel_size = 3\n[[layer]]\n"
                                     "type = \"linear\"\nout_features = 10\n";
  const std::string d = " --data-dir " + data.string();
  struct Case {
    std::string args;
    int code;
  };
  const Case cases[] = {
      {"--model " + (dir / "bad.toml").string() + d, 2},  // a spec error: exit 2, as for a bad --config
      {"--model " + (dir / "missing.toml").string() + d, 1},
      {"--data-dir " + (dir / "nowhere").string(), 1},
      {"--crop-padding 40" + d, 2},
  };
  fs::create_directories(dir / "cwd");
  for (const Case& c : cases) {
    Result r = run("train --threads 2 --run-dir " + (dir / "new" / "nested").string() + " " + c.args);
    EXPECT_EQ(r.code, c.code) << c.args << "\n" << r.out;
    EXPECT_FALSE(fs::exists(dir / "new")) << c.args << ": left " << (dir / "new");
    r = run("train --threads 2 " + c.args, "cd " + (dir / "cwd").string() + " && ");
    EXPECT_EQ(r.code, c.code) << c.args << "\n" << r.out;
    EXPECT_TRUE(fs::is_empty(dir / "cwd")) << c.args << ": left runs/ behind";
  }
}

// Item 14: a spec model given by an absolute or a relative path trains into runs/<stem>-...; the
// run keeps a copy of the spec and eval, predict and resume use it, from any working directory,
// after the original was edited and then deleted.
TEST_F(CliRunDir, SpecModelRunKeepsItsSpec) {
  fs::create_directories(dir / "specs");
  fs::create_directories(dir / "work");
  fs::create_directories(dir / "elsewhere");
  const fs::path spec = dir / "specs" / "my_net.toml";
  std::ofstream(spec) << kSpec;
  const std::string d = " --data-dir " + data.string() + " --epochs 1 --batch-size 32 --threads 2";
  const std::string in_work = "cd " + (dir / "work").string() + " && ";
  Result r = run("train --model " + spec.string() + d, in_work);
  ASSERT_EQ(r.code, 0) << r.out;
  r = run("train --model ../specs/my_net.toml --name rel" + d, in_work);
  ASSERT_EQ(r.code, 0) << r.out;
  std::vector<fs::path> runs;
  for (const auto& e : fs::directory_iterator(dir / "work" / "runs")) runs.push_back(e.path());
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_TRUE(fs::exists(dir / "work" / "runs" / "rel" / "my_net.toml"));
  fs::path run_dir = runs[0].filename() == "rel" ? runs[1] : runs[0];
  EXPECT_TRUE(run_dir.filename().string().starts_with("my_net-fashion-mnist-")) << run_dir;
  EXPECT_EQ(read_text(run_dir / "my_net.toml"), kSpec);
  EXPECT_EQ(read_json(run_dir / "config.json")["model"], "my_net.toml");

  // Edit the original (another architecture), then delete it: the run still evaluates and resumes.
  std::ofstream(spec) << "[[layer]]\ntype = \"flatten\"\n[[layer]]\ntype = \"linear\"\nout_features = \"classes\"\n";
  const std::string in_elsewhere = "cd " + (dir / "elsewhere").string() + " && ";
  r = run("eval " + run_dir.string() + " --data-dir " + data.string(), in_elsewhere);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "test accuracy");
  fs::remove(spec);
  r = run("predict " + run_dir.string() + " --index 1 --data-dir " + data.string(), in_elsewhere);
  EXPECT_EQ(r.code, 0) << r.out;
  r = run("train --resume " + run_dir.string() + " --epochs 2", in_elsewhere);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(read_json(run_dir / "checkpoints" / "latest.json")["epoch"], 2);
  // Without the copy, resume says which file is missing.
  fs::remove(run_dir / "my_net.toml");
  r = run("train --resume " + run_dir.string() + " --epochs 3", in_elsewhere);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_HAS(r.out, "my_net.toml");
}

// Issue 48, item 11: `--resume` of a run that finished its epochs has nothing to train: it says so
// with the flag that extends it, and trains and writes nothing (its report was rewritten before).
TEST_F(CliRunDir, ResumingAFinishedRunTrainsAndWritesNothing) {
  const fs::path rd = dir / "run";
  Result r = run(tiny("run"));
  ASSERT_EQ(r.code, 0) << r.out;
  const auto before = snapshot(rd);
  r = run("train --resume " + rd.string() + " --threads 2");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "already finished its 1 epoch: nothing was trained or written");
  EXPECT_HAS(r.out, "--epochs 2");
  EXPECT_LACKS(r.out, "resuming at epoch");
  EXPECT_TRUE(snapshot(rd) == before) << "the finished run's files changed";
}

// Issue 48, item 11: `--resume RUN --epochs 2` of a 3-epoch run stops at 2 this time, but the run
// keeps its 3 epochs: a later plain --resume continues to them (it was shortened for good).
TEST_F(CliRunDir, AShorterEpochsOnResumeStopsThereOnlyThisTime) {
  const fs::path rd = dir / "run";
  Result r = run(tiny("run") + " --epochs 3 --stop-after-steps 4");
  ASSERT_EQ(r.code, 130) << r.out;
  r = run("train --resume " + rd.string() + " --epochs 2 --threads 2");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(read_json(rd / "checkpoints" / "latest.json")["epoch"], 2);
  EXPECT_EQ(read_json(rd / "config.json")["epochs"], 3);
  r = run("train --resume " + rd.string() + " --threads 2");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "resuming at epoch 3");
  EXPECT_EQ(read_json(rd / "checkpoints" / "latest.json")["epoch"], 3);
  r = run("train --resume " + rd.string() + " --epochs 2 --threads 2");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "has trained 3 epochs already, and --epochs 2 ends there");
}
