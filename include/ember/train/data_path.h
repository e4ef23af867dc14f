// A --data value meant as a path: `~` expanded, told apart from a dataset name, and why it names no
// folder of images or photo cache. In the settings room because the settings table checks --data
// with it before any data is read; run_data.h's loaders use it too.
#pragma once

#include <string>

namespace ember::train {

// `~` or `~/...` with $HOME for `~`, as the shell and Python's os.path.expanduser do (a value from a
// --config file or a Python keyword reaches ember unexpanded); other values as they are.
std::string expand_user(const std::string& path);
// Whether a --data value is meant as a path rather than a dataset name: it holds a '/', starts
// with '~' or '.', or ends in ".ember".
bool looks_like_path(const std::string& value);
// Why a --data value that looks like a path names no image folder or photo cache: "no such folder
// '~/phtos' (did you mean ~/photos?)", "... is a file, not ...". "" when it names one.
std::string data_path_problem(const std::string& value);

}  // namespace ember::train
