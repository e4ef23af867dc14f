// report.html of a training run (`ember train`, ember.fit): per-step charts from metrics.jsonl (so a resumed run shows all of
// it, resume points marked), the epoch table, the model, environment, config and the final
// confusion matrix.
#include "ember/train/run_report.h"

#include <fmt/format.h>

#include <cmath>
#include <ctime>

#include "ember/env/doctor.h"
#include "ember/train/gpu_monitor.h"
#include "ember/train/run_files.h"
#include "ember/train/settings.h"

namespace ember::train {

std::vector<io::Chart> run_charts(const std::vector<train::MetricRecord>& recs, double label_smoothing,
                                  const std::string& set, bool with_val) {
  const std::string train_loss_name =
      label_smoothing > 0 ? fmt::format("train loss (with label smoothing {:g})", label_smoothing) : "train loss";
  io::Series tl{train_loss_name, {}, {}}, vl{set + " loss (cross-entropy)", {}, {}};
  io::Series ta{"train", {}, {}}, va{set, {}, {}}, lr{"learning rate", {}, {}};
  io::Series val_loss{"val loss (cross-entropy)", {}, {}}, val_acc{"val", {}, {}};
  io::Series sp{"per step interval", {}, {}}, sp_epoch{"epoch average", {}, {}};
  io::Series scale{"loss scale", {}, {}};  // fp16 runs (dynamic loss scaling)
  std::vector<io::Marker> markers;
  for (const auto& r : recs) {
    const double x = double(r.step);
    if (r.kind == "step") {
      tl.x.push_back(x), tl.y.push_back(r.get("loss", NAN));
      ta.x.push_back(x), ta.y.push_back(100 * r.get("acc", NAN));
      lr.x.push_back(x), lr.y.push_back(r.get("lr", NAN));
      sp.x.push_back(x), sp.y.push_back(r.get("samples_per_s", NAN));
      if (!std::isnan(r.get("loss_scale", NAN))) scale.x.push_back(x), scale.y.push_back(r.get("loss_scale", NAN));
    } else if (r.kind == "epoch") {
      vl.x.push_back(x), vl.y.push_back(r.get("test_loss", NAN));
      va.x.push_back(x), va.y.push_back(100 * r.get("test_acc", NAN));
      val_loss.x.push_back(x), val_loss.y.push_back(r.get("val_loss", NAN));
      val_acc.x.push_back(x), val_acc.y.push_back(100 * r.get("val_acc", NAN));
      sp_epoch.x.push_back(x), sp_epoch.y.push_back(r.get("samples_per_s", NAN));
      markers.push_back({x, fmt::format("end of epoch {}", r.epoch), false});
    } else if (r.kind == "resume") {
      markers.push_back({x, fmt::format("resumed at step {}", r.step), true});
    } else if (r.kind == "oom") {
      markers.push_back({x, fmt::format("out of memory: micro-batch {} -> {}", int64_t(r.get("previous_micro_batch")),
                                        int64_t(r.get("micro_batch"))), true});
    }
  }
  // Runs from before per-step learning rates were logged have it in the epoch records only.
  if (lr.x.empty())
    for (const auto& r : recs)
      if (r.kind == "epoch") lr.x.push_back(double(r.step)), lr.y.push_back(r.get("lr", NAN));
  const std::string x_label = "step (dotted lines: epoch ends)";
  std::vector<io::Series> losses = {tl}, accs = {ta};
  if (with_val) losses.push_back(val_loss), accs.push_back(val_acc);
  losses.push_back(vl), accs.push_back(va);
  std::vector<io::Chart> charts = {{"Loss", x_label, "loss", losses, markers},
                                   {"Accuracy", x_label, "accuracy (%)", accs, markers},
                                   {"Learning rate", x_label, "learning rate", {lr}, markers},
                                   {"Throughput", x_label, "samples/s", {sp, sp_epoch}, markers}};
  if (!scale.x.empty()) charts.push_back({"Loss scale (fp16)", x_label, "loss scale", {scale}, markers});
  for (auto& c : train::gpu_charts(recs, x_label, markers)) charts.push_back(std::move(c));  // CUDA runs
  return charts;
}

std::string loss_scaling_line(int64_t skipped, int64_t steps, double scale) {
  return fmt::format("{} of {} optimizer steps skipped (inf/NaN gradients), loss scale {:g} at the end (dynamic: "
                     "2^16 at the start, x2 after 2000 good steps, x0.5 on an overflow)", skipped, steps, scale);
}

std::string run_display_name(const RunReportInput& in) {
  if (in.config.is_object() && in.config.contains("name") && in.config["name"].is_string() &&
      !in.config["name"].get<std::string>().empty())
    return in.config["name"].get<std::string>();
  return in.run_dir.filename().empty() ? in.run_dir.parent_path().filename().string() : in.run_dir.filename().string();
}

std::string best_epoch_line(const RunReportInput& in) {
  std::string line = fmt::format("{}, chosen on the {} accuracy", in.best_epoch,
                                 in.selected_on == "val" ? "validation" : "test");
  if (!std::isnan(in.best_metric)) line += fmt::format(" ({:.2f}%", 100 * in.best_metric);
  if (in.selected_on == "val" && !std::isnan(in.best_test_acc)) line += fmt::format("; test {:.2f}%", 100 * in.best_test_acc);
  if (!std::isnan(in.best_metric)) line += ")";
  return line + "; its weights are checkpoints/best.json";
}

namespace {
std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}
}  // namespace

