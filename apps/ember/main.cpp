// The ember command: CLI11 setup, one subcommand per file, and the one place that turns an
// exception into a message, a hint and a documented exit code.
#include <fmt/format.h>

#include <cstdio>
#include <exception>

#include "cli.h"
#include "ember/core/tensor.h"

namespace ember::cli {
void warn(const std::string& msg) { fmt::print(stderr, "ember: warning: {}\n", msg); }
}  // namespace ember::cli

int main(int argc, char** argv) {
  using namespace ember::cli;
  CLI::App app{"ember: train, evaluate and benchmark neural networks on the CPU and NVIDIA GPUs", "ember"};
  app.set_version_flag("--version", "ember " + ember::version());
  app.require_subcommand(1);
  app.footer(
      "Exit codes: 0 success, 1 the run failed, 2 usage error, 130 interrupted (SIGINT), 143 terminated "
      "(SIGTERM).\nRun 'ember <command> --help' for a command's flags.");
  Runner run;
  register_train(app, run);
  register_eval(app, run);

  register_doctor(app, run);
  register_bench(app, run);
  register_data(app, run);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "ember: usage error: {}\n", e.what());
    fmt::print(stderr, "  hint: run 'ember --help' or 'ember <command> --help' for the valid commands and flags\n");
    return kExitUsage;
  }
  try {
    return run ? run() : kExitUsage;
  } catch (const UsageError& e) {
    fmt::print(stderr, "ember: usage error: {}\n", e.what());
    if (!e.hint().empty()) fmt::print(stderr, "  hint: {}\n", e.hint());
    return kExitUsage;
  } catch (const ember::Error& e) {
    fmt::print(stderr, "ember: error: {}\n", e.what());
    if (!e.hint().empty()) fmt::print(stderr, "  hint: {}\n", e.hint());
    return kExitFailed;
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "ember: error: out of host memory\n  hint: use a smaller --batch-size or model\n");
    return kExitFailed;
  } catch (const std::exception& e) {
    fmt::print(stderr, "ember: internal error: {}\n  hint: this is a bug in ember; please report it with `ember doctor --json`\n",
               e.what());
    return kExitFailed;
  }
}
