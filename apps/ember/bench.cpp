// ember bench: registers the subcommands (matmul in bench_matmul.cpp, train in bench_train.cpp) and
// runs host<->device copy bandwidth here; also the list-flag parsers the benches share.
#include <fmt/format.h>

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

namespace {
struct BandwidthOpts {
  int64_t mib = 32;
  bool range = false, csv = false, json = false;
};

// Host<->device and device<->device copy bandwidth, pinned and pageable, as CUDA's bandwidthTest.
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
  if (o.csv) fmt::print("device,mib,h2d_pageable,d2h_pageable,h2d_pinned,d2h_pinned,d2d\n");
  else if (!o.json)
    fmt::print("copy bandwidth, GB/s (timed with CUDA events)\n{:>7} {:>5} {:>13} {:>13} {:>11} {:>11} {:>9}\n", "device",
               "MiB", "H2D pageable", "D2H pageable", "H2D pinned", "D2H pinned", "D2D");
  for (int g = 0; g < cuda::device_count(); ++g)
    for (int64_t m : sizes_mib) {
      CopyBandwidth b = cuda::copy_bandwidth(g, size_t(m) << 20, m <= 32 ? 20 : 5);
      j.push_back({{"device", g}, {"mib", m}, {"h2d_pageable", b.h2d_pageable}, {"d2h_pageable", b.d2h_pageable},
                   {"h2d_pinned", b.h2d_pinned}, {"d2h_pinned", b.d2h_pinned}, {"d2d", b.d2d}});
      if (o.csv)
        fmt::print("cuda:{},{},{:.2f},{:.2f},{:.2f},{:.2f},{:.2f}\n", g, m, b.h2d_pageable, b.d2h_pageable, b.h2d_pinned,
                   b.d2h_pinned, b.d2d);
      else if (!o.json)
        fmt::print("{:>7} {:>5} {:>13.2f} {:>13.2f} {:>11.2f} {:>11.2f} {:>9.1f}\n", fmt::format("cuda:{}", g), m,
                   b.h2d_pageable, b.d2h_pageable, b.h2d_pinned, b.d2h_pinned, b.d2d);
    }
  if (o.json) fmt::print("{}\n", nlohmann::json{{"results", j}}.dump(2));
  return kExitOk;
}

}  // namespace

void register_bench(CLI::App& root, Runner& run) {
  auto* bench = root.add_subcommand("bench", "Benchmarks: matmul, bandwidth, train");
  bench->require_subcommand(1);

  register_bench_matmul(*bench, run);

  auto bwo = std::make_shared<BandwidthOpts>();
  auto* bw = bench->add_subcommand("bandwidth", "Host<->device copy bandwidth (needs a CUDA device)");
  add_number(bw, "--mib", bwo->mib, "Transfer size in MiB (quick mode)",
             between(1, 1 << 20, "1 TiB is beyond any GPU's memory"))->capture_default_str();
  bw->add_flag("--range", bwo->range, "Sizes 1..256 MiB, doubling");
  bw->add_flag("--csv", bwo->csv, "Print CSV");
  bw->add_flag("--json", bwo->json, "Print JSON");
  bw->callback([&run, bwo] { run = [bwo] { return run_bandwidth(*bwo); }; });

  register_bench_train(*bench, run);
}

}  // namespace ember::cli
