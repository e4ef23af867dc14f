// The files of a run directory, named once for every reader and writer (the engine, the plan, the
// report, eval/predict/export, resume, the CLI's messages and ember.fit's):
//   runs/<name>/config.json        the run's settings (written when the run directory is claimed)
//               metrics.jsonl      one record per line (metrics.h)
//               report.html        the run's report (run_report.h)
//               checkpoints/latest.json, best.json, step-N.safetensors (checkpoint.h)
#pragma once

#include <filesystem>

namespace ember::train {

inline constexpr const char* kConfigFile = "config.json";
inline constexpr const char* kMetricsFile = "metrics.jsonl";
inline constexpr const char* kReportFile = "report.html";
inline constexpr const char* kCheckpointsDir = "checkpoints";
// Checkpoint tags: the manifest of a tag is "<tag>.json" in the checkpoints directory.
inline constexpr const char* kLatestTag = "latest";  // the last checkpoint written (what --resume continues)
inline constexpr const char* kBestTag = "best";      // the epoch model selection chose (what eval reads)
inline constexpr const char* kLatestManifest = "latest.json";
inline constexpr const char* kBestManifest = "best.json";

inline std::filesystem::path checkpoints_dir(const std::filesystem::path& run_dir) { return run_dir / kCheckpointsDir; }
// runs/<name>/checkpoints/latest.json: a run holds a run once this exists.
inline std::filesystem::path latest_manifest(const std::filesystem::path& run_dir) {
  return checkpoints_dir(run_dir) / kLatestManifest;
}
inline std::filesystem::path best_manifest(const std::filesystem::path& run_dir) {
  return checkpoints_dir(run_dir) / kBestManifest;
}

}  // namespace ember::train
