// metrics.jsonl writer and reader (JSON Lines, one record per line, flushed per record).
#include "ember/train/metrics.h"

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <sstream>
#include <nlohmann/json.hpp>

#include "ember/core/error.h"
#include "ember/io/user_file.h"

namespace ember::train {

double MetricRecord::get(const std::string& name, double fallback) const {
  for (const auto& [k, v] : values)
    if (k == name) return v;
  return fallback;
}

std::string to_json_line(const MetricRecord& r) {
  nlohmann::ordered_json j;
  j["kind"] = r.kind;
  j["epoch"] = r.epoch;
  j["step"] = r.step;
  if (r.time > 0) j["time"] = r.time;
  for (const auto& [k, v] : r.values) j[k] = std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
  return j.dump();
}

MetricsWriter::MetricsWriter(const std::filesystem::path& path) : path_(path) {
  f_ = std::fopen(path.c_str(), "a+");
  if (!f_)
    throw IOError(fmt::format("cannot open metrics file '{}': {}", path.string(), std::strerror(errno)),
                  "check that the run directory is writable");
  // A run killed mid-line leaves a torn last line: end it so the next record starts clean.
  if (std::fseek(f_, -1, SEEK_END) == 0 && std::fgetc(f_) != '\n') std::fputc('\n', f_);
}

MetricsWriter::~MetricsWriter() {
  if (f_) std::fclose(f_);
}

double unix_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void MetricsWriter::write(const MetricRecord& r_in) {
  MetricRecord r = r_in;
  if (r.time <= 0) r.time = unix_time();
  std::string line = to_json_line(r) + "\n";
  if (std::fwrite(line.data(), 1, line.size(), f_) != line.size() || std::fflush(f_) != 0)
    throw IOError(fmt::format("cannot write metrics file '{}': {}", path_.string(), std::strerror(errno)));
}

std::vector<MetricRecord> read_metrics(const std::filesystem::path& path) {
  std::vector<MetricRecord> out;
  if (io::path_type(path) == io::PathType::missing) return out;
  std::istringstream in(io::read_user_text(path, io::kMetricsFile));
  std::string line;
  while (std::getline(in, line)) {
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("kind") || !j["kind"].is_string()) continue;
    MetricRecord r;
    r.kind = j["kind"];
    r.epoch = j.value("epoch", int64_t(0));
    r.step = j.value("step", int64_t(0));
    for (const auto& [k, v] : j.items()) {
      if (k == "kind" || k == "epoch" || k == "step") continue;
      if (k == "time") {
        if (v.is_number()) r.time = v.get<double>();
        continue;
      }
      if (v.is_number()) r.values.emplace_back(k, v.get<double>());
      else if (v.is_null()) r.values.emplace_back(k, NAN);
    }
    // A resumed run appends records for steps already logged: keep the newest.
    while (!out.empty()) {
      auto it = std::find_if(out.rbegin(), out.rend(), [&](const MetricRecord& o) { return o.kind == r.kind; });
      if (it == out.rend() || it->step < r.step || (it->step == r.step && it->epoch < r.epoch)) break;
      out.erase(std::next(it).base());
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace ember::train
