// Image folders: root/<class>/<file>, decoded by decode_image (decode.h: TurboJPEG, libspng,
// libwebp, stb_image for the rest), resized or centre-cropped with stb_image_resize to a fixed
// size, stored as one uint8 (N, C, H, W) tensor. Every file's header is checked against the pixel
// budget before it is decoded; what the listing leaves out is named.
#include <stb/stb_image_resize.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>

#include "data/decode_internal.h"
#include "data/file_bytes.h"
#include "data/image_fit.h"
#include "ember/core/error.h"
#include "ember/data/dataset.h"
#include "ember/data/decode.h"
#include "ember/io/user_file.h"

namespace ember::data {
namespace fs = std::filesystem;
namespace {

bool is_image_name(const fs::path& p) { return is_image_extension(p.extension().string()); }

// "PNG, JPEG (.jpg, ...)" for messages: the extensions read, from decode.h's list.
std::string extension_list() {
  std::string s;
  for (const char* e : image_extensions()) s += (s.empty() ? "" : ", ") + std::string(e);
  return s;
}

// Resizes (h, w, c) interleaved pixels to (out_h, out_w, c); returns false when stb fails.
bool resize_hwc(const uint8_t* src, int w, int h, int c, uint8_t* dst, int out_w, int out_h) {
  if (w == out_w && h == out_h) {
    std::copy(src, src + size_t(w) * size_t(h) * size_t(c), dst);
    return true;
  }
  return stbir_resize_uint8(src, w, h, 0, dst, out_w, out_h, 0, c) != 0;
}

struct Decoded {
  std::string error;    // "" on success: the reason for the skip warning or the strict error
  std::string warning;  // a large image (over half the pixel budget)
};

// Decodes, resizes/crops and writes (C, H, W) planes into `out`. A file over the pixel budget
// throws DataError; other failures come back in `error`.
Decoded decode_one(const fs::path& file, const ImageFolderOptions& opt, uint8_t* out) {
  Decoded d;
  std::vector<uint8_t> bytes;
  try {
    bytes = io::read_user_file(file, io::kImageFile);
  } catch (const Error& e) {
    d.error = e.what();
    return d;
  }
  const int c = int(opt.channels), oh = int(opt.height), ow = int(opt.width);
  // The header first: a file that declares more pixels than the budget is refused (DataError, out
  // of this function) before any pixel buffer exists; one whose header cannot be read is a skip.
  ImageInfo info;
  try {
    info = probe_image(bytes, file.string());
  } catch (const DataError& e) {
    d.error = e.what();
    return d;
  }
  d.warning = check_pixel_budget(file.string(), info.width, info.height, opt.max_pixels);
  DecodeOptions dopt;
  dopt.channels = c;
  dopt.max_pixels = 0;  // checked just above
  Image img;
  try {
    img = decode_image(bytes, dopt, file.string());
  } catch (const DataError& e) {
    d.error = e.what();
    return d;
  }
  if (!fit_image_into(img, opt, out)) d.error = detail::cat(file.string(), ": cannot resize a ", img.width, "x", img.height,
                                                          " image to ", ow, "x", oh);
  return d;
}

}  // namespace

bool fit_image_into(const Image& img, const ImageFolderOptions& opt, uint8_t* out) {
  const int c = int(opt.channels), oh = int(opt.height), ow = int(opt.width);
  EMBER_CHECK(img.channels == c, InternalError, "fit_image_into: a ", img.channels, "-channel image for ", c, " channels");
  const int iw = int(img.width), ih = int(img.height);
  std::vector<uint8_t> hwc(size_t(oh) * size_t(ow) * size_t(c));
  bool ok = true;
  if (opt.resize == ResizeMode::Resize) {
    ok = resize_hwc(img.pixels.data(), iw, ih, c, hwc.data(), ow, oh);
  } else {
    // Scale so the image covers (oh, ow), then take the centre.
    const double s = std::max(double(oh) / ih, double(ow) / iw);
    const int sw = std::max(ow, int(std::lround(iw * s))), sh = std::max(oh, int(std::lround(ih * s)));
    std::vector<uint8_t> scaled(size_t(sw) * size_t(sh) * size_t(c));
    ok = resize_hwc(img.pixels.data(), iw, ih, c, scaled.data(), sw, sh);
    const int top = (sh - oh) / 2, left = (sw - ow) / 2;
    for (int y = 0; y < oh && ok; ++y) {
      const uint8_t* row = scaled.data() + (size_t(top + y) * size_t(sw) + size_t(left)) * size_t(c);
      std::copy(row, row + size_t(ow) * size_t(c), hwc.data() + size_t(y) * size_t(ow) * size_t(c));
    }
  }
  if (!ok) return false;
  const size_t plane = size_t(oh) * size_t(ow);
  for (size_t p = 0; p < plane; ++p) {
    for (int ch = 0; ch < c; ++ch) out[size_t(ch) * plane + p] = hwc[p * size_t(c) + size_t(ch)];
  }
  return true;
}

namespace {

bool is_hidden(const fs::path& p) { return p.filename().string().starts_with("."); }

// Why an entry of a class folder (or of root) is not read; "" when it is an image file to read.
// Hidden entries are never asked about.
enum class Left { None, NotImage, Dangling, Nested, Outside, Unreadable };
struct LeftKind {
  Left kind;
  const char* reason;                // as written after the entry's name in ImageFolderListing::not_read
  const char* singular, *plural_form;  // for describe_not_read
};
constexpr LeftKind kLeftKinds[] = {
    {Left::NotImage, "not an image file", "file that is not an image", "files that are not images"},
    {Left::Dangling, "a dangling symlink", "dangling symlink", "dangling symlinks"},
    {Left::Nested, "a folder inside a class folder",
     "folder inside a class folder (only the files directly in a class folder are read)",
     "folders inside class folders (only the files directly in a class folder are read)"},
    {Left::Outside, "a file outside the class folders", "file outside the class folders (put it in one)",
     "files outside the class folders (put them in one)"},
    {Left::Unreadable, "cannot be read", "entry that cannot be read", "entries that cannot be read"},
};

}  // namespace

ImageFolderListing list_image_folder(const fs::path& root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    throw IOError(detail::cat("image folder '", root.string(), "': not a directory"),
                  "expected root/<class>/<image file>, one sub-directory per class");
  }
  ImageFolderListing out;
  auto left_out = [&](const fs::path& rel, bool dir, Left why) {
    for (const LeftKind& k : kLeftKinds)
      if (k.kind == why) out.not_read.push_back(detail::cat(rel.string(), dir ? "/" : "", " (", k.reason, ")"));
  };
  // What an entry is, following symlinks; a symlink whose target is missing is named as one.
  auto kind_of = [&](const fs::directory_entry& e, bool& is_dir) {
    std::error_code sec;
    is_dir = false;
    const fs::file_status st = e.status(sec);
    if (st.type() == fs::file_type::not_found) return e.is_symlink(sec) ? Left::Dangling : Left::Unreadable;
    if (sec) return Left::Unreadable;
    if (st.type() == fs::file_type::directory) {
      is_dir = true;
      return Left::Nested;
    }
    return st.type() == fs::file_type::regular && is_image_name(e.path()) ? Left::None : Left::NotImage;
  };
  std::vector<fs::directory_entry> top;
  for (const auto& entry : fs::directory_iterator(root, ec)) top.push_back(entry);
  if (ec)
    throw IOError(detail::cat("image folder '", root.string(), "': cannot list it: ", ec.message()),
                  "check the folder's permissions");
  std::sort(top.begin(), top.end());
  for (const auto& entry : top) {
    if (is_hidden(entry.path())) continue;  // .git, .ipynb_checkpoints, .DS_Store: never classes or data
    bool is_dir = false;
    const Left k = kind_of(entry, is_dir);
    if (is_dir) out.classes.push_back(entry.path().filename().string());
    else if (k == Left::None || k == Left::NotImage) left_out(entry.path().filename(), false, Left::Outside);
    else left_out(entry.path().filename(), false, k);
  }
  EMBER_CHECK(!out.classes.empty(), DataError, "image folder '", root.string(),
              "': expected one sub-directory per class (root/<class>/<file>.png), found none");
  for (size_t label = 0; label < out.classes.size(); ++label) {
    const std::string& name = out.classes[label];
    std::vector<fs::directory_entry> entries;
    std::error_code lec;
    for (const auto& entry : fs::directory_iterator(root / name, lec)) entries.push_back(entry);
    std::sort(entries.begin(), entries.end());
    size_t images = 0;
    for (const auto& entry : entries) {
      if (is_hidden(entry.path())) continue;
      bool is_dir = false;
      const Left k = kind_of(entry, is_dir);
      if (k == Left::None) {
        out.files.emplace_back(entry.path(), int64_t(label));
        ++images;
      } else {
        left_out(fs::path(name) / entry.path().filename(), is_dir, k);
      }
    }
    if (lec) left_out(fs::path(name), true, Left::Unreadable);
    if (images == 0) out.empty_classes.push_back(name);
  }
  return out;
}