void write_run_report(const RunReportInput& in, const train::EvalResult* ev, const std::vector<std::string>& names) {
  auto recs = train::read_metrics(in.run_dir / kMetricsFile);
  io::ReportData d;
  d.title = fmt::format("ember run {}: {} on {}", run_display_name(in), in.model, in.dataset);
  const double smoothing = in.config.is_object() ? in.config.value("label_smoothing", 0.0) : 0.0;
  const bool folder_val = in.config.is_object() && in.config.contains("image_folder") &&
                          in.config["image_folder"].value("layout", std::string()).find("val/") != std::string::npos;
  // Runs with val_split in their config evaluate the validation set (val_*) and the test set
  // (test_*) each epoch. In older runs an image folder's val/ was evaluated as "test_*".
  const bool has_val_split = in.config.is_object() && in.config.contains("val_split");
  const bool with_val = has_val_split && (folder_val || in.config.value("val_split", 0.0) > 0);
  const std::string set = folder_val && !has_val_split ? "val" : "test";
  d.charts = run_charts(recs, smoothing, set, with_val);
  d.table_header = {"epoch", "train loss", "train acc"};
  if (with_val) d.table_header.insert(d.table_header.end(), {"val loss", "val acc"});
  d.table_header.insert(d.table_header.end(), {set + " loss", set + " acc", "samples/s", "data wait", "seconds"});
  int resumes = 0;
  int64_t skipped = 0, last_step = 0;  // fp16: optimizer steps the loss scaler skipped
  double last_scale = NAN;
  std::string ooms;  // "128 -> 64 at step 3, 64 -> 32 at step 3"
  for (const auto& r : recs) {
    if (r.kind == "resume") ++resumes;
    if (r.kind == "oom")
      ooms += fmt::format("{}micro-batch {} -> {} x accumulate {} at step {}", ooms.empty() ? "" : "; ",
                          int64_t(r.get("previous_micro_batch")), int64_t(r.get("micro_batch")),
                          int64_t(r.get("accumulate")), r.step);
    if (r.kind != "epoch") continue;
    if (!std::isnan(r.get("loss_scale", NAN)))
      skipped += int64_t(r.get("skipped_steps")), last_scale = r.get("loss_scale"), last_step = r.step;
    auto loss = [&](const char* k) {
      const double v = r.get(k, NAN);
      return std::isnan(v) ? std::string("-") : fmt::format("{:.4f}", v);
    };
    auto acc = [&](const char* k) {
      const double v = r.get(k, NAN);
      return std::isnan(v) ? std::string("-") : fmt::format("{:.2f}%", 100 * v);
    };
    const std::string epoch = std::to_string(r.epoch) + (r.epoch == in.best_epoch ? " (best)" : "");
    std::vector<std::string> row = {epoch, loss("train_loss"), acc("train_acc")};
    if (with_val) row.insert(row.end(), {loss("val_loss"), acc("val_acc")});
    row.insert(row.end(), {loss("test_loss"), acc("test_acc"), fmt::format("{:.0f}", r.get("samples_per_s", NAN)),
                           fmt::format("{:.1f}%", 100 * r.get("data_wait", NAN)),
                           fmt::format("{:.1f}", r.get("seconds", NAN))});
    d.table_rows.push_back(std::move(row));
  }
  if (smoothing > 0)
    d.table_header[1] = fmt::format("train loss (label smoothing {:g})", smoothing);
  if (ev) {
    // The model the user gets (eval, predict, export, ember.load: the selected epoch), named as such.
    const std::string which = in.final_eval_epoch > 0 ? fmt::format(" (epoch {}'s weights: the model eval, predict "
                                                                    "and export use)", in.final_eval_epoch)
                                                      : "";
    d.summary.push_back({"test accuracy", fmt::format("{:.2f}% of {} samples{}", 100 * ev->accuracy, ev->samples, which)});
    d.summary.push_back({"test loss", fmt::format("{:.4f} (cross-entropy)", ev->loss)});
    d.class_names = names;
    d.confusion = ev->confusion;
  } else {
    d.summary.push_back({"status", "not finished (interrupted or failed); see the checkpoints"});
  }
  if (in.best_epoch > 0)
    d.summary.push_back({"best epoch", best_epoch_line(in)});
  d.summary.push_back({"model", in.num_parameters > 0 ? fmt::format("{} ({} parameters)", in.model, in.num_parameters)
                                                      : in.model});
  d.summary.push_back({"data", in.dataset + (names.empty() ? "" : fmt::format(" ({} classes)", names.size()))});
  if (!in.device.empty()) d.summary.push_back({"device", in.device});  // what it trained on, and why
  if (!in.precision.empty()) d.summary.push_back({"precision", in.precision});
  if (resumes > 0) d.summary.push_back({"resumed", fmt::format("{} time{} (orange dashed lines on the charts)", resumes,
                                                               resumes == 1 ? "" : "s")});
  if (!std::isnan(last_scale))
    d.summary.push_back({"loss scaling (fp16)", loss_scaling_line(skipped, last_step, last_scale)});
  if (!ooms.empty())
    d.summary.push_back({"out of memory", ooms + " (the same samples per optimizer step; dashed lines on the charts)"});
  d.summary.push_back({"wall time (this invocation)", fmt::format("{:.1f} s, training and final evaluation", in.wall_seconds)});
  d.summary.push_back({"report written", utc_now()});
  env::EnvFacts f = env::probe_environment(env::ProbeDepth::DriverOnly);
  d.summary.push_back({"ember version", f.ember_version});
  if (!in.model_summary.empty()) d.preformatted.push_back({"Model", in.model_summary});
  d.environment = {{"ember", f.ember_version},    {"compiler", f.compiler},
                   {"device", in.device},         {"threads", std::to_string(in.threads)},
                   {"OS", f.os},                  {"CPU", f.cpu_model},
                   {"cores", std::to_string(f.cores)},
                   {"NVIDIA driver", f.driver_found ? f.driver_version : "not found (" + f.driver_error + ")"},
                   {"CUDA in this build", f.built_with_cuda ? "yes" : "no"}};
  d.config = train::config_table(in.config.dump());  // the settings in the table's order, then the rest
  io::write_report(in.run_dir / kReportFile, d);
}

}  // namespace ember::train
