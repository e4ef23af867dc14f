// `ember train`'s flags, made from the settings table (ember/train/settings.h): one CLI11 option
// per setting, with its names, help, default and the table's check, bound to a TrainSettings.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "cli.h"
#include "ember/train/settings.h"

namespace ember::cli {

class TrainFlags {
 public:
  // Adds the options to `app`, bound to the fields of `values` (which must outlive the parse).
  TrainFlags(CLI::App& app, train::TrainSettings& values);
  // Whether the command line gave the setting (under any of its names, or a shorthand for it).
  bool given(const train::Setting& s) const;
  // The value-less shorthands other tools use for a setting's value (--fp16 for --precision fp16,
  // --amp for --precision auto), applied after parsing: UsageError when two of them, or one and the
  // setting's own flag, ask for different values.
  void apply_shorthands(train::TrainSettings& values) const;

 private:
  struct Shorthand {
    const char* flag;   // "--fp16"
    const char* key;    // the setting it sets: "precision"
    const char* value;  // as its flag would take it: "fp16"
    const char* help;
    CLI::Option* option = nullptr;
  };
  std::map<std::string, CLI::Option*> options_;  // by config key
  std::vector<Shorthand> shorthands_;
};

}  // namespace ember::cli
