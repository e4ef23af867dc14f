// Finding a run from a path: the resume point of `ember train --resume`, the run directory of a
// checkpoint, and the model spec copy a run keeps (see include/ember/train/resume.h).
#include "ember/train/resume.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "ember/core/error.h"
#include "ember/data/readers.h"
#include "ember/nn/spec.h"
#include "ember/train/checkpoint.h"

namespace ember::train {
namespace fs = std::filesystem;

namespace {
const char* kForms =
    "give the run directory (ember train --resume runs/<name>), or its checkpoints/latest.json or best.json";

// `p` without a trailing separator; made absolute when it has too few components to name parents.
fs::path tidy(const fs::path& p) {
  fs::path q = p.lexically_normal();
  if (q.filename().empty() && q.has_parent_path()) q = q.parent_path();
  return q;
}
fs::path parent_of(const fs::path& p) {
  fs::path q = p.parent_path();
  if (q.empty() || q.filename() == "..") q = fs::absolute(p).lexically_normal().parent_path();
  return q;
}
bool is_checkpoints_dir(const fs::path& dir) {
  std::error_code ec;
  return fs::weakly_canonical(dir, ec).filename() == "checkpoints" || dir.filename() == "checkpoints";
}
}  // namespace

std::optional<fs::path> run_dir_of(const fs::path& path_in) {
  const fs::path p = tidy(path_in);
  std::error_code ec;
  if (fs::is_directory(p, ec)) {
    if (fs::is_directory(p / "checkpoints", ec)) return p;
    if (is_checkpoints_dir(p)) return parent_of(p);
    return std::nullopt;
  }
  const fs::path dir = parent_of(p);
  if (is_checkpoints_dir(dir)) return parent_of(dir);
  return std::nullopt;
}

ResumePoint find_resume_point(const fs::path& path_in) {
  const fs::path p = tidy(path_in);
  std::error_code ec;
  if (!fs::exists(p, ec))
    throw IOError(fmt::format("--resume: '{}' does not exist", path_in.string()),
                  std::string(kForms) + "; `ls runs/` lists the runs");
  ResumePoint rp;
  if (fs::is_directory(p, ec)) {
    std::optional<fs::path> run = run_dir_of(p);
    if (!run)
      throw ValueError(fmt::format("--resume: '{}' is not a run directory (it has no checkpoints/ directory)",
                                   path_in.string()),
                       kForms);
    rp.run_dir = *run;
    rp.manifest = *run / "checkpoints" / "latest.json";
    if (!fs::exists(rp.manifest, ec))
      throw IOError(fmt::format("--resume: the run '{}' has no checkpoint yet ({} does not exist)",
                                rp.run_dir.string(), rp.manifest.string()),
                    "the run stopped before its first checkpoint; start it again without --resume");
    return rp;
  }
  std::optional<fs::path> run = run_dir_of(p);
  const std::string ext = p.extension().string();
  if (!run || (ext != ".json" && ext != ".safetensors"))
    throw ValueError(fmt::format("--resume: '{}' is not a checkpoint of a run (expected a run directory, or a "
                                 ".json manifest or .safetensors file in a run's checkpoints/ directory)",
                                 path_in.string()),
                     kForms);
  rp.run_dir = *run;
  if (ext == ".json") {
    rp.manifest = p;
    return rp;
  }
  // A weights file: continue through the manifest that names it, which carries the run's
  // settings, position and RNG state (the weights alone would restart the run from scratch).
  const fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  std::vector<fs::path> manifests;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".json") manifests.push_back(e.path());
  auto rank = [](const fs::path& m) { return m.filename() == "latest.json" ? 0 : m.filename() == "best.json" ? 1 : 2; };
  std::sort(manifests.begin(), manifests.end(),
            [&](const fs::path& a, const fs::path& b) { return std::pair(rank(a), a) < std::pair(rank(b), b); });
  for (const fs::path& m : manifests) {
    try {
      auto text = data::read_file_bytes(m, false);
      if (manifest_from_json(std::string(text.begin(), text.end()), m.string()).weights == p.filename().string()) {
        rp.manifest = m;
        return rp;
      }
    } catch (const Error&) {
      // A damaged manifest names nothing we can trust; look at the others.
    }
  }
  throw ValueError(fmt::format("--resume: no checkpoint manifest in '{}' names '{}', so its run settings, position "
                               "and optimizer state are unknown",
                               dir.string(), p.filename().string()),
                   kForms);
}

std::string spec_copy_name(const std::string& spec_path) { return fs::path(spec_path).filename().string(); }

std::string run_model(const std::string& model, const fs::path& run_dir) {
  if (!nn::is_spec_file(model) || run_dir.empty()) return model;
  std::error_code ec;
  const fs::path copy = run_dir / fs::path(model).filename();
  if (fs::path(model).filename() == fs::path(model) && fs::is_regular_file(copy, ec)) return copy.string();
  return model;
}

}  // namespace ember::train
