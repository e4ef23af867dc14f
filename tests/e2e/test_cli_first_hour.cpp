// What a new user tripped over in the first hour with `ember` (issue 22), end to end: the flag
// spellings of other tools (-b=64, --bs, --patience, --fp16; "did you mean" for --gpus, --log-dir,
// a model called lenet), flags that were ignored in silence, --momentum, run names that escape
// runs/, the messages, --help and banners within 80 columns, thread limits, export through links
// and to standard output, --init-from hints, and the summary of a 60-class confusion matrix.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "cli_test_util.h"
#include "e2e_util.h"
#include "../support/child_process.h"  // kUnderAsan

namespace fs = std::filesystem;
using json = nlohmann::json;
using e2e::Result;
using e2e::run;
using ember::test::kUnderAsan;

namespace {

class CliFirstHour : public e2e::Fixture {};

json read_json(const fs::path& p) { return json::parse(e2e::read_text(p)); }

// Columns a line takes on a terminal: CJK characters 2, other code points 1 (what the tests print).
int columns(const std::string& line) {
  int w = 0;
  for (size_t i = 0; i < line.size();) {
    const auto b = static_cast<unsigned char>(line[i]);
    const size_t len = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : 4;
    uint32_t cp = len == 1 ? b : b & (0x7F >> len);
    for (size_t k = 1; k < len && i + k < line.size(); ++k) cp = (cp << 6) | (line[i + k] & 0x3F);
    w += (cp >= 0x3000 && cp <= 0x9FFF) ? 2 : 1;
    i += len;
  }
  return w;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// Runs a shell command; its exit status.
int shell(const std::string& cmd) {
  const int st = std::system(cmd.c_str());
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

// A folder of `classes` classes (named by `name(k)`), `n` grey 12x12 images each, class k bright
// in row band k % 6.
template <class Name>
void write_band_folder(const fs::path& root, int classes, int n, Name name) {
  for (int k = 0; k < classes; ++k) {
    const fs::path d = root / name(k);
    fs::create_directories(d);
    for (int i = 0; i < n; ++i) {
      std::vector<unsigned char> px(144);
      for (int p = 0; p < 144; ++p) px[size_t(p)] = (unsigned char)((p / 12) / 2 == k % 6 ? 200 + i : (p * 7 + k) % 50);
      ASSERT_NE(stbi_write_png((d / ("i" + std::to_string(i) + ".png")).c_str(), 12, 12, 1, px.data(), 12), 0);
    }
  }
}

}  // namespace

// -b=64 as argparse reads it; the names PyTorch, Lightning, Keras and Hugging Face users type
// first, where they mean what ember's flag means.
TEST_F(CliFirstHour, OtherToolsFlagSpellingsAreAliases) {
  const std::string base = "train --model lenet5 --data-dir " + data.string() + " --epochs 1 --threads 2";
  Result r = run(base + " -b=64 --wd 0.001 --patience 2 --dataset fashion-mnist --output-dir " + (dir / "a").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "(batch 64)");
  json cfg = read_json(dir / "a" / "config.json");
  EXPECT_EQ(cfg["batch_size"], 64);
  EXPECT_EQ(cfg["weight_decay"], 0.001);
  EXPECT_EQ(cfg["early_stop_patience"], 2);
  r = run(base + " --bs 32 --amp --run-dir " + (dir / "b").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(read_json(dir / "b" / "config.json")["batch_size"], 32);
  EXPECT_EQ(read_json(dir / "b" / "config.json")["precision"], "auto");
  // --fp16 is --precision fp16: on the CPU that is refused with the precision's own reason.
  r = run(base + " --fp16 --run-dir " + (dir / "c").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "--precision fp16: float16 is a GPU mode");
  r = run(base + " --fp16 --bf16 --run-dir " + (dir / "c").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "--fp16 and --bf16 ask for different --precision");
  r = run(base + " --amp --precision fp32 --run-dir " + (dir / "c").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "--amp means --precision auto, but --precision fp32 is given too");
  EXPECT_FALSE(fs::exists(dir / "c"));
}

// Flags other tools have with another meaning get a "did you mean" that says what ember does.
TEST_F(CliFirstHour, ForeignFlagsSayWhatEmberDoesInstead) {
  struct Case {
    std::string args, piece;
  };
  const Case cases[] = {
      {"--gpus 2", "--gpus: ember runs on one device, chosen by --device"},
      {"--gpus 2", "pass --nproc-per-node N"},
      {"--log-dir logs", "--log-dir: ember logs into the run directory"},
      {"--pretrained", "--pretrained: ember downloads no pretrained weights; --init-from FILE"},
      {"--model lenet", "unknown model 'lenet' (did you mean lenet5?)"},
      {"--data fashion_mnist", "(did you mean fashion-mnist?)"},
  };
  for (const Case& c : cases) {
    Result r = run(tiny("x") + " " + c.args);
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.out;
    EXPECT_HAS(r.out, c.piece);
  }
  Result r = run("bench train --gpus 2");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "chosen by --device");
  EXPECT_LACKS(r.out, "--nproc-per-node");  // bench train has none
  EXPECT_FALSE(fs::exists(dir / "x"));
}

// Flags that do nothing for this run say so; the test set choosing when to stop is said too.
TEST_F(CliFirstHour, IgnoredFlagsAndStoppingOnTheTestSetWarn) {
  Result r = run(tiny("a") + " --image-size 32 --channels 3 --val-split 0 --early-stop 2");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "warning: --image-size is for image folders; fashion-mnist is used as it is stored");
  EXPECT_HAS(r.out, "warning: --channels is for image folders");
  EXPECT_HAS(r.out, "warning: --early-stop 2 without a validation set (--val-split 0) stops on the test set");
  EXPECT_HAS(r.out, "validation none (--val-split 0)");
  // val_split = 0 from a config file: the banner names the file, not a flag that was not given.
  std::ofstream(dir / "c.toml") << "val_split = 0\n";
  r = run(tiny("b") + " --config " + (dir / "c.toml").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "validation none (val_split = 0 in");  // the long path goes on the next line
  EXPECT_HAS(r.out, (dir / "c.toml").string() + "):");
  EXPECT_LACKS(r.out, "(--val-split 0)");
  // --data FOLDER with --data-dir: the folder wins, said.
  fs::create_directories(dir / "imgs");
  ember::e2e::write_shape_images(dir / "imgs", 6, 0);
  r = run("train --model lenet5 --epochs 1 --threads 2 --data " + (dir / "imgs").string() + " --data-dir " +
          data.string() + " --run-dir " + (dir / "f").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "warning: --data-dir " + data.string() + " is ignored: --data " + (dir / "imgs").string() +
                        " names the image folder itself");
}

// --momentum: SGD's, in the banner and config.json, checked, adopted on resume.
TEST_F(CliFirstHour, MomentumIsASettingLikeTheOthers) {
  Result r = run(tiny("m") + " --optimizer sgd --lr 0.05 --momentum 0.5 --epochs 2 --stop-after-steps 2");
  ASSERT_EQ(r.code, 130) << r.out;
  EXPECT_HAS(r.out, "optimizer  sgd lr 0.05, momentum 0.5, weight decay");
  EXPECT_EQ(read_json(dir / "m" / "config.json")["momentum"], 0.5);
  r = run("train --resume " + (dir / "m").string() + " --momentum 0.8");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "--momentum is ignored with --resume: the run was started with momentum = 0.5");
  r = run(tiny("bad") + " --momentum 1");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "--momentum must be at least 0 and less than 1 (got 1)");
  r = run(tiny("adam") + " --momentum 0.5");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "warning: --momentum is SGD's; --optimizer adamw has none");
  EXPECT_LACKS(r.out, "momentum 0.5,");
}

