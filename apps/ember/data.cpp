// ember data fetch|verify: download a known dataset with SHA-256 checks, or check what is on disk.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "cli.h"
#include "ember/data/dataset.h"
#include "ember/data/fetch.h"
#include "ember/data/photo_cache.h"

namespace ember::cli {
namespace fs = std::filesystem;
namespace {
struct DataOpts {
  std::string name, dir, base_url;
  bool force = false;
};

// What to do when the download cannot reach the server (offline, or a firewall that blocks the
// default hosts): the folder the files belong in, their names and addresses, and --base-url.
std::string offline_hint(const DataOpts& o) {
  const fs::path dir = data::fetch_target_dir(o.name, o.dir);
  const std::string base = o.base_url.empty() ? data::canonical_base_url(o.name) : o.base_url;
  std::string names, first;
  bool tar = false;
  for (const auto& f : data::dataset_files(o.name)) {
    names += (names.empty() ? "" : ", ") + f.name;
    if (first.empty()) first = f.name;
    tar = tar || f.kind.ends_with("-tar");
  }
  const std::string url = base + (base.ends_with("/") ? "" : "/");
  const std::string verify = fmt::format("`ember data verify {} --data-dir {}` checks {}", o.name, dir.string(), tar ? "it" : "them");
  // `ember train --data NAME` looks in default_data_dir(NAME); a folder elsewhere needs --data-dir.
  const std::string train = dir == data::default_data_dir(o.name)
                                ? std::string()
                                : fmt::format(" and `ember train --data {} --data-dir {}` uses {}", o.name, dir.string(), tar ? "it" : "them");
  std::string h = "the server could not be reached (offline, or a firewall blocks it). Either:\n";
  if (tar)
    h += fmt::format("    - copy it in by hand: download {}{} on a machine that can reach it, then extract it into {}\n"
                     "      (`mkdir -p {} && tar xzf {} -C {}`); {}{}, or\n",
                     url, names, dir.string(), dir.string(), names, dir.string(), verify, train);
  else
    h += fmt::format("    - copy them in by hand: download {} from {} on a machine that can reach it and put them,\n"
                     "      as they are (.gz), in {}/ (e.g. {}{}); {}{}, or\n",
                     names, url, dir.string(), url, first, verify, train);
  h += fmt::format("    - fetch from a mirror that serves the same file names: `ember data fetch {} --base-url URL`", o.name);
  if (o.name == "fashion-mnist") h += ",\n      or install the Debian package: `apt-get install dataset-fashion-mnist`";
  return h;
}

// A name `ember data fetch|verify` does not know is a usage error (exit 2), as an unknown
// `ember train --data` is, with the names it knows and the closest one.
void check_known(const std::string& name) {
  const std::vector<std::string> names = data::known_dataset_names();
  if (std::find(names.begin(), names.end(), name) != names.end()) return;
  std::string known;
  for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
  const std::string guess = closest_name(name, names);
  throw UsageError(fmt::format("unknown dataset '{}'{}: ember downloads {}", name,
                               guess.empty() ? "" : " (did you mean " + guess + "?)", known),
                   "for other images (ImageNet, your photos) put them in a folder, FOLDER/<class>/*.jpg, and pass "
                   "`ember train --data FOLDER`");
}

int run_fetch(const DataOpts& o) {
  check_known(o.name);
  data::FetchOptions fo;
  fo.base_url = o.base_url;
  fo.force = o.force;
  fo.progress = true;
  data::FetchReport r;
  try {
    r = data::fetch_dataset(o.name, o.dir, fo);
  } catch (const IOError& e) {
    // Transfer failures start "download of <url> failed"; others (an unwritable folder) keep theirs.
    if (!std::string(e.what()).starts_with("download of ")) throw;
    throw IOError(e.what(), offline_hint(o));
  }
  fmt::print("{} in {} (from {})\n", r.dataset, r.dir.string(), r.base_url);
  for (const auto& f : r.files)
    fmt::print("  {:<32} {:<16} {:>10} bytes  {}\n", f.name, f.status, f.bytes,
               f.verified_sha256 ? "sha256 " + f.sha256.substr(0, 16) + "… ok" : std::string("parsed ok"));
  return kExitOk;
}

int run_verify(const DataOpts& o) {
  check_known(o.name);
  data::VerifyReport r = data::verify_dataset(o.name, o.dir);
  fmt::print("{} in {}\n", r.dataset, r.dir.string());
  for (const auto& f : r.files) fmt::print("  {}  {:<32} {}\n", f.ok ? "PASS" : "FAIL", f.name, f.message);
  if (!r.ok()) {
    // fetch downloads what is missing or does not verify by itself; --force is only for files that do.
    int missing = 0, bad = 0;
    for (const auto& f : r.files)
      if (!f.ok) ++(f.message.starts_with("missing") ? missing : bad);
    const std::string what = missing && bad ? fmt::format("{} missing, {} not as published", plural(missing, "file"), bad)
                             : missing      ? fmt::format("{} missing", plural(missing, "file"))
                                            : fmt::format("{} not as published", plural(bad, "file"));
    const std::string dir_flag = o.dir.empty() ? "" : " --data-dir " + o.dir;
    fmt::print(stderr, "ember: error: {} in {} did not verify ({})\n  hint: run `ember data fetch {}{}`: it downloads "
               "{}\n", r.dataset, r.dir.string(), what, r.dataset, dir_flag,
               bad ? "the files that are missing or do not verify" : "the missing files");
  }
  return r.ok() ? kExitOk : kExitFailed;
}
struct CacheOpts {
  std::string folder, out;
  data::PhotoCacheOptions opt;
};

int run_cache(const CacheOpts& o) {
  const auto t0 = std::chrono::steady_clock::now();
  const bool tty = ::isatty(2) != 0;
  const data::PhotoCacheReport r = data::write_photo_cache(o.folder, o.out, o.opt, [&](int64_t done, int64_t total) {
    if (tty) fmt::print(stderr, "\r  {} / {} pictures", done, total);
  });
  if (tty) fmt::print(stderr, "\n");
  for (const auto& s : r.skipped) warn(data::skip_warning(s));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  fmt::print("{}: {} pictures ({} written now{}), {} skipped, {:.1f} MB, {} (longer side <= {}), {:.1f} s\n", o.out,
             r.written + r.resumed, r.written, r.resumed ? fmt::format(", {} from the interrupted run", r.resumed) : "",
             r.skipped.size(), double(r.bytes) / 1e6,
             o.opt.raw ? std::string("raw RGB") : fmt::format("JPEG quality {}", o.opt.jpeg_quality), o.opt.max_side,
             secs);
  fmt::print("train on it: ember train --data {} --model resnet18\n", o.out);
  return kExitOk;
}
}  // namespace

void register_data(CLI::App& root, Runner& run) {
  auto* d = root.add_subcommand("data", "Datasets: fetch (download with SHA-256 checks), verify, and cache a photo folder");
  d->require_subcommand(1);
  auto fo = std::make_shared<DataOpts>();
  auto* f = d->add_subcommand("fetch", "Download a dataset (fashion-mnist, mnist, cifar10, ...)");
  f->add_option("name", fo->name, "Dataset name")->required();
  f->add_option("--data-dir", fo->dir, "Target directory (default: $EMBER_DATA_DIR/<name> or ~/.cache/ember/datasets/<name>)");
  f->add_option("--base-url", fo->base_url,
                "Download from this mirror instead (it must serve the same file names, e.g. URL/train-images-idx3-ubyte.gz)");
  f->add_flag("--force", fo->force, "Download again even when the files verify");
  f->callback([&run, fo] { run = [fo] { return run_fetch(*fo); }; });
  auto vo = std::make_shared<DataOpts>();
  auto* v = d->add_subcommand("verify", "Check a dataset's files against their known SHA-256");
  v->add_option("name", vo->name, "Dataset name")->required();
  v->add_option("--data-dir", vo->dir, "Directory to check (default: where ember looks for it)");
  v->callback([&run, vo] { run = [vo] { return run_verify(*vo); }; });
  auto co = std::make_shared<CacheOpts>();
  auto* c = d->add_subcommand("cache", "Write a folder of photos (FOLDER/<class>/*) as one file that training maps "
                                       "(resumable: an interrupted run continues)");
  c->add_option("folder", co->folder, "The folder of photos: FOLDER/<class>/*.jpg")->required();
  c->add_option("-o,--output", co->out, "The cache file to write, e.g. photos.ember")->required();
  add_number(c, "--max-side", co->opt.max_side, "Shrink pictures larger than this on their longer side",
             between(int64_t(8), int64_t(16384)))->capture_default_str();
  add_number(c, "--jpeg-quality", co->opt.jpeg_quality, "Re-encode at this JPEG quality", between(1, 100))
      ->capture_default_str();
  c->add_flag("--raw", co->opt.raw, "Store decoded RGB instead of JPEG (larger; nothing to decode per sample)");
  add_number(c, "--workers", co->opt.workers, "Threads decoding, resizing and encoding", at_least(1))->capture_default_str();
  add_number(c, "--max-image-pixels", co->opt.max_pixels,
             "Refuse source pictures of more pixels than N before decoding them (0: no limit)", at_least(int64_t(0)))
      ->capture_default_str();
  c->callback([&run, co] { run = [co] { return run_cache(*co); }; });
}

}  // namespace ember::cli
