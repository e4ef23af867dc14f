// The ember command: CLI11 setup, one subcommand per file, and the one place that turns an
// exception into a message, a hint and a documented exit code.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>

#include "cli.h"
#include "ember/core/tensor.h"
#include "ember/nn/spec.h"

namespace ember::cli {
void warn(const std::string& msg) { fmt::print(stderr, "ember: warning: {}\n", msg); }

void split_short_option_values(std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") break;  // what follows is positional
    if (a.size() >= 3 && a[0] == '-' && std::isalpha(static_cast<unsigned char>(a[1])) && a[2] == '=') {
      std::string value = a.substr(3);
      args[i] = a.substr(0, 2);
      args.insert(args.begin() + std::ptrdiff_t(i) + 1, std::move(value));
      ++i;
    }
  }
}

namespace {
// Our bug, never the user's: say so, and what to send.
int internal_error(const std::string& what) {
  // EMBER_ASSERT's message starts "internal error at src/...:LINE"; other throws get the prefix.
  fmt::print(stderr, "ember: {}{}\n", what.starts_with("internal error") ? "" : "internal error: ", what);
  fmt::print(stderr,
             "  hint: this is a bug in ember, not in how it was used; please report it with this message, the "
             "command line and the output of `ember doctor --json`\n");
  return kExitInternal;
}
}  // namespace

}  // namespace ember::cli

int main(int argc, char** argv) {
  // A file-size limit (ulimit -f, RLIMIT_FSIZE) must turn into a write error (EFBIG) that the
  // checkpoint writer reports and cleans up after, not a SIGXFSZ that kills the run mid-write.
  std::signal(SIGXFSZ, SIG_IGN);
  using namespace ember::cli;
  CLI::App app{"ember: train, evaluate and benchmark neural networks on the CPU and NVIDIA GPUs", "ember"};
  app.formatter(help_formatter());  // subcommands copy it: every --help wraps to 80 columns
  app.set_version_flag("--version", "ember " + ember::version());
  app.require_subcommand(1);
  app.footer(exit_codes_footer() + "\nRun 'ember <command> --help' for a command's flags.");
  Runner run;
  register_train(app, run);
  register_eval(app, run);
  register_export(app, run);
  register_weights(app, run);

  register_doctor(app, run);
  register_bench(app, run);
  register_data(app, run);

  try {
    std::vector<std::string> args(argv + 1, argv + argc);
    if (!args.empty() && !args[0].starts_with("-") && app.get_subcommands([&](CLI::App* s) { return s->get_name() == args[0]; }).empty()) {
      std::vector<std::string> commands;
      for (const CLI::App* s : app.get_subcommands([](const CLI::App*) { return true; })) commands.push_back(s->get_name());
      const std::string guess = closest_name(args[0], commands);
      fmt::print(stderr, "ember: usage error: unknown command '{}'\n", args[0]);
      if (!guess.empty()) fmt::print(stderr, "  hint: did you mean 'ember {}'?\n", guess);
      std::string list;
      for (size_t i = 0; i < commands.size(); ++i)
        list += (i == 0 ? "" : i + 1 == commands.size() ? " and " : ", ") + commands[i];
      fmt::print(stderr, "  hint: the commands are {}; run 'ember --help'\n", list);
      return kExitUsage;
    }
    split_short_option_values(args);  // -b=64
    // App::parse(std::vector&) takes the arguments last-first (it pops them off the back), so the
    // vector is reversed here; CLI11 2.1.2's ExtrasError then joins its list backwards, which is why
    // unexpected arguments are reported by print_unexpected_arguments instead.
    std::reverse(args.begin(), args.end());
    app.parse(args);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ExtrasError&) {
    print_unexpected_arguments(app);
    return kExitUsage;
  } catch (const CLI::ValidationError& e) {
    // "--epochs: --epochs must be at least 1 (got 0)": CLI11 prefixes the option's name to what
    // check_number already says in a sentence that starts with it.
    std::string what = e.what();
    const size_t colon = what.find(": ");
    if (colon != std::string::npos && what.compare(colon + 2, colon, what, 0, colon) == 0) what = what.substr(colon + 2);
    fmt::print(stderr, "ember: usage error: {}\n", what);
    fmt::print(stderr, "  hint: run '{} --help' for the valid values\n", command_path(*chosen_subcommand(app)));
    return kExitUsage;
  } catch (const CLI::ParseError& e) {
    // `ember bench matmu`: CLI11 says "A subcommand is required"; the unexpected word says more.
    if (!app.remaining(true).empty()) {
      print_unexpected_arguments(app);
      return kExitUsage;
    }
    fmt::print(stderr, "ember: usage error: {}\n", e.what());
    fmt::print(stderr, "  hint: run '{} --help' for the valid commands and flags\n", command_path(*chosen_subcommand(app)));
    return kExitUsage;
  }
  try {
    // The e2e test of the internal-error exit (CliExitCodes.*) sets this: a failed assertion of
    // ours, the only way a user would ever see one.
    if (const char* v = std::getenv("EMBER_TEST_INTERNAL_ERROR"); v != nullptr && *v != '\0')
      EMBER_ASSERT(false, "(EMBER_TEST_INTERNAL_ERROR is set)");
    return run ? run() : kExitUsage;
  } catch (const UsageError& e) {
    fmt::print(stderr, "ember: usage error: {}\n", e.what());
    if (!e.hint().empty()) fmt::print(stderr, "  hint: {}\n", e.hint());
    return kExitUsage;
  } catch (const ember::train::SettingError& e) {
    // A setting's value from a --config file or a resumed manifest, refused as its flag would be.
    fmt::print(stderr, "ember: usage error: {}\n", e.what());
    if (!e.hint().empty()) fmt::print(stderr, "  hint: {}\n", e.hint());
    return kExitUsage;
  } catch (const ember::nn::SpecError& e) {
    // A model spec that cannot build a model: the user's file to fix, as a --config file is.
    fmt::print(stderr, "ember: usage error: {}\n", e.what());
    if (!e.hint().empty()) fmt::print(stderr, "  hint: {}\n", e.hint());
    return kExitUsage;
  } catch (const ember::InternalError& e) {
    return internal_error(e.what());  // before ember::Error, of which it is one
  } catch (const ember::OutOfMemoryError& e) {
    // The allocators' hints name --batch-size, which not every subcommand has.
    fmt::print(stderr, "ember: error: {}\n  hint: {}\n", e.what(), memory_hint(app));
    return kExitFailed;
  } catch (const ember::Error& e) {
    fmt::print(stderr, "ember: error: {}\n", e.what());
    if (!e.hint().empty()) fmt::print(stderr, "  hint: {}\n", e.hint());
    return kExitFailed;
  } catch (const std::filesystem::filesystem_error& e) {
    // A std::filesystem call on a user's path (a symlink loop, a permission problem): the user's to
    // fix, not a bug. The readers use io::path_type and say more; this is the net under the rest.
    fmt::print(stderr, "ember: error: {}: {}\n", e.path1().string(), e.code().message());
    return kExitFailed;
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "ember: error: out of host memory\n  hint: {}\n", memory_hint(app));
    return kExitFailed;
  } catch (const std::exception& e) {
    return internal_error(e.what());  // an exception no layer turned into an ember::Error
  }
}
