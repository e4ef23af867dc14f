// Builds report.html of a run from its metrics.jsonl, config and final evaluation.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ember/train/fit.h"

namespace ember::cli {

struct RunReportInput {
  std::string model, dataset, device;
  int threads = 0;
  nlohmann::json config;
  std::filesystem::path run_dir;
  double wall_seconds = 0;
};

// final_eval may be null (an interrupted or failed run): the report then has no confusion matrix.
void write_run_report(const RunReportInput& in, const train::EvalResult* final_eval,
                      const std::vector<std::string>& class_names);

}  // namespace ember::cli
