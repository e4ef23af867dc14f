// ember data fetch|verify: download a known dataset with SHA-256 checks, or check what is on disk.
#include <fmt/format.h>

#include "cli.h"
#include "ember/data/fetch.h"

namespace ember::cli {
namespace {
struct DataOpts {
  std::string name, dir, base_url;
  bool force = false;
};

int run_fetch(const DataOpts& o) {
  data::FetchOptions fo;
  fo.base_url = o.base_url;
  fo.force = o.force;
  fo.progress = true;
  data::FetchReport r = data::fetch_dataset(o.name, o.dir, fo);
  fmt::print("{} in {} (from {})\n", r.dataset, r.dir.string(), r.base_url);
  for (const auto& f : r.files)
    fmt::print("  {:<32} {:<16} {:>10} bytes  {}\n", f.name, f.status, f.bytes,
               f.verified_sha256 ? "sha256 " + f.sha256.substr(0, 16) + "… ok" : std::string("parsed ok"));
  return kExitOk;
}

int run_verify(const DataOpts& o) {
  data::VerifyReport r = data::verify_dataset(o.name, o.dir);
  fmt::print("{} in {}\n", r.dataset, r.dir.string());
  for (const auto& f : r.files) fmt::print("  {}  {:<32} {}\n", f.ok ? "PASS" : "FAIL", f.name, f.message);
  if (!r.ok())
    fmt::print(stderr, "ember: error: {} in {} did not verify\n  hint: run `ember data fetch {} --force`\n", r.dataset,
               r.dir.string(), r.dataset);
  return r.ok() ? kExitOk : kExitFailed;
}
}  // namespace

void register_data(CLI::App& root, Runner& run) {
  auto* d = root.add_subcommand("data", "Datasets: fetch (download with SHA-256 checks) and verify");
  d->require_subcommand(1);
  auto fo = std::make_shared<DataOpts>();
  auto* f = d->add_subcommand("fetch", "Download a dataset (fashion-mnist, mnist, cifar10, ...)");
  f->add_option("name", fo->name, "Dataset name")->required();
  f->add_option("--data-dir", fo->dir, "Target directory (default: $EMBER_DATA_DIR/<name> or ~/.cache/ember/datasets/<name>)");
  f->add_option("--base-url", fo->base_url, "Download from this mirror instead");
  f->add_flag("--force", fo->force, "Download again even when the files verify");
  f->callback([&run, fo] { run = [fo] { return run_fetch(*fo); }; });
  auto vo = std::make_shared<DataOpts>();
  auto* v = d->add_subcommand("verify", "Check a dataset's files against their known SHA-256");
  v->add_option("name", vo->name, "Dataset name")->required();
  v->add_option("--data-dir", vo->dir, "Directory to check (default: where ember looks for it)");
  v->callback([&run, vo] { run = [vo] { return run_verify(*vo); }; });
}

}  // namespace ember::cli