// --name . wrote into runs/ itself and --name ../escape outside it.
TEST_F(CliFirstHour, RunNamesAreOneFolderUnderRuns) {
  const std::string base = "train --model lenet5 --data-dir " + data.string() + " --epochs 1 --threads 2";
  for (const char* name : {".", "..", "../escape", "a/b"}) {
    Result r = run(base + " --name " + name, "cd " + dir.string() + " && ");
    EXPECT_EQ(r.code, 2) << name << "\n" << r.out;
    EXPECT_HAS(r.out, "--name: ");
    EXPECT_FALSE(fs::exists(dir / "runs")) << name;
    EXPECT_FALSE(fs::exists(dir / "escape")) << name;
  }
  Result r = run(base + " --name ''", "cd " + dir.string() + " && ");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "the run name is empty");
  // --run-dir . names the run after the folder it resolves to.
  fs::create_directories(dir / "here");
  r = run(base + " --run-dir .", "cd " + (dir / "here").string() + " && ");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(read_json(dir / "here" / "config.json")["name"], "here");
}

// Messages say what the flag means and what to do.
TEST_F(CliFirstHour, MessagesSayWhatIsMeant) {
  Result r = run(tiny("w") + " --workers 2000");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "0 loads the batches in-line");
  EXPECT_LACKS(r.out, "0 uses all of them");
  // data verify: missing files are fetched by a plain fetch; --force is for files that verify.
  fs::create_directories(dir / "empty");
  r = run("data verify mnist --data-dir " + (dir / "empty").string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_HAS(r.out, "did not verify (4 files missing)");
  EXPECT_HAS(r.out, "hint: run `ember data fetch mnist --data-dir " + (dir / "empty").string() +
                        "`: it downloads the missing files");
  EXPECT_LACKS(r.out, "--force");
}

