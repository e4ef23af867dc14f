// transform_rows (data/batch_transform.h): each row equals SampleTransform::apply on that row
// alone (channels-last rows transposed first), for any thread count; uint8 output; bad indices;
// and random erasing's torchvision rule (a rectangle as tall or wide as the image never counts).
// transform_files: each picture file equals decode (no EXIF) + photo steps + apply, for any thread
// count; a file that cannot be decoded or opened is the typed error naming it; a plan whose size
// depends on the picture is refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

#include "ember/core/error.h"
#include "ember/data/batch_transform.h"
#include "ember/data/decode.h"
#include "ember/data/encode.h"
#include "ember/data/transforms.h"
#include "support/files.h"

using namespace ember::data;

namespace {

// n images of (H, W, C) uint8 with distinct-ish values.
std::vector<uint8_t> batch_hwc(int64_t n, int64_t h, int64_t w, int64_t c) {
  std::vector<uint8_t> b(size_t(n * h * w * c));
  for (size_t i = 0; i < b.size(); ++i) b[i] = uint8_t((i * 37 + i / 7) % 256);
  return b;
}

std::vector<uint8_t> to_planes_of(const uint8_t* hwc, int64_t h, int64_t w, int64_t c) {
  std::vector<uint8_t> p(size_t(c * h * w));
  for (int64_t y = 0; y < h * w; ++y)
    for (int64_t ch = 0; ch < c; ++ch) p[size_t(ch * h * w + y)] = hwc[y * c + ch];
  return p;
}

TransformOptions augmenting() {
  TransformOptions o;
  o.crop_padding = 3;
  o.pad_mode = PadMode::Reflect;
  o.hflip_p = 0.5;
  o.erase_p = 0.5;
  return o;
}

}  // namespace

TEST(DataBatchTransform, RowsEqualPerSampleApplyForAnyThreadCount) {
  const int64_t n = 9, h = 7, w = 6, c = 3;
  const auto images = batch_hwc(n, h, w, c);
  const SampleTransform t(augmenting(), c, h, w, {0.5f, 0.4f, 0.3f}, {0.2f, 0.25f, 0.3f});
  const std::vector<int64_t> idx = {4, 0, 8, 4, 2, 7, 1};
  const ImageBatch batch{images.data(), n, c, h, w, true};
  const int64_t sample = c * h * w;
  std::vector<float> expected(idx.size() * size_t(sample), -7.0f);
  for (size_t b = 0; b < idx.size(); ++b) {
    const auto planes = to_planes_of(images.data() + idx[b] * sample, h, w, c);
    t.apply(planes.data(), 11, 2, idx[b], expected.data() + b * size_t(sample));
  }
  for (int threads : {1, 2, 3, 16}) {
    std::vector<float> out(expected.size(), 99.0f);  // a sentinel a row that is never written keeps
    transform_rows(t, batch, idx.data(), int64_t(idx.size()), 11, 2, threads, out.data());
    EXPECT_EQ(out, expected) << threads << " threads";
  }
}

TEST(DataBatchTransform, PlanesInputAndUint8Output) {
  const int64_t n = 4, h = 5, w = 5, c = 2;
  const auto images = batch_hwc(n, h, w, c);  // read as (N, C, H, W) here
  TransformOptions o = augmenting();
  o.pad_mode = PadMode::Zero;
  o.scale = o.normalize = false;
  const SampleTransform t(o, c, h, w, {}, {});
  const std::vector<int64_t> idx = {3, 1};
  std::vector<uint8_t> out(idx.size() * size_t(c * h * w), 1);
  transform_rows(t, ImageBatch{images.data(), n, c, h, w, false}, idx.data(), 2, 5, 0, 2, nullptr, out.data());
  for (size_t b = 0; b < idx.size(); ++b) {
    std::vector<float> f(size_t(c * h * w));
    t.apply(images.data() + idx[b] * c * h * w, 5, 0, idx[b], f.data());
    for (size_t k = 0; k < f.size(); ++k) ASSERT_EQ(out[b * f.size() + k], uint8_t(f[k])) << b << " " << k;
  }
}

