// Finding a run from a path: the resume point of `ember train --resume`, the run directory of a
// checkpoint, and the model spec copy a run keeps (see include/ember/train/resume.h).
#include "ember/train/resume.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "ember/core/error.h"
#include "ember/io/file_kind.h"
#include "ember/io/pth.h"
#include "ember/io/user_file.h"
#include "ember/nn/spec.h"
#include "ember/train/checkpoint.h"
#include "ember/train/run_files.h"
#include "io/json_fields.h"

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
  return fs::weakly_canonical(dir, ec).filename() == kCheckpointsDir || dir.filename() == kCheckpointsDir;
}
}  // namespace

std::optional<fs::path> run_dir_of(const fs::path& path_in) {
  const fs::path p = tidy(path_in);
  std::error_code ec;
  if (fs::is_directory(p, ec)) {
    if (fs::is_directory(checkpoints_dir(p), ec)) return p;
    if (is_checkpoints_dir(p)) return parent_of(p);
    return std::nullopt;
  }
  const fs::path dir = parent_of(p);
  if (is_checkpoints_dir(dir)) return parent_of(dir);
  return std::nullopt;
}

std::optional<fs::path> latest_run(const fs::path& runs_dir) {
  std::error_code ec;
  std::optional<fs::path> best;
  fs::file_time_type newest{};
  for (fs::directory_iterator it(runs_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path manifest = latest_manifest(it->path());
    const auto when = fs::last_write_time(manifest, ec);
    if (ec) {
      ec.clear();
      continue;
    }
    if (!best || when > newest || (when == newest && it->path() < *best)) best = it->path(), newest = when;
  }
  return best;
}

ResumePoint find_resume_point(const fs::path& path_in) {
  const fs::path p = tidy(path_in);
  std::error_code ec;
  if (io::path_type(p) == io::PathType::missing)
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
    rp.manifest = latest_manifest(*run);
    if (!fs::exists(rp.manifest, ec))
      throw IOError(fmt::format("--resume: the run '{}' has no checkpoint yet ({} does not exist)",
                                rp.run_dir.string(), rp.manifest.string()),
                    "the run stopped before its first checkpoint; start it again without --resume");
    return rp;
  }
  std::optional<fs::path> run = run_dir_of(p);
  const std::string ext = p.extension().string();
  // A PyTorch .pt, an ONNX model, ...: say what it is and where such weights go (--init-from).
  if (ext != ".json" && ext != ".safetensors" && io::path_type(p) == io::PathType::regular) {
    std::vector<uint8_t> head(64);
    std::ifstream in(p, std::ios::binary);
    in.read(reinterpret_cast<char*>(head.data()), std::streamsize(head.size()));
    head.resize(size_t(in.gcount()));
    if (io::pth_sniff(head))  // ember reads torch.save files as they are, as a new run's weights
      throw ValueError(fmt::format("--resume: '{}' is a PyTorch torch.save file, not an ember run or checkpoint",
                                   path_in.string()),
                       fmt::format("--resume continues an ember run; to start a new run from these weights, use "
                                   "`ember train --init-from {}` (`ember weights info {}` lists them)",
                                   path_in.string(), path_in.string()));
    if (auto kind = io::sniff_foreign_weights(head, path_in.string()))
        throw ValueError(fmt::format("--resume: '{}' is {}, not an ember run or checkpoint", path_in.string(),
                                     kind->what),
                         "--resume continues an ember run; to start a new run from other weights, " + kind->hint +
                             " and pass it to `ember train --init-from`");
  }
  if (!run && ext == ".safetensors")
    throw ValueError(fmt::format("--resume: '{}' is not a checkpoint of a run: a weights file outside a run's checkpoints/ "
                                 "directory has no optimizer state or data position to continue from",
                                 path_in.string()),
                     "to start a new run from these weights, use `ember train --init-from " + path_in.string() + "`");
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
  auto rank = [](const fs::path& m) { return m.filename() == kLatestManifest ? 0 : m.filename() == kBestManifest ? 1 : 2; };
  std::sort(manifests.begin(), manifests.end(),
            [&](const fs::path& a, const fs::path& b) { return std::pair(rank(a), a) < std::pair(rank(b), b); });
  for (const fs::path& m : manifests) {
    try {
      auto text = io::read_user_file(m, io::kManifestFile);
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

namespace {
// A manifest's fields for the summary; nullopt when it is missing or unreadable (load_checkpoint
// reports that properly when it is the one chosen).
std::optional<CheckpointManifest> peek_manifest(const fs::path& m) {
  if (io::path_type(m) != io::PathType::regular) return std::nullopt;
  try {
    auto text = io::read_user_file(m, io::kManifestFile);
    return manifest_from_json(std::string(text.begin(), text.end()), m.string());
  } catch (const Error&) {
    return std::nullopt;
  }
}
// The set whose accuracy chose the best epoch: a validation split or a val/ folder, else the test set.
std::string chosen_on(const CheckpointManifest& m) {
  const auto cfg = nlohmann::json::parse(m.config_json.empty() ? "{}" : m.config_json, nullptr, false);
  if (!cfg.is_object()) return "accuracy";
  const auto split = cfg.find("val_split");
  const bool val_split = split != cfg.end() && split->is_number() && split->get<double>() > 0;
  const auto folder = cfg.find("image_folder");
  const bool val_folder = folder != cfg.end() && folder->is_object() &&
                          folder->value("layout", std::string()).find("val") != std::string::npos;
  return val_split || val_folder ? "validation accuracy" : "test accuracy";
}
}  // namespace

ChosenCheckpoint choose_checkpoint(const fs::path& path, const std::string& which) {
  if (!which.empty() && which != "best" && which != "last")
    throw ValueError(fmt::format("--checkpoint {}: expected best or last", which),
                     "--checkpoint best (the epoch validation chose, the default) or --checkpoint last");
  ChosenCheckpoint c;
  fs::path dir;
  if (io::path_type(path) == io::PathType::directory) {
    if (io::path_type(checkpoints_dir(path)) == io::PathType::directory) dir = checkpoints_dir(path);
    else if (io::path_type(path / kLatestManifest) != io::PathType::missing) dir = path;
  }
  if (dir.empty()) {
    if (!which.empty() && io::path_type(path) != io::PathType::directory)
      throw ValueError(fmt::format("--checkpoint {} chooses among a run's checkpoints, but '{}' is one checkpoint "
                                   "file already",
                                   which, path.string()),
                       "pass the run directory (runs/<name>) with --checkpoint, or the file without it");
    c.path = path;  // a file, or a directory load_checkpoint will explain
    return c;
  }
  const auto best = peek_manifest(dir / kBestManifest), last = peek_manifest(dir / kLatestManifest);
  const bool want_last = which == "last";
  if (!best && !want_last) {
    c.path = dir / kLatestManifest, c.which = "last";
    c.summary = last ? fmt::format("the last checkpoint (epoch {}, step {}): no epoch had ended yet, so there is no best",
                                   last->epoch, last->step)
                     : "the last checkpoint";
    return c;
  }
  if (want_last) {
    c.path = dir / kLatestManifest, c.which = "last";
    if (last)
      c.summary = best && best->weights != last->weights
                      ? fmt::format("the last checkpoint, epoch {} (the best was epoch {}: --checkpoint best)",
                                    last->epoch, best->epoch)
                      : fmt::format("the last checkpoint, epoch {}{}", last->epoch, best ? ", also the best" : "");
    return c;
  }
  c.path = dir / kBestManifest, c.which = "best";
  const std::string metric = fmt::format("{} {:.2f}%", chosen_on(*best), 100 * best->best_metric);
  c.summary = last && last->weights != best->weights
                  ? fmt::format("the best epoch, {} of {} ({}); --checkpoint last for epoch {}", best->epoch,
                                last->epoch, metric, last->epoch)
                  : fmt::format("the best epoch, {} ({}), also the last", best->epoch, metric);
  return c;
}

std::string spec_copy_name(const std::string& spec_path) { return fs::path(spec_path).filename().string(); }

std::string run_model(const std::string& model, const fs::path& run_dir) {
  if (!nn::is_spec_file(model) || run_dir.empty()) return model;
  std::error_code ec;
  const fs::path copy = run_dir / fs::path(model).filename();
  if (fs::path(model).filename() == fs::path(model) && fs::is_regular_file(copy, ec)) return copy.string();
  return model;
}

struct RunSettings::Impl {
  nlohmann::json j = nlohmann::json::object();
  std::string where, hint;
};

RunSettings::RunSettings(const std::string& config_json, const std::string& manifest, bool required) {
  auto impl = std::make_shared<Impl>();
  impl->where = fmt::format("checkpoint manifest '{}'", manifest);
  impl->hint = "the manifest was damaged or edited; resume from the run's checkpoints/best.json, restore the value, "
               "or start a new run";
  if (!config_json.empty()) impl->j = nlohmann::json::parse(config_json, nullptr, false);
  if (!impl->j.is_object()) {
    if (required)
      throw FormatError(fmt::format("{}: \"config\" is not a JSON object", impl->where), impl->hint);
    impl->j = nlohmann::json::object();
  }
  if (required && impl->j.empty())
    throw FormatError(fmt::format("{} has no run config (\"config\"), so the run's settings are unknown", impl->where),
                      "only checkpoints written by `ember train` can be resumed; `ember eval` reads any checkpoint");
  impl_ = std::move(impl);
}

bool RunSettings::contains(const std::string& key) const { return impl_->j.contains(key); }

template <class T>
T RunSettings::get(const std::string& key) const {
  return io::json_get<T>(impl_->j, key, impl_->where, impl_->hint, "config." + key);
}
template std::string RunSettings::get<std::string>(const std::string&) const;
template bool RunSettings::get<bool>(const std::string&) const;
template int RunSettings::get<int>(const std::string&) const;
template int64_t RunSettings::get<int64_t>(const std::string&) const;
template uint64_t RunSettings::get<uint64_t>(const std::string&) const;
template double RunSettings::get<double>(const std::string&) const;

std::string RunSettings::flag_text(const std::string& key) const {
  const nlohmann::json& v = impl_->j.at(key);
  return v.is_string() ? v.get<std::string>() : v.dump();
}
const std::string& RunSettings::where() const { return impl_->where; }
const std::string& RunSettings::hint() const { return impl_->hint; }

}  // namespace ember::train
