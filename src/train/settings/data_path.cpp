// --data values that are paths (data_path.h): `~` as the shell expands it, and what is wrong with a
// path that names no image folder or photo cache, with the closest name beside it.
#include "ember/train/data_path.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "ember/data/photo_cache.h"
#include "ember/train/settings.h"

namespace ember::train {
namespace fs = std::filesystem;

std::string expand_user(const std::string& path) {
  if (path != "~" && !path.starts_with("~/")) return path;
  const char* home = std::getenv("HOME");
  return home && *home ? std::string(home) + path.substr(1) : path;
}

bool looks_like_path(const std::string& value) {
  return value.find('/') != std::string::npos || value.starts_with("~") || value.starts_with(".") ||
         value.ends_with(".ember");
}

std::string data_path_problem(const std::string& typed) {
  std::string value = typed;  // "~/phtos/" is the folder "~/phtos"
  while (value.size() > 1 && value.back() == '/') value.pop_back();
  const fs::path p = expand_user(value);
  std::error_code ec;
  if (fs::is_directory(p, ec) || data::is_photo_cache(p)) return "";
  if (fs::exists(p, ec))
    return fmt::format("'{}' is a file, not a folder of images (PATH/<class>/*.jpg) or a photo cache (`ember data "
                       "cache FOLDER -o FILE.ember`)", typed);
  // The closest folder or cache beside where it was looked for, named as the user wrote the path.
  fs::path parent = p.parent_path();
  const std::string shown_parent = fs::path(value).parent_path().string();
  if (parent.empty()) parent = ".";
  if (!fs::is_directory(parent, ec))
    return fmt::format("no such folder '{}' ({} does not exist either)", typed,
                       shown_parent.empty() ? std::string(".") : shown_parent);
  std::vector<std::string> candidates;
  for (const auto& e : fs::directory_iterator(parent, ec)) {
    const std::string name = e.path().filename().string();
    std::error_code ec2;
    if (!name.starts_with(".") && (e.is_directory(ec2) || name.ends_with(".ember"))) candidates.push_back(name);
  }
  std::sort(candidates.begin(), candidates.end());
  const std::string guess = closest_name(p.filename().string(), candidates);
  const std::string typed_parent = value.substr(0, value.size() - fs::path(value).filename().string().size());
  return fmt::format("no such folder '{}'{}", typed, guess.empty() ? "" : " (did you mean " + typed_parent + guess + "?)");
}

}  // namespace ember::train
