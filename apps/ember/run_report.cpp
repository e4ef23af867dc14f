// report.html for `ember train`: charts from metrics.jsonl (so a resumed run shows all epochs),
// the epoch table, environment, config and the final confusion matrix.
#include "run_report.h"

#include <fmt/format.h>

#include "ember/env/doctor.h"
#include "ember/io/report.h"
#include "ember/train/metrics.h"

namespace ember::cli {

void write_run_report(const RunReportInput& in, const train::EvalResult* ev, const std::vector<std::string>& names) {
  auto recs = train::read_metrics(in.run_dir / "metrics.jsonl");
  io::ReportData d;
  d.title = fmt::format("ember run: {} on {}", in.model, in.dataset);
  io::Series tl{"train", {}, {}}, vl{"test", {}, {}}, ta{"train", {}, {}}, va{"test", {}, {}}, sp{"epoch average", {}, {}};
  io::Series step_sp{"per step interval", {}, {}};
  d.table_header = {"epoch", "train loss", "train acc", "test loss", "test acc", "samples/s", "data wait", "seconds"};
  for (const auto& r : recs) {
    if (r.kind == "epoch") {
      double e = double(r.epoch);
      tl.x.push_back(e), tl.y.push_back(r.get("train_loss", NAN));
      vl.x.push_back(e), vl.y.push_back(r.get("test_loss", NAN));
      ta.x.push_back(e), ta.y.push_back(100 * r.get("train_acc", NAN));
      va.x.push_back(e), va.y.push_back(100 * r.get("test_acc", NAN));
      sp.x.push_back(e), sp.y.push_back(r.get("samples_per_s", NAN));
      d.table_rows.push_back({std::to_string(r.epoch), fmt::format("{:.4f}", r.get("train_loss", NAN)),
                              fmt::format("{:.2f}%", 100 * r.get("train_acc", NAN)),
                              fmt::format("{:.4f}", r.get("test_loss", NAN)),
                              fmt::format("{:.2f}%", 100 * r.get("test_acc", NAN)),
                              fmt::format("{:.0f}", r.get("samples_per_s", NAN)),
                              fmt::format("{:.1f}%", 100 * r.get("data_wait", NAN)),
                              fmt::format("{:.1f}", r.get("seconds", NAN))});
    } else if (r.kind == "step") {
      step_sp.x.push_back(double(r.step)), step_sp.y.push_back(r.get("samples_per_s", NAN));
    }
  }
  d.charts = {{"Loss per epoch", "epoch", "cross-entropy", {tl, vl}},
              {"Accuracy per epoch", "epoch", "accuracy (%)", {ta, va}},
              {"Throughput per epoch", "epoch", "samples/s", {sp}},
              {"Throughput per step interval", "step", "samples/s", {step_sp}}};
  if (ev) {
    d.summary.push_back({"test accuracy", fmt::format("{:.2f}% of {} samples", 100 * ev->accuracy, ev->samples)});
    d.summary.push_back({"test loss", fmt::format("{:.4f}", ev->loss)});
    d.class_names = names;
    d.confusion = ev->confusion;
  } else {
    d.summary.push_back({"status", "not finished (interrupted or failed); see the checkpoints"});
  }
  d.summary.push_back({"wall time (this invocation)", fmt::format("{:.1f} s", in.wall_seconds)});
  env::EnvFacts f = env::probe_environment(env::ProbeDepth::DriverOnly);
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
