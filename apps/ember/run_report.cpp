// report.html for `ember train`: per-step charts from metrics.jsonl (so a resumed run shows all of
// it, resume points marked), the epoch table, the model, environment, config and the final
// confusion matrix.
#include "run_report.h"

#include <fmt/format.h>

#include <cmath>
#include <ctime>

#include "ember/env/doctor.h"

namespace ember::cli {

std::vector<io::Chart> run_charts(const std::vector<train::MetricRecord>& recs, double label_smoothing,
                                  const std::string& set) {
  const std::string train_loss_name =
      label_smoothing > 0 ? fmt::format("train loss (with label smoothing {:g})", label_smoothing) : "train loss";
  io::Series tl{train_loss_name, {}, {}}, vl{set + " loss (cross-entropy)", {}, {}};
  io::Series ta{"train", {}, {}}, va{set, {}, {}}, lr{"learning rate", {}, {}};
  io::Series sp{"per step interval", {}, {}}, sp_epoch{"epoch average", {}, {}};
  std::vector<io::Marker> markers;
  for (const auto& r : recs) {
    const double x = double(r.step);
    if (r.kind == "step") {
      tl.x.push_back(x), tl.y.push_back(r.get("loss", NAN));
      ta.x.push_back(x), ta.y.push_back(100 * r.get("acc", NAN));
      lr.x.push_back(x), lr.y.push_back(r.get("lr", NAN));
      sp.x.push_back(x), sp.y.push_back(r.get("samples_per_s", NAN));
    } else if (r.kind == "epoch") {
      vl.x.push_back(x), vl.y.push_back(r.get("test_loss", NAN));
      va.x.push_back(x), va.y.push_back(100 * r.get("test_acc", NAN));
      sp_epoch.x.push_back(x), sp_epoch.y.push_back(r.get("samples_per_s", NAN));
      markers.push_back({x, fmt::format("end of epoch {}", r.epoch), false});
    } else if (r.kind == "resume") {
      markers.push_back({x, fmt::format("resumed at step {}", r.step), true});
    }
  }
  // Runs from before per-step learning rates were logged have it in the epoch records only.
  if (lr.x.empty())
    for (const auto& r : recs)
      if (r.kind == "epoch") lr.x.push_back(double(r.step)), lr.y.push_back(r.get("lr", NAN));
  const std::string x_label = "step (dotted lines: epoch ends)";
  std::vector<io::Chart> charts = {{"Loss", x_label, "loss", {tl, vl}, markers},
                                   {"Accuracy", x_label, "accuracy (%)", {ta, va}, markers},
                                   {"Learning rate", x_label, "learning rate", {lr}, markers},
                                   {"Throughput", x_label, "samples/s", {sp, sp_epoch}, markers}};
  return charts;
}

std::string run_display_name(const RunReportInput& in) {
  if (in.config.is_object() && in.config.contains("name") && in.config["name"].is_string() &&
      !in.config["name"].get<std::string>().empty())
    return in.config["name"].get<std::string>();
  return in.run_dir.filename().empty() ? in.run_dir.parent_path().filename().string() : in.run_dir.filename().string();
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
  auto recs = train::read_metrics(in.run_dir / "metrics.jsonl");
  io::ReportData d;
  d.title = fmt::format("ember run {}: {} on {}", run_display_name(in), in.model, in.dataset);
  const double smoothing = in.config.is_object() ? in.config.value("label_smoothing", 0.0) : 0.0;
  // An image folder with val/: the per-epoch evaluation ran on it, the final one on test/.
  const bool val = in.config.is_object() && in.config.contains("image_folder") &&
                   in.config["image_folder"].value("layout", std::string()).find("val/") != std::string::npos;
  const std::string set = val ? "val" : "test";
  d.charts = run_charts(recs, smoothing, set);
  d.table_header = {"epoch", "train loss", "train acc", set + " loss", set + " acc", "samples/s", "data wait", "seconds"};
  int resumes = 0;
  for (const auto& r : recs) {
    if (r.kind == "resume") ++resumes;
    if (r.kind != "epoch") continue;
    d.table_rows.push_back({std::to_string(r.epoch), fmt::format("{:.4f}", r.get("train_loss", NAN)),
                            fmt::format("{:.2f}%", 100 * r.get("train_acc", NAN)),
                            fmt::format("{:.4f}", r.get("test_loss", NAN)),
                            fmt::format("{:.2f}%", 100 * r.get("test_acc", NAN)),
                            fmt::format("{:.0f}", r.get("samples_per_s", NAN)),
                            fmt::format("{:.1f}%", 100 * r.get("data_wait", NAN)),
                            fmt::format("{:.1f}", r.get("seconds", NAN))});
  }
  if (smoothing > 0)
    d.table_header[1] = fmt::format("train loss (label smoothing {:g})", smoothing);
  if (ev) {
    d.summary.push_back({"test accuracy", fmt::format("{:.2f}% of {} samples", 100 * ev->accuracy, ev->samples)});
    d.summary.push_back({"test loss", fmt::format("{:.4f} (cross-entropy)", ev->loss)});
    d.class_names = names;
    d.confusion = ev->confusion;
  } else {
    d.summary.push_back({"status", "not finished (interrupted or failed); see the checkpoints"});
  }
  d.summary.push_back({"model", in.num_parameters > 0 ? fmt::format("{} ({} parameters)", in.model, in.num_parameters)
                                                      : in.model});
  d.summary.push_back({"data", in.dataset + (names.empty() ? "" : fmt::format(" ({} classes)", names.size()))});
  if (resumes > 0) d.summary.push_back({"resumed", fmt::format("{} time{} (orange dashed lines on the charts)", resumes,
                                                               resumes == 1 ? "" : "s")});
  d.summary.push_back({"wall time (this invocation)", fmt::format("{:.1f} s", in.wall_seconds)});
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
  for (const auto& [k, v] : in.config.items()) d.config.push_back({k, v.is_string() ? v.get<std::string>() : v.dump()});
  io::write_report(in.run_dir / "report.html", d);
}

}  // namespace ember::cli