TEST(DataBatchTransform, BadIndexOrGeometryIsValueError) {
  const auto images = batch_hwc(2, 4, 4, 1);
  const SampleTransform t(TransformOptions{}, 1, 4, 4, {0.5f}, {0.5f});
  std::vector<float> out(16);
  const int64_t bad = 2;
  try {
    transform_rows(t, ImageBatch{images.data(), 2, 1, 4, 4, true}, &bad, 1, 0, 0, 1, out.data());
    FAIL() << "no error";
  } catch (const ember::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("outside the 2 images"), std::string::npos) << e.what();
  }
  const int64_t ok = 1;
  EXPECT_THROW(transform_rows(t, ImageBatch{images.data(), 2, 1, 4, 5, true}, &ok, 1, 0, 0, 1, out.data()),
               ember::ValueError);
}

TEST(DataBatchTransform, ErasingNeverTakesARectangleAsTallOrWideAsTheImage) {
  // scale 1 and ratio 1 ask for the whole 8 x 8 image every attempt: torchvision's get_params
  // rejects h == H, so nothing is erased.
  TransformOptions o;
  o.erase_p = 1.0;
  o.erase_scale = {1.0, 1.0};
  o.erase_ratio = {1.0, 1.0};
  for (int64_t i = 0; i < 50; ++i) EXPECT_FALSE(draw_sample_params(o, 1, 0, i, 8, 8).erase) << i;
  o.erase_scale = {0.25, 0.25};  // 4 x 4 fits
  for (int64_t i = 0; i < 50; ++i) {
    const SampleParams p = draw_sample_params(o, 1, 0, i, 8, 8);
    ASSERT_TRUE(p.erase);
    EXPECT_EQ(p.erase_h, 4);
    EXPECT_EQ(p.erase_w, 4);
  }
}

TEST(DataBatchTransform, ScaleByReciprocalIsV2sToDtype) {
  // transforms.v2's ToDtype(float32, scale=True) multiplies by float(1 / 255); ToTensor divides.
  TransformOptions o;
  o.normalize = false;
  o.scale_by_reciprocal = true;
  const SampleTransform mul(o, 1, 1, 1, {}, {});
  o.scale_by_reciprocal = false;
  const SampleTransform div(o, 1, 1, 1, {}, {});
  int differ = 0;
  for (int v = 0; v < 256; ++v) {
    EXPECT_EQ(mul.lookup_table()[size_t(v)], float(v) * float(1.0 / 255.0)) << v;
    EXPECT_EQ(div.lookup_table()[size_t(v)], float(v) / 255.0f) << v;
    differ += mul.lookup_table()[size_t(v)] != div.lookup_table()[size_t(v)];
  }
  EXPECT_GT(differ, 0);  // 51 is one: 0.2 against 0.20000002
}

