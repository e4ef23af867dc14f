// ember bench: registers the subcommands (matmul in bench_matmul.cpp, train in bench_train.cpp) and
// runs host<->device copy bandwidth here; also what the benches share: the list-flag parsers, the
// timing flags (ember/core/timing.h) and how a point's timing is printed.
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

#include "bench_common.h"
#include "cli.h"
#include "ember/ember.h"

namespace ember::cli {

std::vector<int64_t> parse_positive_list(const std::string& s, const char* flag) {
  std::vector<int64_t> out;
  std::stringstream ss(s);
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    try {
      size_t pos = 0;
      long long v = std::stoll(tok, &pos);
      if (pos != tok.size() || v <= 0) throw std::invalid_argument("");
      out.push_back(v);
    } catch (const std::exception&) {
      throw UsageError(fmt::format("{}: '{}' is not a positive integer", flag, tok),
                       fmt::format("give a comma-separated list, e.g. {} 256,512,1024", flag));
    }
  }
  if (out.empty()) throw UsageError(fmt::format("{} is empty", flag));
  return out;
}

std::vector<std::string> parse_name_list(const std::string& s, const char* flag) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string tok;
  while (std::getline(ss, tok, ','))
    if (tok.empty())
      throw UsageError(fmt::format("{} {}: an empty name", flag, s), fmt::format("e.g. {} lenet5,mnistnet", flag));
    else
      out.push_back(tok);
  if (out.empty()) throw UsageError(fmt::format("{} is empty", flag));
  return out;
}

void add_timing_flags(CLI::App* app, TimingPlan& plan, const std::string& min_calls_flag, const std::string& calls) {
  add_number(app, "--min-time", plan.min_seconds, "Seconds each repeat times at least",
             between(0, 3600, "an hour per repeat is beyond any benchmark here"))->capture_default_str();
  add_number(app, min_calls_flag, plan.min_calls, fmt::format("Timed {} per repeat, at least", calls), at_least(1))
      ->capture_default_str();
  add_number(app, "--repeats", plan.repeats, "Repeats per point; the figure is their median",
             between(1, 1000, "the median of a thousand is as still as it gets"))->capture_default_str();
  add_number(app, "--warmup", plan.warmup_calls, fmt::format("Untimed {} before the settling wait", calls),
             at_least(0))->capture_default_str();
  add_number(app, "--max-warmup-time", plan.max_warmup_seconds, "Longest wait for the time to settle (0: none)",
             between(0, 3600, "an hour of warm-up is beyond any benchmark here"))->capture_default_str();
}

std::string timing_header(const TimingPlan& p, const std::string& call, const std::string& calls) {
  const std::string each = fmt::format("timing  median of {}, each >= {:g} s and >= {}\n", plural(p.repeats, "repeat"),
                                       p.min_seconds, plural(p.min_calls, call, calls));
  const std::string warm =
      p.max_warmup_seconds > 0
          ? fmt::format("        after {} and until the {} time settles (within {:g}%, at most {:g} s)\n",
                        plural(p.warmup_calls, "warm-up " + call, "warm-up " + calls), call, p.settle_tolerance * 100,
                        p.max_warmup_seconds)
          : fmt::format("        after {} (no settling: --max-warmup-time 0)\n",
                        plural(p.warmup_calls, "warm-up " + call, "warm-up " + calls));
  return each + warm + "        ±N%: every repeat lies within N% of the median\n";
}

nlohmann::json plan_json(const TimingPlan& p, const std::string& calls) {
  return {{"min_time", p.min_seconds},          {"min_" + calls, p.min_calls},
          {"repeats", p.repeats},               {"warmup_" + calls, p.warmup_calls},
          {"max_warmup_time", p.max_warmup_seconds}, {"settle_tolerance", p.settle_tolerance}};
}

nlohmann::json timing_json(const Timing& t, const std::string& calls, const std::string& value_key,
                           const std::function<double(double)>& value) {
  nlohmann::json per = nlohmann::json::array();
  std::vector<double> values;
  for (size_t i = 0; i < t.seconds_per_call.size(); ++i) {
    values.push_back(value(t.seconds_per_call[i]));
    per.push_back({{calls, t.calls[i]}, {"seconds", t.seconds[i]}, {value_key, values.back()}});
  }
  const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  return {{"repeats", t.seconds_per_call.size()},
          {calls, t.total_calls()},
          {"seconds", t.total_seconds()},
          {"spread", t.spread()},
          {value_key + "_min", values.empty() ? 0 : *lo},
          {value_key + "_median", value(t.median())},
          {value_key + "_max", values.empty() ? 0 : *hi},
          {"per_repeat", per},
          {"warmup", {{calls, t.warmup_calls}, {"seconds", t.warmup_seconds}, {"settled", t.settled}}}};
}

std::string spread_text(const Timing& t) {
  const double pct = 100 * t.spread();
  return pct < 9.95 ? fmt::format("±{:.1f}%", pct) : fmt::format("±{:.0f}%", pct);
}

std::string unsettled_note(const Timing& t, const TimingPlan& p, const std::string& call, const std::string& calls) {
  if (t.settled || p.max_warmup_seconds <= 0) return "";
  return fmt::format("the {} time had not settled after {:.2g} s of warm-up ({}), spread {}: rerun on a quieter "
                     "machine or raise --max-warmup-time (now {:g})",
                     call, t.warmup_seconds, plural(t.warmup_calls, call, calls), spread_text(t), p.max_warmup_seconds);
}

