// `ember train`'s flags, made from the settings table (ember/train/settings.h): one CLI11 option
// per setting, with its names, help, default and the table's check, bound to a TrainSettings.
#pragma once

#include <map>
#include <string>

#include "cli.h"
#include "ember/train/settings.h"

namespace ember::cli {

class TrainFlags {
 public:
  // Adds the options to `app`, bound to the fields of `values` (which must outlive the parse).
  TrainFlags(CLI::App& app, train::TrainSettings& values);
  // Whether the command line gave the setting (under any of its names).
  bool given(const train::Setting& s) const;

 private:
  std::map<std::string, CLI::Option*> options_;  // by config key
};

}  // namespace ember::cli