std::string describe_not_read(const std::vector<std::string>& not_read) {
  if (not_read.empty()) return {};
  std::string s = detail::cat(not_read.size(), not_read.size() == 1 ? " entry" : " entries", " not read: ");
  bool first_kind = true;
  for (const LeftKind& k : kLeftKinds) {
    const std::string suffix = detail::cat(" (", k.reason, ")");
    std::vector<std::string> names;
    for (const std::string& e : not_read)
      if (e.ends_with(suffix)) names.push_back(e.substr(0, e.size() - suffix.size()));
    if (names.empty()) continue;
    s += detail::cat(first_kind ? "" : "; ", names.size(), " ", names.size() == 1 ? k.singular : k.plural_form, ": ");
    for (size_t i = 0; i < names.size() && i < 3; ++i) s += (i ? ", " : "") + names[i];
    if (names.size() > 3) s += detail::cat(" and ", names.size() - 3, " more");
    first_kind = false;
  }
  return s;
}

std::string skip_warning(const std::string& reason) { return "skipping " + reason; }

std::string reason_naming(const fs::path& file, const std::string& reason) {
  return reason.find(file.string()) == std::string::npos ? file.string() + ": " + reason : reason;
}

bool too_many_undecodable(int64_t bad, int64_t total) {
  return bad > 1 && bad * kUndecodableShareDenominator > total;
}