TEST(DataBatchTransform, PhotoStepsRunBeforeThePassOnEachRow) {
  // RandomResizedCrop's box (from (seed, epoch, index)) resized, then the per-sample pass on the
  // result; and Resize + CenterCrop. Each row equals the steps run on that row alone.
  const int64_t n = 5, h = 13, w = 17, c = 3;
  const auto images = batch_hwc(n, h, w, c);
  PhotoSteps rrc;
  rrc.random_resized_crop = true;
  rrc.out_height = 9;
  rrc.out_width = 11;
  rrc.scale = {0.3, 1.0};
  PhotoSteps eval;
  eval.resize_height = 10;
  eval.resize_width = 13;
  eval.crop_height = eval.out_height = 8;
  eval.crop_width = eval.out_width = 8;
  for (const PhotoSteps& steps : {rrc, eval}) {
    TransformOptions o;
    o.hflip_p = 0.5;
    o.erase_p = 0.5;
    const SampleTransform t(o, c, steps.out_height, steps.out_width, {0.5f, 0.4f, 0.3f}, {0.2f, 0.25f, 0.3f});
    const std::vector<int64_t> idx = {4, 1, 1, 0};
    const int64_t out_sample = c * steps.out_height * steps.out_width;
    std::vector<float> expected(idx.size() * size_t(out_sample));
    for (size_t b = 0; b < idx.size(); ++b) {
      Image row(w, h, c);
      std::copy(images.begin() + idx[b] * h * w * c, images.begin() + (idx[b] + 1) * h * w * c, row.pixels.begin());
      Box box;
      const Image img = apply_photo_steps(steps, row, 3, 1, idx[b], &box);
      if (steps.random_resized_crop) {
        EXPECT_EQ(box, random_resized_crop_box(h, w, 3, 1, idx[b], steps.scale, steps.ratio));
        EXPECT_EQ(img.pixels, resize(row, 9, 11, box).pixels);
      } else {
        EXPECT_EQ(img.pixels, center_crop(resize(row, 10, 13), 8, 8).pixels);
      }
      const auto planes = to_planes_of(img.pixels.data(), steps.out_height, steps.out_width, c);
      t.apply(planes.data(), 3, 1, idx[b], expected.data() + b * size_t(out_sample));
    }
    for (int threads : {1, 3}) {
      std::vector<float> out(expected.size(), 99.0f);
      transform_rows(t, ImageBatch{images.data(), n, c, h, w, true}, idx.data(), int64_t(idx.size()), 3, 1, threads,
                     out.data(), nullptr, &steps);
      EXPECT_EQ(out, expected) << threads << " threads";
    }
  }
}

namespace {

namespace fs = std::filesystem;

// Pictures of different sizes (PNG and JPEG) in a fresh folder; their paths.
std::vector<std::string> write_pictures(const fs::path& dir) {
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::vector<std::array<int64_t, 2>> sizes = {{30, 40}, {50, 33}, {41, 41}, {64, 48}, {27, 90}};
  std::vector<std::string> paths;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const auto [h, w] = sizes[i];
    std::vector<uint8_t> px(size_t(h * w * 3));
    for (int64_t k = 0; k < h * w * 3; ++k) px[size_t(k)] = uint8_t((k * 13 + (k / (w * 3)) * 7 + int64_t(i) * 50) % 256);
    const bool jpeg = i % 2 == 1;
    const fs::path p = dir / ("p" + std::to_string(i) + (jpeg ? ".jpg" : ".png"));
    ember::test::write_bytes(p, jpeg ? encode_jpeg(px, h, w, 3, 90) : encode_png(px, h, w, 3));
    paths.push_back(p.string());
  }
  return paths;
}

// What transform_files must give for one file: decode, photo steps, (H, W, C) -> planes, apply.
std::vector<float> one_file(const SampleTransform& t, const PhotoSteps& photo, const std::string& path, uint64_t seed,
                            int64_t epoch, int64_t index) {
  DecodeOptions opt;
  opt.apply_exif = false;
  const Image img = apply_photo_steps(photo, decode_image(ember::test::read_bytes(path), opt, path), seed, epoch, index);
  const auto planes = to_planes_of(img.pixels.data(), img.height, img.width, 3);
  std::vector<float> out(planes.size());
  t.apply(planes.data(), seed, epoch, index, out.data());
  return out;
}

}  // namespace

