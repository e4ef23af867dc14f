// Image folders: root/<class>/<file>, decoded with stb_image (Debian libstb), resized or
// centre-cropped to a fixed size, stored as one uint8 (N, C, H, W) tensor.
#include <stb/stb_image.h>
#include <stb/stb_image_resize.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <memory>

#include "data/file_bytes.h"
#include "ember/core/error.h"
#include "ember/data/dataset.h"
#include "ember/io/user_file.h"

namespace ember::data {
namespace fs = std::filesystem;
namespace {

bool is_image_name(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char ch) { return char(std::tolower(ch)); });
  for (const char* e : {".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tga", ".ppm", ".pgm"}) {
    if (ext == e) return true;
  }
  return false;
}

struct StbImage {
  std::unique_ptr<uint8_t, void (*)(void*)> pixels{nullptr, stbi_image_free};
  int w = 0, h = 0;
};

// Resizes (h, w, c) interleaved pixels to (out_h, out_w, c); returns false when stb fails.
bool resize_hwc(const uint8_t* src, int w, int h, int c, uint8_t* dst, int out_w, int out_h) {
  if (w == out_w && h == out_h) {
    std::copy(src, src + size_t(w) * size_t(h) * size_t(c), dst);
    return true;
  }
  return stbir_resize_uint8(src, w, h, 0, dst, out_w, out_h, 0, c) != 0;
}

// Decodes, resizes/crops and writes (C, H, W) planes into `out`. Returns an empty string on
// success, else what went wrong (for the warning or the error).
std::string decode_one(const fs::path& file, const ImageFolderOptions& opt, uint8_t* out) {
  std::vector<uint8_t> bytes;
  try {
    bytes = io::read_user_file(file, io::kImageFile);
  } catch (const Error& e) {
    return e.what();
  }
  const int c = int(opt.channels), oh = int(opt.height), ow = int(opt.width);
  StbImage img;
  int file_channels = 0;
  img.pixels.reset(stbi_load_from_memory(bytes.data(), int(std::min<size_t>(bytes.size(), INT32_MAX)), &img.w,
                                         &img.h, &file_channels, c));
  if (!img.pixels) {
    const char* why = stbi_failure_reason();
    return detail::cat(file.string(), ": cannot decode image: expected a PNG, JPEG, BMP, GIF, TGA or PNM image, found ",
                       bytes.empty() ? std::string("an empty file")
                                     : detail::cat(bytes.size(), " bytes starting ",
                                                   internal::hex_bytes(bytes, 8)),
                       " (stb_image: ", why ? why : "unknown error", ")");
  }
  std::vector<uint8_t> hwc(size_t(oh) * size_t(ow) * size_t(c));
  bool ok = true;
  if (opt.resize == ResizeMode::Resize) {
    ok = resize_hwc(img.pixels.get(), img.w, img.h, c, hwc.data(), ow, oh);
  } else {
    // Scale so the image covers (oh, ow), then take the centre.
    const double s = std::max(double(oh) / img.h, double(ow) / img.w);
    const int sw = std::max(ow, int(std::lround(img.w * s))), sh = std::max(oh, int(std::lround(img.h * s)));
    std::vector<uint8_t> scaled(size_t(sw) * size_t(sh) * size_t(c));
    ok = resize_hwc(img.pixels.get(), img.w, img.h, c, scaled.data(), sw, sh);
    const int top = (sh - oh) / 2, left = (sw - ow) / 2;
    for (int y = 0; y < oh && ok; ++y) {
      const uint8_t* row = scaled.data() + (size_t(top + y) * size_t(sw) + size_t(left)) * size_t(c);
      std::copy(row, row + size_t(ow) * size_t(c), hwc.data() + size_t(y) * size_t(ow) * size_t(c));
    }
  }
  if (!ok) return detail::cat(file.string(), ": cannot resize a ", img.w, "x", img.h, " image to ", ow, "x", oh);
  const size_t plane = size_t(oh) * size_t(ow);
  for (size_t p = 0; p < plane; ++p) {
    for (int ch = 0; ch < c; ++ch) out[size_t(ch) * plane + p] = hwc[p * size_t(c) + size_t(ch)];
  }
  return {};
}

}  // namespace

