// Builds report.html of a run from its metrics.jsonl, config and final evaluation.
#pragma once

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ember/io/report.h"
#include "ember/train/evaluate.h"
#include "ember/train/fit_types.h"
#include "ember/train/metrics.h"

namespace ember::train {

struct RunReportInput {
  std::string model, dataset, device;
  int threads = 0;
  nlohmann::json config;                 // config.json: name, label_smoothing, val_split, ... are read from it
  std::filesystem::path run_dir;
  double wall_seconds = 0;
  std::string model_summary;             // Module::summary() of the model
  int64_t num_parameters = 0;
  // What the forward pass ran in: "bf16 autocast (--precision auto: <why>)"; "" leaves it out.
  std::string precision;
  // The epoch model selection chose (1-based; 0: none yet), on which set ("val" or "test"), its
  // selection accuracy and its test accuracy: FitResult's, over every invocation of the run.
  int64_t best_epoch = 0;
  std::string selected_on = "test";
  double best_metric = NAN, best_test_acc = NAN;
  // The epoch whose weights the final evaluation (the summary's test accuracy and the confusion
  // matrix) measured: the selected one, the model eval, predict, export and ember.load give (0: unknown).
  int64_t final_eval_epoch = 0;
};

// The charts of a run from its metrics records: loss, accuracy, learning rate and throughput per
// step interval, the test set's values at the end of each epoch, epoch ends and resume points
// marked (and, for an fp16 run, the loss scale per step interval). label_smoothing > 0 is named in the train loss's legend (the test loss is plain
// cross-entropy, so the two differ by more than overfitting).
// epoch_eval_set: what the per-epoch "test_*" metrics were measured on ("test", or "val" for an
// image folder with a val/ split in runs from before --val-split). with_val: the run had a
// validation set (val_loss / val_acc in its epoch records), drawn as its own series.
std::vector<io::Chart> run_charts(const std::vector<train::MetricRecord>& recs, double label_smoothing,
                                  const std::string& epoch_eval_set = "test", bool with_val = false);

// The summary line of an fp16 run's loss scaling: skipped steps of all, the final scale.
std::string loss_scaling_line(int64_t skipped, int64_t steps, double scale);

// The report's "best epoch" row: "3, chosen on the validation accuracy (91.20%; test 90.85%); its
// weights are checkpoints/best.json".
std::string best_epoch_line(const RunReportInput& in);

// The run's name as the report shows it: config "name", else the run directory's name.
std::string run_display_name(const RunReportInput& in);

// final_eval may be null (an interrupted or failed run): the report then has no confusion matrix.
void write_run_report(const RunReportInput& in, const train::EvalResult* final_eval,
                      const std::vector<std::string>& class_names);

}  // namespace ember::train