void throw_too_many_undecodable(const std::string& where, int64_t bad, int64_t total,
                                const std::vector<std::string>& first_reasons) {
  std::string first;
  for (size_t i = 0; i < first_reasons.size() && i < 3; ++i) first += (i ? "; " : "") + first_reasons[i];
  throw DataError(detail::cat(where, ": ", bad, " of its ", total, " image files cannot be read or decoded (more than ",
                              "a tenth: a copy gone wrong, or not the folder meant)",
                              first.empty() ? "" : "; first: " + first),
                  "copy or download the folder again, or remove the damaged files (one damaged file is skipped with "
                  "a warning, never refused)");
}

Tensor load_image(const fs::path& file, const ImageFolderOptions& opt) {
  EMBER_CHECK(opt.channels == 1 || opt.channels == 3, ValueError, "load_image: channels must be 1 or 3, got ",
              opt.channels);
  io::check_user_file(file, io::kImageFile);  // IOError: missing, a FIFO or device, a symlink loop, too big
  Tensor out = empty({opt.channels, opt.height, opt.width}, {.dtype = DType::UInt8});
  const Decoded d = decode_one(file, opt, out.data_ptr<uint8_t>());
  if (!d.error.empty()) throw DataError(d.error, "pass a JPEG, PNG or WebP image (" + extension_list() + ")");
  if (!d.warning.empty()) std::fprintf(stderr, "ember: warning: %s\n", d.warning.c_str());
  return out;
}

ImageInfo probe_image(const fs::path& file) {
  const std::vector<uint8_t> bytes = io::read_user_file(file, io::kImageFile);
  return probe_image(bytes, file.string());
}