Tensor load_image(const fs::path& file, const ImageFolderOptions& opt) {
  EMBER_CHECK(opt.channels == 1 || opt.channels == 3, ValueError, "load_image: channels must be 1 or 3, got ",
              opt.channels);
  io::check_user_file(file, io::kImageFile);  // IOError: missing, a FIFO or device, a symlink loop, too big
  Tensor out = empty({opt.channels, opt.height, opt.width}, {.dtype = DType::UInt8});
  std::string err = decode_one(file, opt, out.data_ptr<uint8_t>());
  if (!err.empty()) throw DataError(err, "pass a PNG or JPEG image");
  return out;
}

ImageInfo probe_image(const fs::path& file) {
  std::vector<uint8_t> bytes = read_file_bytes(file, /*gunzip_if_gzip=*/false);
  int w = 0, h = 0, c = 0;
  if (!stbi_info_from_memory(bytes.data(), int(std::min<size_t>(bytes.size(), INT32_MAX)), &w, &h, &c)) {
    const char* why = stbi_failure_reason();
    throw DataError(detail::cat(file.string(), ": cannot read the image header (stb_image: ", why ? why : "unknown error",
                                ")"),
                    "pass a PNG or JPEG image");
  }
  return {w, h, c};
}

fs::path first_image_in_folder(const fs::path& root) {
  std::error_code ec;
  std::vector<fs::path> classes;
  for (const auto& entry : fs::directory_iterator(root, ec))
    if (entry.is_directory()) classes.push_back(entry.path());
  std::sort(classes.begin(), classes.end());
  for (const auto& dir : classes) {
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir, ec))
      if (entry.is_regular_file() && is_image_name(entry.path())) files.push_back(entry.path());
    if (!files.empty()) return *std::min_element(files.begin(), files.end());
  }
  return {};
}

Dataset load_image_folder(const fs::path& root, const ImageFolderOptions& opt, ImageFolderReport* report) {
  EMBER_CHECK(opt.channels == 1 || opt.channels == 3, ValueError, "load_image_folder: channels must be 1 or 3, got ",
              opt.channels);
  EMBER_CHECK(opt.height >= 1 && opt.width >= 1 && opt.height <= 16384 && opt.width <= 16384, ValueError,
              "load_image_folder: bad size ", opt.height, "x", opt.width);
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    throw IOError(detail::cat("image folder '", root.string(), "': not a directory"),
                  "expected root/<class>/<image file>, one sub-directory per class");
  }
  std::vector<std::string> classes;
  for (const auto& entry : fs::directory_iterator(root)) {
    if (entry.is_directory()) classes.push_back(entry.path().filename().string());
  }
  std::sort(classes.begin(), classes.end());
  EMBER_CHECK(!classes.empty(), DataError, "image folder '", root.string(),
              "': expected one sub-directory per class (root/<class>/<file>.png), found none");

  std::vector<std::pair<fs::path, int64_t>> files;
  for (size_t k = 0; k < classes.size(); ++k) {
    std::vector<fs::path> in_class;
    for (const auto& entry : fs::directory_iterator(root / classes[k])) {
      if (entry.is_regular_file() && is_image_name(entry.path())) in_class.push_back(entry.path());
    }
    std::sort(in_class.begin(), in_class.end());
    for (auto& f : in_class) files.emplace_back(std::move(f), int64_t(k));
  }
  EMBER_CHECK(!files.empty(), DataError, "image folder '", root.string(), "': found ", classes.size(),
              " class folders but no image files (.png, .jpg, .jpeg, .bmp, .gif, .tga, .ppm, .pgm)");

  const size_t sample = size_t(opt.channels * opt.height * opt.width);
  std::vector<uint8_t> images(files.size() * sample);
  std::vector<int64_t> labels;
  labels.reserve(files.size());
  ImageFolderReport rep;
  for (const auto& [file, label] : files) {
    std::string err = decode_one(file, opt, images.data() + labels.size() * sample);
    if (!err.empty()) {
      if (opt.strict) throw DataError(err, "remove or replace the file, or load without strict to skip it");
      std::fprintf(stderr, "ember: warning: skipping %s\n", err.c_str());
      rep.warnings.push_back(std::move(err));
      continue;
    }
    labels.push_back(label);
  }
  EMBER_CHECK(!labels.empty(), DataError, "image folder '", root.string(), "': none of its ", files.size(),
              " image files could be decoded; first problem: ", rep.warnings.front());
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
