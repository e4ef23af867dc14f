// transform_rows / transform_files: a SampleTransform over the rows of a uint8 batch or over picture
// files decoded here (channels-last rows read in place by SampleTransform::apply), on std::threads, each sample independent (stateless draws), so the thread
// count never changes the result.
#include "ember/data/batch_transform.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <tuple>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "ember/core/error.h"
#include "ember/core/threads.h"
#include "ember/data/decode.h"
#include "ember/io/user_file.h"

namespace ember::data {

namespace {

// Runs work(first, step) on min(threads, count) std::threads (this one included): thread t gets
// (t, T), for the fixed split b = t, t + T, ... (a work may ignore them and take samples as it goes).
template <typename Work>
void spread(int64_t count, int threads, const Work& work, const char* what) {
  const int64_t n_threads = std::clamp<int64_t>(threads, 1, count);
  if (n_threads == 1) {
    work(0, 1);
    return;
  }
  std::vector<std::thread> pool;
  pool.reserve(size_t(n_threads - 1));
  try {
    for (int64_t t = 1; t < n_threads; ++t) pool.emplace_back(work, t, n_threads);
  } catch (const std::system_error& e) {
    for (auto& th : pool) th.join();
    throw_thread_start_error(e, std::string(what) + " thread " + std::to_string(pool.size() + 1) + " of " +
                                    std::to_string(n_threads), "ember.set_num_threads() with a smaller count");
  }
  work(0, n_threads);
  for (auto& th : pool) th.join();
}

}  // namespace

Image apply_photo_steps(const PhotoSteps& steps, const Image& src, uint64_t seed, int64_t epoch, int64_t index,
                        Box* box) {
  if (steps.random_resized_crop) {
    const Box b = random_resized_crop_box(src.height, src.width, seed, epoch, index, steps.scale, steps.ratio);
    if (box != nullptr) *box = b;
    return resize(src, steps.out_height, steps.out_width, b);
  }
  if (box != nullptr) *box = Box{0, 0, src.height, src.width};
  int64_t rh = steps.resize_height, rw = steps.resize_width;
  if (steps.resize_shorter > 0)
    std::tie(rh, rw) = shorter_side_size(src.height, src.width, steps.resize_shorter, steps.resize_max_size);
  // torchvision hands an image already of the asked size back untouched (Pillow's resize copies it).
  Image img = rh > 0 && (rh != src.height || rw != src.width) ? resize(src, rh, rw) : src;
  if (steps.crop_height > 0) img = center_crop(img, steps.crop_height, steps.crop_width);
  return img;
}

void transform_rows(const SampleTransform& transform, const ImageBatch& images, const int64_t* indices,
                    int64_t count, uint64_t seed, int64_t epoch, int threads, float* out_float,
                    uint8_t* out_uint8, const PhotoSteps* photo) {
  const int64_t c = images.channels;
  const int64_t h = photo ? photo->out_height : images.height, w = photo ? photo->out_width : images.width;
  EMBER_CHECK(photo == nullptr || images.channels_last, ValueError,
              "transform_rows: photo steps read channels-last (N, H, W, C) rows");
  EMBER_CHECK(transform.channels() == c && transform.height() == h && transform.width() == w, ValueError,
              "transform_rows: the transform is for (C, H, W) = (", transform.channels(), ", ",
              transform.height(), ", ", transform.width(), ") but the images are (", c, ", ", h, ", ", w, ")");
  EMBER_CHECK((out_float == nullptr) != (out_uint8 == nullptr), ValueError,
              "transform_rows: give exactly one output (float32 or uint8)");
  EMBER_CHECK(count >= 0, ValueError, "transform_rows: count must be >= 0, got ", count);
  for (int64_t b = 0; b < count; ++b)
    EMBER_CHECK(indices[b] >= 0 && indices[b] < images.n, ValueError, "transform_rows: index ", indices[b],
                " (position ", b, ") is outside the ", images.n, " images");
  if (count == 0) return;
  EMBER_CHECK(images.pixels != nullptr, ValueError, "transform_rows: no pixels");
  const int64_t sample = c * h * w;
  const int64_t in_sample = c * images.height * images.width;

  // Samples b = t, t + T, ... go to thread t: a fixed split, though any split gives the same bytes.
  auto work = [&](int64_t first, int64_t step) {
    std::vector<float> staging(out_uint8 != nullptr ? size_t(sample) : 0);
    Image photo_in(images.width, images.height, c), photo_out;
    for (int64_t b = first; b < count; b += step) {
      const uint8_t* src = images.pixels + indices[b] * in_sample;
      if (photo != nullptr) {
        std::copy(src, src + in_sample, photo_in.pixels.begin());
        photo_out = apply_photo_steps(*photo, photo_in, seed, epoch, indices[b]);
        src = photo_out.pixels.data();
      }
      float* dst = out_uint8 != nullptr ? staging.data() : out_float + b * sample;
      transform.apply(src, seed, epoch, indices[b], dst, images.channels_last && c > 1);
      if (out_uint8 != nullptr) {
        uint8_t* o = out_uint8 + b * sample;
        for (int64_t k = 0; k < sample; ++k) o[k] = uint8_t(std::clamp(staging[size_t(k)], 0.0f, 255.0f));
      }
    }
  };
  spread(count, threads, work, "image-transform");
}

void transform_files(const SampleTransform& transform, const PhotoSteps& photo, const std::string* paths,
                     const int64_t* indices, int64_t count, uint64_t seed, int64_t epoch, int threads,
                     float* out_float) {
  const int64_t c = transform.channels(), h = transform.height(), w = transform.width();
  EMBER_CHECK(c == 3, ValueError, "transform_files: pictures are decoded to RGB, so the transform needs 3 channels, got ",
              c);
  // Only a last step of a fixed size makes every sample (h, w) whatever the picture's size.
  const bool fixed = photo.random_resized_crop || photo.crop_height > 0 ||
                     (photo.resize_shorter == 0 && photo.resize_height > 0);
  EMBER_CHECK(fixed && photo.out_height == h && photo.out_width == w, ValueError,
              "transform_files: the photo steps must end in the transform's fixed size ", h, " x ", w,
              " (RandomResizedCrop(size), Resize((h, w)) or Resize + CenterCrop); pictures differ in size");
  EMBER_CHECK(out_float != nullptr, ValueError, "transform_files: no output");
  EMBER_CHECK(count >= 0, ValueError, "transform_files: count must be >= 0, got ", count);
  if (count == 0) return;
  const int64_t sample = c * h * w;
  std::vector<std::exception_ptr> errors(static_cast<size_t>(count));  // each sample's failure, rethrown in order
  // Pictures differ in size and crop, so threads take the next sample as they finish (a fixed split
  // leaves one thread a few pictures behind at each batch's end); each sample's result depends only
  // on its own draws, so the bytes are the same.
  std::atomic<int64_t> next{0};
  auto work = [&](int64_t, int64_t) {
    DecodeOptions opt;
    opt.channels = 3;
    opt.max_pixels = kMaxImagePixels;  // Pillow's DecompressionBombError limit
    opt.apply_exif = false;            // torchvision's pil_loader does not rotate
    for (int64_t b = next.fetch_add(1); b < count; b = next.fetch_add(1)) {
      try {
        const std::vector<uint8_t> bytes = io::read_user_file(paths[b], io::kImageFile);
        const Image picture = decode_image(bytes, opt, paths[b]);
        const Image img = apply_photo_steps(photo, picture, seed, epoch, indices[b]);
        EMBER_CHECK(img.height == h && img.width == w && img.channels == c, InternalError,
                    "transform_files: the photo steps gave ", img.height, " x ", img.width, " for ", paths[b]);
        transform.apply(img.pixels.data(), seed, epoch, indices[b], out_float + b * sample, /*channels_last=*/true);
      } catch (...) {  // an exception must not leave a std::thread: kept and rethrown below
        errors[size_t(b)] = std::current_exception();
      }
    }
  };
  spread(count, threads, work, "picture-decoding");
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace ember::data
