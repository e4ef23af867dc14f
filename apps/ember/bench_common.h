// Pieces shared by the `ember bench` subcommands (bench.cpp, bench_matmul.cpp, bench_train.cpp):
// list flags, the timing flags and how a point's timing is printed, the registration hooks.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli.h"
#include "ember/core/timing.h"

namespace ember::cli {

// "32,64,128" -> {32, 64, 128}; anything but positive integers is a UsageError naming `flag`.
std::vector<int64_t> parse_positive_list(const std::string& s, const char* flag);
// "lenet5,mnistnet" -> {"lenet5", "mnistnet"}; empty items are a UsageError naming `flag`.
std::vector<std::string> parse_name_list(const std::string& s, const char* flag);

// The timing flags every bench shares (ember/core/timing.h): --min-time, --repeats, --warmup,
// --max-warmup-time, and the per-repeat minimum count under `min_calls_flag` ("--steps" for train,
// "--min-calls" for matmul and bandwidth), written into `plan`, whose values are the defaults shown.
// `calls` names the calls in the help ("steps", "matmuls", "copies").
void add_timing_flags(CLI::App* app, TimingPlan& plan, const std::string& min_calls_flag, const std::string& calls);

// The table header's lines on how each point was timed ("timing  median of 3 repeats, each >= 0.5 s
// and >= 10 steps, ..."), each ending in a newline.
std::string timing_header(const TimingPlan& plan, const std::string& call, const std::string& calls);

// The plan as the JSON output's "timing" object (min_time, min_calls under `calls`, repeats, ...).
nlohmann::json plan_json(const TimingPlan& plan, const std::string& calls);

// The JSON of a point's timing: "repeats", `calls` (the total timed count), "seconds" (the total
// timed seconds), "per_repeat" [{`calls`, "seconds", `value_key`}], "warmup" {`calls`, "seconds",
// "settled"}, "spread" (every repeat within this fraction of the median), and `value_key` + "_min",
// "_median", "_max", where value(seconds per call) is the bench's figure (samples/s, ms, GB/s).
nlohmann::json timing_json(const Timing& t, const std::string& calls, const std::string& value_key,
                           const std::function<double(double)>& value);

// "+-2.1%" / "+-14%": the spread as the tables print it.
std::string spread_text(const Timing& t);

// "" when the warm-up settled (or settling was off: --max-warmup-time 0); else why not, for a note.
std::string unsettled_note(const Timing& t, const TimingPlan& plan, const std::string& call, const std::string& calls);

// Each adds its subcommand under `ember bench` (bench_matmul.cpp, bench_train.cpp).
void register_bench_matmul(CLI::App& bench, Runner& run);
void register_bench_train(CLI::App& bench, Runner& run);
void register_bench_data(CLI::App& bench, Runner& run);

}  // namespace ember::cli