namespace {
struct BandwidthOpts {
  int64_t mib = 32;
  bool range = false, csv = false, json = false;
  TimingPlan plan;  // the shared timing flags; each copy kind is one timed point
};

// Host<->device and device<->device copy bandwidth, pinned and pageable, as CUDA's bandwidthTest;
// each kind timed to a steady state (ember/core/timing.h), its median repeat printed.
int run_bandwidth(const BandwidthOpts& o) {
  if (cuda::device_count() == 0) {
    // --json readers get JSON on stdout either way: no results, and why.
    if (o.json)
      fmt::print("{}\n", nlohmann::json{{"gpu", "no CUDA device: " + cuda::unavailable_reason()},
                                        {"results", nlohmann::json::array()}}.dump(2));
    fmt::print(stderr, "ember: error: no CUDA device: {}\n  hint: run `ember doctor` to see what is missing\n",
               cuda::unavailable_reason());
    return kExitFailed;
  }
  std::vector<int64_t> sizes_mib;
  if (o.range) {
    for (int64_t m = 1; m <= 256; m *= 2) sizes_mib.push_back(m);
  } else {
    sizes_mib.push_back(o.mib);
  }
  nlohmann::json j = nlohmann::json::array();
  std::vector<std::string> notes;
  if (o.csv) fmt::print("device,mib,h2d_pageable,d2h_pageable,h2d_pinned,d2h_pinned,d2d,spread\n");
  else if (!o.json)
    fmt::print("copy bandwidth, GB/s (timed with CUDA events)\n{}{:>7} {:>5} {:>13} {:>13} {:>11} {:>11} {:>9} {:>7}\n",
               timing_header(o.plan, "copy", "copies"), "device", "MiB", "H2D pageable", "D2H pageable", "H2D pinned",
               "D2H pinned", "D2D", "spread");
  for (int g = 0; g < cuda::device_count(); ++g)
    for (int64_t m : sizes_mib) {
      CopyBandwidth b = cuda::copy_bandwidth(g, size_t(m) << 20, o.plan);
      const std::pair<const char*, const CopyRate*> kinds[] = {{"h2d_pageable", &b.h2d_pageable},
                                                               {"d2h_pageable", &b.d2h_pageable},
                                                               {"h2d_pinned", &b.h2d_pinned},
                                                               {"d2h_pinned", &b.d2h_pinned},
                                                               {"d2d", &b.d2d}};
      nlohmann::json row = {{"device", g}, {"mib", m}}, timing = nlohmann::json::object();
      const Timing* worst = &b.h2d_pageable.timing;  // the row's widest spread, for the table
      for (const auto& [name, rate] : kinds) {
        row[name] = rate->gbps;
        timing[name] = timing_json(rate->timing, "copies", "gbps", [r = rate](double s) { return r->gbps_at(s); });
        if (rate->timing.spread() > worst->spread()) worst = &rate->timing;
        const std::string why = unsettled_note(rate->timing, o.plan, "copy", "copies");
        if (!why.empty()) notes.push_back(fmt::format("cuda:{} {} MiB {}: {}", g, m, name, why));
      }
      row["timing"] = timing;
      j.push_back(row);
      if (o.csv)
        fmt::print("cuda:{},{},{:.2f},{:.2f},{:.2f},{:.2f},{:.2f},{:.4f}\n", g, m, b.h2d_pageable.gbps,
                   b.d2h_pageable.gbps, b.h2d_pinned.gbps, b.d2h_pinned.gbps, b.d2d.gbps, worst->spread());
      else if (!o.json)
        fmt::print("{:>7} {:>5} {:>13.2f} {:>13.2f} {:>11.2f} {:>11.2f} {:>9.1f} {:>7}\n", fmt::format("cuda:{}", g), m,
                   b.h2d_pageable.gbps, b.d2h_pageable.gbps, b.h2d_pinned.gbps, b.d2h_pinned.gbps, b.d2d.gbps,
                   spread_text(*worst));
    }
  if (!o.json && !o.csv)
    for (const auto& s : notes) fmt::print("{}\n", s);
  if (o.json) fmt::print("{}\n", nlohmann::json{{"timing", plan_json(o.plan, "copies")}, {"results", j}}.dump(2));
  return kExitOk;
}

}  // namespace

void register_bench(CLI::App& root, Runner& run) {
  auto* bench = root.add_subcommand("bench", "Benchmarks: matmul, bandwidth, train, data");
  bench->require_subcommand(1);

  register_bench_matmul(*bench, run);

  auto bwo = std::make_shared<BandwidthOpts>();
  auto* bw = bench->add_subcommand("bandwidth", "Host<->device copy bandwidth (needs a CUDA device)");
  add_number(bw, "--mib", bwo->mib, "Transfer size in MiB (quick mode)",
             between(1, 1 << 20, "1 TiB is beyond any GPU's memory"))->capture_default_str();
  bw->add_flag("--range", bwo->range, "Sizes 1..256 MiB, doubling");
  bw->add_flag("--csv", bwo->csv, "Print CSV");
  bw->add_flag("--json", bwo->json, "Print JSON");
  add_timing_flags(bw, bwo->plan, "--min-calls", "copies");
  bw->callback([&run, bwo] { run = [bwo] { return run_bandwidth(*bwo); }; });

  register_bench_train(*bench, run);
  register_bench_data(*bench, run);
}

}  // namespace ember::cli
