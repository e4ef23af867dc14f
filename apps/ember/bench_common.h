// Pieces shared by the `ember bench` subcommands (bench.cpp, bench_matmul.cpp, bench_train.cpp):
// list flags, a wall-clock timer that repeats until enough time has passed, the registration hooks.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "cli.h"

namespace ember::cli {

using BenchClock = std::chrono::steady_clock;

// "32,64,128" -> {32, 64, 128}; anything but positive integers is a UsageError naming `flag`.
std::vector<int64_t> parse_positive_list(const std::string& s, const char* flag);
// "lenet5,mnistnet" -> {"lenet5", "mnistnet"}; empty items are a UsageError naming `flag`.
std::vector<std::string> parse_name_list(const std::string& s, const char* flag);

// Seconds per call of fn(), after one warm-up call, repeated until ~min_seconds have passed and
// at least min_reps calls were timed.
template <class F> double time_per_call(F&& fn, double min_seconds, int min_reps) {
  fn();
  int reps = 0;
  auto t0 = BenchClock::now();
  double dt = 0;
  do {
    fn();
    ++reps;
    dt = std::chrono::duration<double>(BenchClock::now() - t0).count();
  } while (dt < min_seconds || reps < min_reps);
  return dt / reps;
}

// Each adds its subcommand under `ember bench` (bench_matmul.cpp, bench_train.cpp).
void register_bench_matmul(CLI::App& bench, Runner& run);
void register_bench_train(CLI::App& bench, Runner& run);

}  // namespace ember::cli