TEST(DataBatchTransform, FilesEqualDecodePhotoStepsAndApplyForAnyThreadCount) {
  const fs::path dir = fs::temp_directory_path() / ("ember_transform_files_" + std::to_string(::getpid()));
  const auto paths = write_pictures(dir);
  TransformOptions o;
  o.scale = o.normalize = true;
  o.hflip_p = 0.5;
  PhotoSteps resize_crop;  // Resize(36) + CenterCrop(32): the resize's size depends on each picture
  resize_crop.resize_shorter = 36;
  resize_crop.crop_height = resize_crop.crop_width = resize_crop.out_height = resize_crop.out_width = 32;
  PhotoSteps rrc;  // RandomResizedCrop(32)
  rrc.random_resized_crop = true;
  rrc.out_height = rrc.out_width = 32;
  const SampleTransform t(o, 3, 32, 32, {0.5f, 0.4f, 0.3f}, {0.2f, 0.25f, 0.3f});
  const std::vector<int64_t> idx = {4, 0, 2, 9, 1};  // dataset indices: the draws' keys
  for (const PhotoSteps* photo : {&resize_crop, &rrc}) {
    std::vector<float> expected;
    for (size_t b = 0; b < paths.size(); ++b) {
      const auto one = one_file(t, *photo, paths[b], 7, 1, idx[b]);
      expected.insert(expected.end(), one.begin(), one.end());
    }
    for (int threads : {1, 2, 5}) {
      std::vector<float> out(expected.size(), 99.0f);
      transform_files(t, *photo, paths.data(), idx.data(), int64_t(paths.size()), 7, 1, threads, out.data());
      EXPECT_EQ(out, expected) << threads << " threads, random_resized_crop " << photo->random_resized_crop;
    }
  }
  fs::remove_all(dir);
}

TEST(DataBatchTransform, AFileThatCannotBeDecodedOrOpenedIsTheTypedErrorNamingIt) {
  const fs::path dir = fs::temp_directory_path() / ("ember_transform_files_bad_" + std::to_string(::getpid()));
  auto paths = write_pictures(dir);
  const std::string broken = (dir / "broken.jpg").string();
  ember::test::write_text(broken, "not a picture at all");
  PhotoSteps rrc;
  rrc.random_resized_crop = true;
  rrc.out_height = rrc.out_width = 16;
  const SampleTransform t(TransformOptions{}, 3, 16, 16, {0.5f, 0.5f, 0.5f}, {0.2f, 0.2f, 0.2f});
  paths[3] = broken;
  const std::vector<int64_t> idx = {0, 1, 2, 3, 4};
  std::vector<float> out(5 * 3 * 16 * 16);
  for (int threads : {1, 3}) {
    try {
      transform_files(t, rrc, paths.data(), idx.data(), 5, 0, 0, threads, out.data());
      ADD_FAILURE() << "no DataError for " << broken;
    } catch (const ember::DataError& e) {
      EXPECT_NE(std::string(e.what()).find("broken.jpg"), std::string::npos) << e.what();
    }
  }
  paths[3] = (dir / "missing.png").string();
  try {
    transform_files(t, rrc, paths.data(), idx.data(), 5, 0, 0, 2, out.data());
    ADD_FAILURE() << "no IOError for a missing file";
  } catch (const ember::IOError& e) {
    EXPECT_NE(std::string(e.what()).find("missing.png"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

TEST(DataBatchTransform, FilesNeedPhotoStepsEndingInTheTransformsSize) {
  const std::string path = "unused.png";
  const int64_t index = 0;
  std::vector<float> out(3 * 8 * 8);
  const SampleTransform t(TransformOptions{}, 3, 8, 8, {0.5f, 0.5f, 0.5f}, {0.2f, 0.2f, 0.2f});
  PhotoSteps shorter;  // Resize(8) alone: 8 x something, not 8 x 8
  shorter.resize_shorter = 8;
  shorter.out_height = shorter.out_width = 8;
  EXPECT_THROW(transform_files(t, shorter, &path, &index, 1, 0, 0, 1, out.data()), ember::ValueError);
  PhotoSteps none;
  EXPECT_THROW(transform_files(t, none, &path, &index, 1, 0, 0, 1, out.data()), ember::ValueError);
}