fs::path first_image_in_folder(const fs::path& root) {
  try {
    ImageFolderListing l = list_image_folder(root);
    return l.files.empty() ? fs::path() : l.files.front().first;
  } catch (const Error&) {
    return {};
  }
}

Dataset load_image_folder(const fs::path& root, const ImageFolderOptions& opt, ImageFolderReport* report) {
  EMBER_CHECK(opt.channels == 1 || opt.channels == 3, ValueError, "load_image_folder: channels must be 1 or 3, got ",
              opt.channels);
  EMBER_CHECK(opt.height >= 1 && opt.width >= 1 && opt.height <= 16384 && opt.width <= 16384, ValueError,
              "load_image_folder: bad size ", opt.height, "x", opt.width);
  const ImageFolderListing listing = list_image_folder(root);
  const std::vector<std::string>& classes = listing.classes;
  const auto& files = listing.files;
  ImageFolderReport rep;
  rep.empty_classes = listing.empty_classes;
  rep.not_read = listing.not_read;
  if (!listing.not_read.empty())
    std::fprintf(stderr, "ember: warning: image folder '%s': %s\n", root.string().c_str(),
                 describe_not_read(listing.not_read).c_str());
  EMBER_CHECK(!files.empty(), DataError, "image folder '", root.string(), "': found ", classes.size(),
              " class folders but no image files (", extension_list(), ")",
              listing.not_read.empty() ? "" : "; " + describe_not_read(listing.not_read));
  for (const std::string& c : listing.empty_classes)
    std::fprintf(stderr, "ember: warning: image folder '%s': class folder '%s' holds no image files: a class of 0 images\n",
                 root.string().c_str(), c.c_str());

  const size_t sample = size_t(opt.channels * opt.height * opt.width);
  std::vector<uint8_t> images(files.size() * sample);
  std::vector<int64_t> labels;
  labels.reserve(files.size());
  std::vector<std::string> large;  // over half the pixel budget: one warning for all of them
  for (const auto& [file, label] : files) {
    Decoded d = decode_one(file, opt, images.data() + labels.size() * sample);  // DataError over the budget
    if (!d.warning.empty()) large.push_back(file.filename().string());
    if (!d.error.empty()) {
      if (opt.strict) throw DataError(d.error, "remove or replace the file, or load without strict to skip it");
      d.error = reason_naming(file, d.error);
      std::fprintf(stderr, "ember: warning: %s\n", skip_warning(d.error).c_str());
      rep.warnings.push_back(std::move(d.error));
      continue;
    }
    labels.push_back(label);
  }
  if (!large.empty()) {
    std::string names;
    for (size_t i = 0; i < large.size() && i < 3; ++i) names += (i ? ", " : "") + large[i];
    if (large.size() > 3) names += detail::cat(" and ", large.size() - 3, " more");
    rep.warnings.push_back(detail::cat("image folder '", root.string(), "': ", large.size(),
                                       large.size() == 1 ? " image is" : " images are", " over half the pixel budget of ",
                                       internal::grouped(opt.max_pixels), " (--max-image-pixels): ", names));
    std::fprintf(stderr, "ember: warning: %s\n", rep.warnings.back().c_str());
  }
  EMBER_CHECK(!labels.empty(), DataError, "image folder '", root.string(), "': none of its ", files.size(),
              " image files could be decoded; first problem: ", rep.warnings.front());
  const int64_t skipped = int64_t(files.size() - labels.size());
  if (too_many_undecodable(skipped, int64_t(files.size())))
    throw_too_many_undecodable(detail::cat("image folder '", root.string(), "'"), skipped, int64_t(files.size()),
                               rep.warnings);
  images.resize(labels.size() * sample);
  images.shrink_to_fit();
  rep.loaded = int64_t(labels.size());
  if (report) *report = rep;

  LabeledImages li;
  li.images = std::move(images);
  li.labels = std::move(labels);
  li.n = rep.loaded;
  li.c = opt.channels;
  li.h = opt.height;
  li.w = opt.width;
  li.num_classes = int64_t(classes.size());
  return dataset_from_labeled_images(std::move(li), "image-folder:" + root.string(), classes);
}

}  // namespace ember::data
