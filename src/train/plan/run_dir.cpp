// Run-directory safety for `ember train` (see ember/train/run_dir.h): --resume resolution and its
// --run-dir check, the run lock as a usage error, and the model spec copy.
#include "ember/train/run_dir.h"

#include <fmt/format.h>

#include "ember/io/atomic_file.h"
#include "ember/io/user_file.h"
#include "ember/nn/models.h"
#include "ember/nn/spec.h"
#include "ember/train/caller_model.h"
#include "ember/train/run_files.h"
#include "ember/train/settings.h"

namespace ember::train {
namespace fs = std::filesystem;

namespace {
bool same_dir(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) return fs::equivalent(a, b, ec);
  return fs::weakly_canonical(a, ec) == fs::weakly_canonical(b, ec);
}
}  // namespace

train::ResumePoint resume_point(const std::string& resume, const std::string& run_dir_flag, const std::string& name_flag) {
  train::ResumePoint rp;
  try {
    rp = train::find_resume_point(resume);
  } catch (const ValueError& e) {
    throw SettingError(e.what(), e.hint());
  }
  auto refuse = [&](const std::string& flag, const fs::path& other) {
    throw SettingError(
        fmt::format("--resume continues the run in its own directory '{}', but {} names another directory '{}'; "
                    "nothing was written",
                    rp.run_dir.string(), flag, other.string()),
        fmt::format("drop {} to continue the run in place; to branch it off into a new directory, copy it first "
                    "(cp -r {} {}) and resume the copy",
                    flag, rp.run_dir.string(), other.string()));
  };
  if (!run_dir_flag.empty() && !same_dir(run_dir_flag, rp.run_dir)) refuse("--run-dir", run_dir_flag);
  if (run_dir_flag.empty() && !name_flag.empty() && !same_dir(fs::path("runs") / name_flag, rp.run_dir))
    refuse("--name", fs::path("runs") / name_flag);
  return rp;
}

std::unique_ptr<io::RunDirLock> lock_run_dir(const fs::path& run_dir) {
  try {
    return std::make_unique<io::RunDirLock>(run_dir);
  } catch (const io::RunDirInUse& e) {
    throw SettingError(e.what(), e.hint());
  }
}

void refuse_existing_run(const fs::path& run_dir, FrontEnd front_end) {
  if (fs::exists(latest_manifest(run_dir)))
    throw SettingError(fmt::format("run directory '{}' already holds a run", run_dir.string()),
                       fmt::format("continue it with {}, or pick another {} or {}",
                                   resume_call(run_dir.string(), front_end), setting("name").spelled(front_end),
                                   setting("run_dir").spelled(front_end)));
}

fs::path new_run_dir(std::string& name, const std::string& run_dir, const std::string& generated_name,
                     FrontEnd front_end) {
  // A run named after its folder takes the folder's name (--run-dir . or .. names the folder it resolves to).
  if (name.empty() && !run_dir.empty()) {
    std::error_code ec;
    fs::path folder = fs::weakly_canonical(fs::absolute(run_dir), ec);
    if (ec) folder = fs::absolute(run_dir).lexically_normal();
    name = folder.filename().string();
    if (name.empty()) name = folder.parent_path().filename().string();
    if (name.empty() || !check_setting_text(setting("name"), name).empty()) name = "run";
  }
  if (!run_dir.empty() || !name.empty()) {  // asked for: used as it is, or refused
    const fs::path dir = run_dir.empty() ? fs::path("runs") / name : fs::path(run_dir);
    refuse_existing_run(dir, front_end);
    return dir;
  }
  // A generated name: the first free one of name, name-2, name-3, ...
  std::error_code ec;
  name = generated_name;
  for (int n = 2; fs::exists(fs::path("runs") / name, ec); ++n) name = fmt::format("{}-{}", generated_name, n);
  return fs::path("runs") / name;
}

std::string ModelSource::label() const {
  if (is_caller_model(name)) return caller_model_class(name);  // "python:Net": no ':' in a run's name
  return is_spec() ? fs::path(name).stem().string() : name;
}

ModelSource model_source(const std::string& model, const fs::path& run_dir) {
  ModelSource m;
  if (!nn::is_spec_file(model)) {
    m.name = model;
    return m;
  }
  m.spec_origin = train::run_model(model, run_dir);
  m.name = train::spec_copy_name(model);
  try {
    m.spec_text = io::read_user_text(m.spec_origin, io::kModelSpecFile);
  } catch (const IOError& e) {
    if (run_dir.empty()) throw;
    throw IOError(e.what(), fmt::format("the run keeps its spec as {}; restore that file", (run_dir / m.name).string()));
  }
  return m;
}

std::shared_ptr<nn::Module> build_model(const ModelSource& m, int64_t num_classes, int64_t channels, int64_t image_size,
                                        Generator* gen) {
  if (m.is_spec()) return nn::model_from_spec(m.spec_text, m.spec_origin, num_classes, channels, image_size, gen);
  return models::create(m.name, num_classes, channels, image_size, gen);
}

void keep_spec_copy(const ModelSource& m, const fs::path& run_dir) {
  if (!m.is_spec()) return;
  io::write_file_atomic(run_dir / m.name,
                        std::span(reinterpret_cast<const uint8_t*>(m.spec_text.data()), m.spec_text.size()));
}

}  // namespace ember::train