// 27 help lines were wider than 80 columns (the longest 326): every line of every --help fits.
TEST_F(CliFirstHour, EveryHelpLineFitsIn80Columns) {
  std::vector<std::string> todo = {""}, seen;
  while (!todo.empty()) {
    const std::string cmd = todo.back();
    todo.pop_back();
    seen.push_back(cmd);
    Result r = run(cmd + (cmd.empty() ? "" : " ") + "--help");
    ASSERT_EQ(r.code, 0) << cmd << "\n" << r.out;
    bool in_subcommands = false;
    for (const std::string& l : lines_of(r.out)) {
      EXPECT_LE(columns(l), 80) << "ember " << cmd << " --help:\n" << l;
      if (l.starts_with("Subcommands:")) in_subcommands = true;
      else if (in_subcommands && l.starts_with("  ") && l.size() > 2 && l[2] != ' ')
        todo.push_back((cmd.empty() ? "" : cmd + " ") + l.substr(2, l.find(' ', 2) - 2));
      else if (!l.starts_with(" ")) in_subcommands = false;
    }
  }
  const std::set<std::string> all(seen.begin(), seen.end());
  for (const char* c : {"", "train", "eval", "predict", "export", "doctor", "bench", "bench train", "data", "data fetch"})
    EXPECT_TRUE(all.count(c)) << "'ember " << c << " --help' was not reached";
}

// --threads 1024 under a memory limit ended in libgomp's "Thread creation failed", --workers 1024
// in "internal error: Resource temporarily unavailable ... a bug in ember".
TEST_F(CliFirstHour, ThreadLimitsAreResourceErrors) {
  // The threads fail to start under `ulimit -v` (root ignores ulimit -u); ASan's shadow memory needs
  // more address space than that, so the sanitizer build cannot run the case at all.
  if (kUnderAsan) GTEST_SKIP() << "ulimit -v cannot be combined with AddressSanitizer";
  struct Case {
    const char *flags, *what;
  };
  for (const Case& c : {Case{"--threads 1024", "--threads 1024 and --workers 1 (1024 threads beside this one)"},
                        Case{"--threads 1 --workers 1024", "--threads 1 and --workers 1024 (1024 threads beside"}}) {
    const std::string flags = c.flags;
    Result r = run(tiny("t") + " " + flags, "ulimit -v 3000000 && ");
    EXPECT_EQ(r.code, 1) << flags << "\n" << r.out;
    EXPECT_HAS(r.out, std::string("ember: error: cannot start ") + c.what);
    EXPECT_HAS(r.out, "more threads could start (Resource temporarily unavailable)");
    EXPECT_HAS(r.out, "or raise the limit that stops them (now ulimit -u ");
    EXPECT_LACKS(r.out, "internal error");
    EXPECT_LACKS(r.out, "libgomp");
    EXPECT_FALSE(fs::exists(dir / "t")) << flags;
  }
}

// -o link.onnx replaced the link with a file; -o /dev/stdout as root replaced /dev/stdout itself.
TEST_F(CliFirstHour, ExportWritesThroughLinksToStdoutAndRefusesDevices) {
  ASSERT_EQ(run(tiny("r")).code, 0);
  const std::string rd = (dir / "r").string();
  fs::create_directories(dir / "store");
  fs::create_symlink(dir / "store" / "model.onnx", dir / "link.onnx");
  Result r = run("export " + rd + " -o " + (dir / "link.onnx").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(fs::is_symlink(dir / "link.onnx"));
  EXPECT_TRUE(fs::is_regular_file(dir / "store" / "model.onnx"));
  const std::string onnx = e2e::read_text(dir / "store" / "model.onnx");
  // -o - into a pipe: the same bytes on stdout, the summary on stderr.
  const std::string cmd = e2e::ember_bin() + " export " + rd + " --format onnx -o - 2>" + (dir / "err.txt").string() +
                          " | cat > " + (dir / "piped.onnx").string();
  ASSERT_EQ(shell(cmd), 0);
  EXPECT_TRUE(e2e::read_text(dir / "piped.onnx") == onnx) << "the piped export differs";
  EXPECT_HAS(e2e::read_text(dir / "err.txt"), "wrote standard output (ONNX opset 17");
  // /dev/stdout redirected to a file is a stream too (not renamed over).
  ASSERT_EQ(shell(e2e::ember_bin() + " export " + rd + " --format safetensors -o /dev/stdout > " +
                  (dir / "redirected.safetensors").string() + " 2>/dev/null"),
            0);
  EXPECT_EQ(e2e::read_text(dir / "redirected.safetensors").substr(8, 1), "{");
  // A device or a FIFO is refused before anything is written.
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  for (const std::string out : {std::string("/dev/null"), (dir / "fifo").string()}) {
    r = run("export " + rd + " --format onnx -o " + out);
    EXPECT_EQ(r.code, 1) << out << "\n" << r.out;
    EXPECT_HAS(r.out, "not a regular file: ember writes its output only to regular files");
  }
  struct stat st {};
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

// The README's --init-from line failed with "0 of 16 tensors match" (the default model is no
// longer lenet5), the fine-tune line on conv1's shape: the hint names the flags that fit.
TEST_F(CliFirstHour, InitFromNamesTheModelOrGeometryTheWeightsFit) {
  ASSERT_EQ(run(tiny("lenet")).code, 0);
  const std::string run_dir = (dir / "lenet").string();
  // Without --model, the model the weights were trained as (issue 48); another --model gets the hint.
  Result r = run("train --init-from " + run_dir + " --data-dir " + data.string() + " --epochs 1 --threads 2 "
                 "--run-dir " + (dir / "d").string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "defaults   --model lenet5: the model --init-from's weights were trained as");
  r = run("train --model bncnn --init-from " + run_dir + " --data-dir " + data.string() + " --epochs 1 --threads 2 "
          "--run-dir " + (dir / "d2").string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_HAS(r.out, "hint: these weights fit --model lenet5");
  // Into a 3-class RGB photo folder at 24x24: the run's 1x28x28, with a new head.
  fs::create_directories(dir / "photos");
  ember::e2e::write_shape_images(dir / "photos", 6, 0);
  const std::string ft = "train --model lenet5 --init-from " + run_dir + " --init-from-partial --data " +
                         (dir / "photos").string() + " --epochs 1 --threads 2 --run-dir ";
  r = run(ft + (dir / "ft").string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_HAS(r.out, "conv1.weight: file [6, 1, 5, 5], model [6, 3, 5, 5]");
  EXPECT_HAS(r.out, "these weights were trained on 1x28x28 inputs: pass --channels 1 --image-size 28");
  r = run(ft + (dir / "ft2").string() + " --channels 1 --image-size 28");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "shape differs, reinitialised: fc3.weight");
}

// 60 classes: eval prints the most-confused pairs and the worst classes, the matrix goes to a CSV
// (and report.html to confusion.csv); banners and epoch rows stay within 80 columns; class names
// of other scripts line up by their display width.
TEST_F(CliFirstHour, ManyClassesAndUnicodeNamesStayReadable) {
  write_band_folder(dir / "many", 60, 3, [](int k) { return "class_" + std::to_string(k); });
  Result r = run("train --model mlp --epochs 1 --threads 2 --val-split 0 --data " + (dir / "many").string() +
                 " --run-dir " + (dir / "m").string());
  ASSERT_EQ(r.code, 0) << r.out;
  for (const std::string& l : lines_of(r.out))  // (a path is not wrapped: the test's own are long)
    if (l.find(dir.string()) == std::string::npos) EXPECT_LE(columns(l), 80) << l;
  EXPECT_TRUE(fs::exists(dir / "m" / "confusion.csv"));
  EXPECT_HAS(e2e::read_text(dir / "m" / "report.html"), "Most-confused pairs");
  r = run("eval " + (dir / "m").string() + " --confusion-csv " + (dir / "cm.csv").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "60 classes: the 20 most-confused pairs and the 20 lowest per-class accuracies");
  EXPECT_HAS(r.out, "the whole confusion matrix is in " + (dir / "cm.csv").string());
  EXPECT_LT(r.out.size(), 6000u);
  EXPECT_EQ(lines_of(e2e::read_text(dir / "cm.csv")).size(), 61u);

  const std::vector<std::string> names = {"日本の服", "cafe\xcc\x81", "zebra"};  // CJK, e + combining acute
  write_band_folder(dir / "uni", 3, 6, [&](int k) { return names[size_t(k)]; });
  r = run("train --model mlp --epochs 1 --threads 2 --data " + (dir / "uni").string() + " --run-dir " +
          (dir / "u").string());
  ASSERT_EQ(r.code, 0) << r.out;
  r = run("eval " + (dir / "u").string());
  ASSERT_EQ(r.code, 0) << r.out;
  std::set<int> percent_columns;
  bool in_table = false;
  for (const std::string& l : lines_of(r.out)) {
    if (l == "per-class accuracy") in_table = true;
    else if (in_table && l.empty()) break;
    else if (in_table) {
      int combining = 0;  // U+0301 takes no column
      for (size_t p = l.find("\xcc\x81"); p != std::string::npos; p = l.find("\xcc\x81", p + 1)) ++combining;
      percent_columns.insert(columns(l.substr(0, l.find('%'))) - combining);
    }
  }
  EXPECT_EQ(percent_columns.size(), 1u) << r.out;
}

// Epoch rows wrapped once the loss reached 10: losses keep 6 columns at any size.
TEST_F(CliFirstHour, EpochRowsKeepTheirWidthWhenTheLossIsLarge) {
  Result r = run("train --model mlp --data-dir " + data.string() + " --epochs 2 --threads 2 --optimizer sgd --lr 3 "
                 "--schedule none --run-dir " + (dir / "big").string());
  ASSERT_EQ(r.code, 0) << r.out;
  std::vector<std::string> rows;
  bool table = false, large = false;
  for (const std::string& l : lines_of(r.out)) {
    if (l.starts_with("epoch    loss")) table = true, rows.push_back(l);
    else if (table && l.starts_with("    ")) rows.push_back(l), large = large || l.find("e+") != std::string::npos;
    else table = false;
  }
  ASSERT_EQ(rows.size(), 3u) << r.out;
  EXPECT_TRUE(large) << "no loss of 10,000 or more to show:\n" << r.out;
  for (const std::string& row : rows) EXPECT_EQ(row.size(), rows[0].size()) << row;
  EXPECT_LE(rows[0].size(), 80u);
}

// Issue 48, item 7: a --data value with a '/' or '~' is a path. A typo in it names the missing folder
// and the closest one beside it, written as the user wrote the path (exit 2), not "unknown
// dataset"; `~` unexpanded (a quoted value, a --config file) means $HOME, as os.path.expanduser.
TEST_F(CliFirstHour, ADataPathWithATypoNamesTheFolderMeant) {
  ember::e2e::write_shape_images(dir / "photos", 4, 0);
  Result r = run("train --data " + (dir / "phtos").string() + " --epochs 1");
  EXPECT_EQ(r.code, 2) << r.out;
  EMBER_EXPECT_HAS(r.out, "no such folder '" + (dir / "phtos").string() + "' (did you mean " + (dir / "photos").string() + "?)");
  EXPECT_EQ(r.out.find("unknown dataset"), std::string::npos) << r.out;
  r = run("train --data '~/phtos' --epochs 1", "HOME=" + dir.string() + " ");
  EXPECT_EQ(r.code, 2) << r.out;
  EMBER_EXPECT_HAS(r.out, "no such folder '~/phtos' (did you mean ~/photos?)");
  r = run("train --data " + (dir / "nowhere" / "photos").string() + " --epochs 1");
  EXPECT_EQ(r.code, 2) << r.out;
  EMBER_EXPECT_HAS(r.out, "does not exist either");
  r = run("train --data " + (dir / "photos" / "disc" / "img1.png").string() + " --epochs 1");
  EXPECT_EQ(r.code, 2) << r.out;
  EMBER_EXPECT_HAS(r.out, "is a file, not a folder of images");
  r = run("train --data '~/photos' --model mlp --epochs 1 --batch-size 8 --threads 2 --run-dir " + (dir / "run").string(),
          "HOME=" + dir.string() + " ");
  EXPECT_EQ(r.code, 0) << r.out;
  EMBER_EXPECT_HAS(r.out, "from " + (dir / "photos").string());
}

// Issue 48, item 20: the cosmetics a PyTorch/Keras user met in an hour.
TEST_F(CliFirstHour, NamesAsOtherToolsSpellThemAndMessagesWithoutInternalWords) {
  // --help footers: every exit code, each phrase on one line.
  for (const std::string& cmd : {"--help", "train --help"}) {
    Result r = run(cmd);
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_HAS(r.out, "3 internal error (a bug in ember)");
    EXPECT_HAS(r.out, "143 terminated (SIGTERM)");
    for (const std::string& line : lines_of(r.out)) EXPECT_FALSE(line.ends_with(" 3 internal")) << r.out;
  }
  // --device gpu is CUDA's.
  Result r = run(tiny("gpu") + " --device gpu");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "invalid device 'gpu' (did you mean cuda?)");
  // Names in another case, and Keras's layer names in a spec.
  r = run("train --model LeNet5 --optimizer SGD --data-dir " + data.string() + " --epochs 1 --batch-size 32 "
          "--threads 2 --run-dir " + (dir / "cased").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "model      lenet5:");
  EXPECT_HAS(r.out, "optimizer  sgd lr");
  std::ofstream(dir / "keras.toml") << "[[layer]]\ntype = \"Conv2D\"\nfilters = 8\nkernel_size = 3\n"
                                       "[[layer]]\ntype = \"Flatten\"\n[[layer]]\ntype = \"Linear\"\nout_features = \"classes\"\n";
  r = run("train --model " + (dir / "keras.toml").string() + " --data-dir " + data.string() + " --epochs 1");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "layer 1 (conv2d): missing 'out_channels'; 'filters' is Keras's Conv2D name for it");
  EXPECT_HAS(r.out, "write out_channels = 8");
  std::ofstream(dir / "dense.toml") << "[[layer]]\ntype = \"Flatten\"\n[[layer]]\ntype = \"Dense\"\nunits = 10\n";
  r = run("train --model " + (dir / "dense.toml").string() + " --data-dir " + data.string() + " --epochs 1");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "Keras's Dense is ember's 'linear'");
  std::ofstream(dir / "cased.toml") << "[[layer]]\ntype = \"Conv2D\"\nout_channels = 4\nkernel_size = 3\n"
                                       "[[layer]]\ntype = \"ReLU\"\n[[layer]]\ntype = \"Flatten\"\n"
                                       "[[layer]]\ntype = \"Linear\"\nout_features = \"classes\"\n";
  r = run("train --model " + (dir / "cased.toml").string() + " --data-dir " + data.string() + " --epochs 1 "
          "--batch-size 32 --threads 2 --run-dir " + (dir / "spec").string());
  EXPECT_EQ(r.code, 0) << r.out;
  // An unknown dataset to fetch is a usage error, as for train --data.
  r = run("data fetch imagenet");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "unknown dataset 'imagenet'");
  // A config file with two bad lines names both.
  std::ofstream(dir / "bad.toml") << "epochs = 0\nbatch_size = 32\nlr = \"fast\"\n";
  r = run("train --config " + (dir / "bad.toml").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "2 settings in config file");
  EXPECT_HAS(r.out, "line 1: epochs = 0: --epochs must be at least 1");
  EXPECT_HAS(r.out, "line 3: \"lr\" must be a number");
  // Where pretrained weights come from: a .pth.
  r = run("train --pretrained");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, ".pth");
  r = run("train --help");
  EXPECT_HAS(r.out, ".pth/.pt (torch.save(model.state_dict()), read");
}
