// The image decoders (data/decode.h) against Pillow: every fixture of tests/fixtures/images/ (written
// by make_images.py with Pillow 9.4 on libjpeg-turbo 2.1.5) decodes to the pixels Pillow's
// convert("RGB") / convert("L") gives, at full size, DCT-scaled (Pillow's draft()) and EXIF-turned
// (ImageOps.exif_transpose); expected.txt holds their SHA-256. Then the odd files: truncated at
// every few bytes, garbage, forged headers over the pixel budget, 16-bit grey, broken EXIF.
#include <gtest/gtest.h>

#include <stb/stb_image.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "data/decode_internal.h"
#include "support/child_process.h"
#include "support/errors.h"
#include "support/files.h"
#include "support/png_bomb.h"
#include "support/test_data.h"
#include "ember/core/error.h"
#include "ember/data/dataset.h"
#include "ember/data/decode.h"
#include "ember/io/sha256.h"

using namespace ember;
using namespace ember::data;
namespace fs = std::filesystem;

namespace {

const fs::path kDir = fs::path(ember::test::data_dir()) / "fixtures" / "images";

std::vector<uint8_t> fixture(const std::string& name) { return ember::test::read_bytes(kDir / name); }

struct Expected {
  std::string file, mode;
  int64_t min_w = 0, min_h = 0, width = 0, height = 0;
  bool exif = false;
  std::string sha256;
  std::vector<std::string> samples;  // "x,y=v/v/v"
  std::string line;
};

std::vector<Expected> read_expected() {
  std::ifstream in(kDir / "expected.txt");
  std::vector<Expected> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream s(line);
    Expected e;
    std::string mins, size, tok;
    int exif = 0;
    char x = 0;
    s >> e.file >> e.mode >> mins >> exif >> size >> e.sha256;
    std::istringstream(mins) >> e.min_w >> x >> e.min_h;
    std::istringstream(size) >> e.width >> x >> e.height;
    e.exif = exif != 0;
    while (s >> tok && tok[0] != '#') e.samples.push_back(tok);
    e.line = line;
    out.push_back(e);
  }
  return out;
}

std::string pixel_at(const Image& im, int64_t x, int64_t y) {
  std::string s;
  for (int64_t c = 0; c < im.channels; ++c) s += (c ? "/" : "") + std::to_string(im.row(y)[x * im.channels + c]);
  return s;
}

Image decode(const std::string& name, int channels = 3, int64_t min_w = 0, int64_t min_h = 0, bool exif = true) {
  DecodeOptions o;
  o.channels = channels, o.min_width = min_w, o.min_height = min_h, o.apply_exif = exif;
  return decode_image(fixture(name), o, name);
}

}  // namespace

TEST(DataDecode, EveryFixtureGivesPillowsPixels) {
  const std::vector<Expected> all = read_expected();
  ASSERT_GE(all.size(), 100u) << "expected.txt missing or short: run tests/fixtures/images/make_images.py";
  int checked = 0, scaled = 0;
  for (const Expected& e : all) {
    SCOPED_TRACE(e.line);
    // Without EXIF the stored orientation is kept (Pillow's plain open()); expected.txt's exif=1
    // lines are exif_transpose()'s output.
    const Image im = decode(e.file, e.mode == "L" ? 1 : 3, e.min_w, e.min_h, e.exif);
    ASSERT_EQ(im.width, e.width);
    ASSERT_EQ(im.height, e.height);
    ASSERT_EQ(im.pixels.size(), size_t(e.width * e.height * (e.mode == "L" ? 1 : 3)));
    if (io::sha256_hex(im.pixels) != e.sha256) {
      std::string got;
      for (const std::string& s : e.samples) {
        int64_t x = 0, y = 0;
        char c = 0;
        std::istringstream(s) >> x >> c >> y;
        got += detail::cat(" ", x, ",", y, "=", pixel_at(im, x, y));
      }
      ADD_FAILURE() << "pixels differ from Pillow's; ember's samples:" << got;
    }
    ++checked;
    scaled += e.min_w > 0;
  }
  EXPECT_GE(scaled, 21);
  EXPECT_EQ(checked, int(all.size()));
}

TEST(DataDecode, ProbeReadsTheHeaderOnly) {
  struct Case {
    const char* file;
    const char* format;
    int64_t w, h, channels;
    int orientation;
    bool progressive;
  };
  const Case cases[] = {
      {"rgb_420.jpg", "JPEG", 23, 17, 3, 1, false},         {"rgb_progressive.jpg", "JPEG", 23, 17, 3, 1, true},
      {"grey.jpg", "JPEG", 23, 17, 1, 1, false},            {"cmyk_adobe.jpg", "JPEG", 23, 17, 4, 1, false},
      {"ycck_adobe.jpg", "JPEG", 23, 17, 4, 1, false},      {"exif_6.jpg", "JPEG", 23, 17, 3, 6, false},
      {"exif_8.jpg", "JPEG", 23, 17, 3, 8, false},          {"exif_6.png", "PNG", 23, 17, 3, 6, false},
      {"rgba.png", "PNG", 23, 17, 4, 1, false},             {"grey_alpha.png", "PNG", 23, 17, 2, 1, false},
      {"palette_trns.png", "PNG", 23, 17, 3, 1, false},     {"grey16.png", "PNG", 5, 3, 1, 1, false},
      {"rgba_lossless.webp", "WebP", 23, 17, 4, 1, false},  {"photo_wood.webp", "WebP", 48, 36, 3, 1, false},
      {"rgb.bmp", "BMP", 23, 17, 3, 1, false},              {"two_frames.gif", "GIF", 23, 17, 4, 1, false},
      {"grey.pgm", "PNM", 23, 17, 1, 1, false},             {"rgb.tga", "TGA", 23, 17, 3, 1, false},
  };
  // (stb_image's formats report what stb does: a GIF as 4 channels, its palette's RGB and a
  // transparency flag.)
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    const ImageInfo info = probe_image(fixture(c.file), c.file);
    EXPECT_EQ(info.format, c.format);
    EXPECT_EQ(info.width, c.w);
    EXPECT_EQ(info.height, c.h);
    EXPECT_EQ(info.channels_in_file, c.channels);
    EXPECT_EQ(info.exif_orientation, c.orientation);
    EXPECT_EQ(info.progressive, c.progressive);
    EXPECT_EQ(info.oriented_width(), c.orientation >= 5 ? c.h : c.w);
  }
  // The path overload reads the file.
  EXPECT_EQ(probe_image(kDir / "photo.jpg").width, 128);
}

TEST(DataDecode, DctScalingPicksTheSmallestScaleStillCoveringTheMinimum) {
  // photo.jpg is 128x96: 1/2 gives 64x48, 1/4 32x24, 1/8 16x12.
  struct Case {
    int64_t min_w, min_h, w, h;
  };
  for (const Case& c : {Case{0, 0, 128, 96}, Case{64, 48, 64, 48}, Case{65, 10, 128, 96}, Case{10, 49, 128, 96},
                        Case{33, 24, 64, 48}, Case{32, 24, 32, 24}, Case{16, 12, 16, 12}, Case{1, 1, 16, 12},
                        Case{224, 224, 128, 96}}) {
    const Image im = decode("photo.jpg", 3, c.min_w, c.min_h);
    EXPECT_EQ(im.width, c.w) << c.min_w << "x" << c.min_h;
    EXPECT_EQ(im.height, c.h) << c.min_w << "x" << c.min_h;
  }
  // The minimum is for the picture as shown: exif_6.jpg is stored 23x17 and shown 17x23, so 9 wide
  // by 12 high is 1/2 of the stored file (12x9), turned to 9x12.
  Image turned = decode("exif_6.jpg", 3, 9, 12);
  EXPECT_EQ(turned.width, 9);
  EXPECT_EQ(turned.height, 12);
  // Other formats ignore the minimum (full size).
  EXPECT_EQ(decode("rgb.png", 3, 4, 4).width, 23);
}

TEST(DataDecode, EachExifOrientationTurnsLikeExifTranspose) {
  // Besides expected.txt: the corners of exif_N are those of exif_1 moved where Pillow moves them.
  const Image up = decode("exif_1.jpg");
  const int64_t W = up.width, H = up.height;
  for (int o = 1; o <= 8; ++o) {
    SCOPED_TRACE(o);
    const Image im = decode(detail::cat("exif_", o, ".jpg"));
    const Image raw = decode(detail::cat("exif_", o, ".jpg"), 3, 0, 0, /*exif=*/false);
    EXPECT_EQ(raw.pixels, up.pixels) << "without apply_exif the stored pixels";
    ASSERT_EQ(im.width, o >= 5 ? H : W);
    // Where the stored top-left pixel lands.
    const std::pair<int64_t, int64_t> where[] = {{0, 0},          {0, 0},         {W - 1, 0},     {W - 1, H - 1},
                                                 {0, H - 1},      {0, 0},         {H - 1, 0},     {H - 1, W - 1},
                                                 {0, W - 1}};
    const auto [x, y] = where[o];
    EXPECT_EQ(pixel_at(im, x, y), pixel_at(up, 0, 0)) << "orientation " << o << " at " << x << "," << y;
  }
}

TEST(DataDecode, SixteenBitPngsKeepTheHighByte) {
  // make_images.py's values: rgb16 pixel (x, y) = (x*13000 + 301, y*20000 + 255, (x+y)*7000 + 128).
  // Pillow agrees for RGB, RGBA and grey+alpha (expected.txt); for 16-bit grey it opens mode "I"
  // and convert() clips to 255, which whitens the picture: ember keeps the high byte there too.
  const Image rgb = decode("rgb16.png");
  const Image grey = decode("grey16.png", 1);
  const Image grey_rgb = decode("grey16.png", 3);
  ASSERT_EQ(rgb.width, 5);
  ASSERT_EQ(grey.height, 3);
  for (int64_t y = 0; y < 3; ++y) {
    for (int64_t x = 0; x < 5; ++x) {
      const uint8_t* p = rgb.row(y) + x * 3;
      EXPECT_EQ(p[0], (x * 13000 + 301) >> 8);
      EXPECT_EQ(p[1], (y * 20000 + 255) >> 8);
      EXPECT_EQ(p[2], ((x + y) * 7000 + 128) >> 8);
      EXPECT_EQ(grey.row(y)[x], (y * 20000 + 255) >> 8);
      EXPECT_EQ(grey_rgb.row(y)[x * 3 + 2], (y * 20000 + 255) >> 8);
    }
  }
}

TEST(DataDecode, GreyIsPillowsConvertL) {
  // L = (R*19595 + G*38470 + B*7471 + 0x8000) >> 16 (Pillow's L24), on a few values by hand.
  const uint8_t rgb[] = {255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 255, 10, 200, 30, 1, 1, 1};
  uint8_t l[6] = {};
  internal::rgb_to_grey(rgb, l, 6);
  EXPECT_EQ(std::vector<uint8_t>(l, l + 6), (std::vector<uint8_t>{76, 150, 29, 255, 124, 1}));
  // Pillow's cmyk2rgb on an Adobe file's inverted samples (Pillow 9.4 gives (207, 46, 190) for
  // CMYK (10, 200, 30, 40), stored inverted as (245, 55, 225, 215)).
  const uint8_t cmyk[] = {245, 55, 225, 215, 255, 255, 255, 255, 0, 0, 0, 0};
  uint8_t out[9] = {};
  internal::inverted_cmyk_to_rgb(cmyk, out, 3);
  EXPECT_EQ(std::vector<uint8_t>(out, out + 9), (std::vector<uint8_t>{207, 46, 190, 255, 255, 255, 0, 0, 0}));
}

TEST(DataDecode, TruncatedFilesAreAClearErrorNeverACrash) {
  for (const char* name : {"photo.jpg", "photo_progressive.jpg", "rgb_420.jpg", "cmyk_adobe.jpg", "photo_flower.png",
                           "palette_trns.png", "rgb16.png", "rgba_lossless.webp", "photo_wood.webp", "rgb.bmp",
                           "two_frames.gif", "rgb.tga"}) {
    SCOPED_TRACE(name);
    const std::vector<uint8_t> whole = fixture(name);
    const size_t step = std::max<size_t>(1, whole.size() / 97);
    int errors = 0;
    for (size_t n = 0; n < whole.size(); n += step) {
      const std::vector<uint8_t> cut(whole.begin(), whole.begin() + std::ptrdiff_t(n));
      try {
        const Image im = decode_image(cut, {}, name);
        EXPECT_EQ(im.pixels.size(), size_t(im.width * im.height * 3));  // a cut in trailing bytes
      } catch (const DataError& e) {
        EXPECT_TRUE(ember::test::contains(e.what(), name)) << e.what();
        EXPECT_TRUE(ember::test::contains(e.what(), "cannot decode image")) << e.what();
        EXPECT_FALSE(e.hint().empty());
        ++errors;
      }
    }
    // Every cut is refused but those in trailing bytes, and a GIF's: stb_image gives the frame it
    // has read when its LZW data stops (Pillow refuses it).
    EXPECT_GT(errors, std::string(name).ends_with(".gif") ? 30 : 90);
  }
  // Cut in the image data: named as truncated.
  for (const char* name : {"photo.jpg", "photo_progressive.jpg", "photo_flower.png", "photo_wood.webp", "rgb.bmp",
                           "rgb.tga"}) {
    std::vector<uint8_t> b = fixture(name);
    b.resize(b.size() * 2 / 3);
    ember::test::expect_error<DataError>([&] { decode_image(b, {}, name); }, "truncated");
  }
}

// A progressive JPEG cut anywhere in its scans is refused as truncated, at full size and scaled:
// libjpeg warns "Premature end of JPEG file" and may then fail on a later scan's half-read tables,
// which TurboJPEG 2.1 reports as a mere warning (cut at 4,862 of 6,832 bytes it did, and the
// half-refined picture was handed out; Pillow refuses every such cut).
TEST(DataDecode, AProgressiveFileCutInALaterScanIsTruncated) {
  const std::vector<uint8_t> whole = fixture("photo_progressive.jpg");
  std::vector<size_t> cuts = {4862};
  for (size_t n = whole.size() / 8; n + 2 < whole.size(); n += whole.size() / 61) cuts.push_back(n);
  for (size_t n : cuts)
    for (int64_t min_side : {0, 8}) {
      const std::vector<uint8_t> cut(whole.begin(), whole.begin() + std::ptrdiff_t(n));
      DecodeOptions o;
      o.min_width = o.min_height = min_side;
      try {
        decode_image(cut, o, "photo_progressive.jpg");
        ADD_FAILURE() << "cut at " << n << " of " << whole.size() << " bytes (min side " << min_side << ") decoded";
      } catch (const DataError& e) {
        EXPECT_TRUE(ember::test::contains(e.what(), "photo_progressive.jpg")) << e.what();
      }
    }
  // The same cut of a baseline file: refused as before, and the whole files still decode.
  EXPECT_NO_THROW(decode_image(whole, {}, "photo_progressive.jpg"));
  EXPECT_NO_THROW(decode_image(fixture("photo.jpg"), {}, "photo.jpg"));
}

TEST(DataDecode, NotAnImageNamesWhatItFound) {
  const std::string text = "this is not an image";
  const std::vector<uint8_t> bytes(text.begin(), text.end());
  const std::string msg =
      ember::test::expect_error<DataError>([&] { decode_image(bytes, {}, "notes.jpg"); }, "notes.jpg: cannot decode image");
  EXPECT_TRUE(ember::test::contains(msg, "expected a PNG, JPEG, WebP")) << msg;
  EXPECT_TRUE(ember::test::contains(msg, "74 68 69 73")) << msg;
  ember::test::expect_error<DataError>([&] { probe_image(std::vector<uint8_t>{}, "empty.png"); }, "an empty file");
  DecodeOptions o;
  o.channels = 4;
  ember::test::expect_error<DataError>([&] { decode_image(fixture("rgb.png"), o, "rgb.png"); },
                                       "channels must be 1 (grey) or 3 (RGB), got 4");
}

// Found by fuzz_decode in CI: a 16-bit PGM (maxval 7555) cut after 3 bytes of samples made stb_image
// read past the end; the size its header asks for is checked first, as for BMP and TGA.
TEST(DataDecode, ACutPnmIsRefusedBeforeStbReadsIt) {
  const std::string pgm16 = "P5223\n\n 93\n\n 7555\n\xda\x95" "F";
  ember::test::expect_error<DataError>(
      [&] { decode_image(std::vector<uint8_t>(pgm16.begin(), pgm16.end()), {}, "cut16.pgm"); }, "truncated");
  const std::string ppm = "P6 4 4 255\n" + std::string(47, '\x7f');  // 48 bytes needed
  ember::test::expect_error<DataError>(
      [&] { decode_image(std::vector<uint8_t>(ppm.begin(), ppm.end()), {}, "cut.ppm"); }, "truncated");
  const std::string whole = "P6 4 4 255\n" + std::string(48, '\x7f');
  EXPECT_EQ(decode_image(std::vector<uint8_t>(whole.begin(), whole.end()), {}, "whole.ppm").width, 4);
  const std::string header_cut = "P5 12";
  ember::test::expect_error<DataError>(
      [&] { decode_image(std::vector<uint8_t>(header_cut.begin(), header_cut.end()), {}, "header.pgm"); },
      "header.pgm");
}

TEST(DataDecode, FilesWithoutAPictureAreRefused) {
  // Found by fuzz_decode: a JPEG of tables only (TurboJPEG says 0x0 and success), a PGM of 23x0.
  std::vector<uint8_t> tables = fixture("rgb_444.jpg");
  for (size_t i = 2; i + 1 < tables.size(); ++i) {
    if (tables[i] == 0xFF && tables[i + 1] == 0xC0) {  // cut at the frame header, end the file there
      tables.resize(i);
      tables.insert(tables.end(), {0xFF, 0xD9});
      break;
    }
  }
  ember::test::expect_error<DataError>([&] { decode_image(tables, {}, "tables.jpg"); }, "tables.jpg: cannot decode image");
  const std::string pgm = "P5\n23 0\n255\n";
  ember::test::expect_error<DataError>([&] { probe_image(std::vector<uint8_t>(pgm.begin(), pgm.end()), "empty.pgm"); },
                                       "an empty picture, 23x0");
}

TEST(DataDecode, ForgedHeadersOverTheBudgetAreRefusedBeforeDecoding) {
  // A PNG whose IHDR says 20000x20000 and that has no image data at all: only the header is read.
  std::vector<uint8_t> png = fixture("one_pixel.png");
  auto put32 = [](std::vector<uint8_t>& b, size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) b[at + size_t(i)] = uint8_t(v >> (24 - 8 * i));
  };
  put32(png, 16, 20000);
  put32(png, 20, 20000);  // the IHDR CRC is now wrong: libspng checks it, so fix it
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 12; i < 29; ++i) {
    crc ^= png[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  put32(png, 29, ~crc);
  EXPECT_EQ(probe_image(png, "bomb.png").width, 20000);
  ember::test::expect_error<DataError>([&] { decode_image(png, {}, "bomb.png"); },
                                       "bomb.png: the image is 20000x20000 = 400,000,000 pixels, more than the budget "
                                       "of 178,956,970");
  // A JPEG whose SOF says 30000x30000.
  std::vector<uint8_t> jpg = fixture("rgb_444.jpg");
  bool patched = false;
  for (size_t i = 2; i + 9 < jpg.size() && !patched; ++i) {
    if (jpg[i] == 0xFF && jpg[i + 1] == 0xC0) {
      jpg[i + 5] = 30000 >> 8, jpg[i + 6] = 30000 & 0xFF, jpg[i + 7] = 30000 >> 8, jpg[i + 8] = 30000 & 0xFF;
      patched = true;
    }
  }
  ASSERT_TRUE(patched);
  ember::test::expect_error<DataError>([&] { decode_image(jpg, {}, "big.jpg"); }, "30000x30000 = 900,000,000 pixels");
  // The budget is adjustable, warns above half of it, and 0 means no limit.
  DecodeOptions o;
  o.max_pixels = 23 * 17 - 1;
  try {
    decode_image(fixture("rgb.png"), o, "rgb.png");
    ADD_FAILURE() << "decoded over the budget";
  } catch (const DataError& e) {
    EXPECT_TRUE(ember::test::contains(e.what(), "23x17 = 391 pixels, more than the budget of 390")) << e.what();
    EXPECT_TRUE(ember::test::contains(e.hint(), "--max-image-pixels")) << e.hint();
  }
  o.max_pixels = 23 * 17 + 10;
  std::string warning;
  EXPECT_EQ(decode_image(fixture("rgb.png"), o, "rgb.png", &warning).width, 23);
  EXPECT_TRUE(ember::test::contains(warning, "rgb.png: a large image (23x17 = 391 pixels")) << warning;
  o.max_pixels = 0;
  EXPECT_EQ(decode_image(fixture("rgb.png"), o, "rgb.png", &warning).width, 23);
  EXPECT_EQ(warning, "");
}

TEST(DataDecode, A20000x20000PngBombIsRefusedInLittleMemory) {
  const fs::path bomb = fs::temp_directory_path() / ("ember_decode_bomb_" + std::to_string(::getpid()) + ".png");
  ASSERT_TRUE(ember::test::write_zero_png(bomb, 20000, 20000));
  const std::vector<uint8_t> bytes = ember::test::read_bytes(bomb);
  fs::remove(bomb);
  const ember::test::ChildResult r = ember::test::run_in_child(
      [&] { return ember::test::message_of<DataError>([&] { decode_image(bytes, {}, "bomb.png"); }); }, 60.0,
      3ul << 30);
  ASSERT_FALSE(r.timed_out);
  EXPECT_TRUE(ember::test::contains(r.output, "20000x20000 = 400,000,000 pixels")) << r.output;
  EXPECT_LT(r.rss_growth_kb, 300 * 1024);
  // Under a raised budget it would decode: the refusal is the budget's, not a parse failure.
  DecodeOptions o;
  o.max_pixels = 0;
  EXPECT_EQ(probe_image(bytes, "bomb.png").height, 20000);
}

TEST(DataDecode, BrokenExifIsIgnoredNotFollowed) {
  using internal::exif_orientation_from_tiff;
  auto tiff = [](bool le, uint32_t ifd, uint16_t count, uint16_t tag, uint16_t type, uint32_t value) {
    std::vector<uint8_t> t = le ? std::vector<uint8_t>{'I', 'I', 42, 0} : std::vector<uint8_t>{'M', 'M', 0, 42};
    auto p16 = [&](uint32_t v) {
      if (le) t.insert(t.end(), {uint8_t(v), uint8_t(v >> 8)});
      else t.insert(t.end(), {uint8_t(v >> 8), uint8_t(v)});
    };
    auto p32 = [&](uint32_t v) {
      if (le) t.insert(t.end(), {uint8_t(v), uint8_t(v >> 8), uint8_t(v >> 16), uint8_t(v >> 24)});
      else t.insert(t.end(), {uint8_t(v >> 24), uint8_t(v >> 16), uint8_t(v >> 8), uint8_t(v)});
    };
    p32(ifd);
    p16(count);
    p16(tag), p16(type), p32(1);
    if (type == 3) p16(value), p16(0);
    else p32(value);
    return t;
  };
  EXPECT_EQ(exif_orientation_from_tiff(tiff(true, 8, 1, 0x0112, 3, 6)), 6);
  EXPECT_EQ(exif_orientation_from_tiff(tiff(false, 8, 1, 0x0112, 3, 8)), 8);
  EXPECT_EQ(exif_orientation_from_tiff(tiff(true, 8, 1, 0x0112, 4, 3)), 3);   // LONG
  EXPECT_EQ(exif_orientation_from_tiff(tiff(true, 8, 1, 0x0112, 3, 9)), 1);   // out of range
  EXPECT_EQ(exif_orientation_from_tiff(tiff(true, 8, 1, 0x0100, 3, 6)), 1);   // another tag
  EXPECT_EQ(exif_orientation_from_tiff(tiff(true, 9999, 1, 0x0112, 3, 6)), 1);  // IFD outside
  EXPECT_EQ(exif_orientation_from_tiff(tiff(true, 8, 60000, 0x0100, 3, 6)), 1);  // count past the end
  EXPECT_EQ(exif_orientation_from_tiff({}), 1);
  std::vector<uint8_t> t = tiff(true, 8, 1, 0x0112, 3, 6);
  t.resize(t.size() - 3);  // entry cut short
  EXPECT_EQ(exif_orientation_from_tiff(t), 1);
}

TEST(DataDecode, ThreadsDecodeAtOnce) {
  const std::vector<uint8_t> bytes = fixture("photo.jpg");
  const Image ref = decode_image(bytes, {}, "photo.jpg");
  std::vector<std::thread> threads;
  std::vector<int> same(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) same[size_t(t)] += decode_image(bytes, {}, "photo.jpg").pixels == ref.pixels;
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(same, std::vector<int>(4, 20));
}

TEST(DataDecode, ExtensionsAreThoseDecoded) {
  for (const char* e : {".jpg", ".JPEG", ".jpe", ".jfif", ".png", ".WebP", ".bmp", ".gif", ".tga", ".ppm", ".pgm"})
    EXPECT_TRUE(is_image_extension(e)) << e;
  for (const char* e : {".txt", ".tif", ".heic", "", ".jpgx"}) EXPECT_FALSE(is_image_extension(e)) << e;
}

TEST(DataDecode, ImageFoldersReadTheNewFormats) {
  ember::test::TempDir dir("decode_folder");
  fs::create_directories(dir.path() / "a");
  fs::create_directories(dir.path() / "b");
  fs::copy_file(kDir / "photo_wood.webp", dir.path() / "a" / "wood.webp");
  fs::copy_file(kDir / "photo.jpg", dir.path() / "a" / "photo.JFIF");
  fs::copy_file(kDir / "exif_6.jpg", dir.path() / "b" / "turned.jpe");
  ImageFolderOptions o;
  o.height = 8, o.width = 8;
  ImageFolderReport rep;
  const Dataset ds = load_image_folder(dir.path(), o, &rep);
  EXPECT_EQ(ds.size(), 3);
  EXPECT_TRUE(rep.not_read.empty());
  EXPECT_TRUE(rep.warnings.empty());
  // The path overload of probe_image reads the .jpe's EXIF orientation (the folder's decode turns it).
  const ImageInfo info = probe_image(dir.path() / "b" / "turned.jpe");
  EXPECT_EQ(info.exif_orientation, 6);
  EXPECT_EQ(info.oriented_width(), 17);
}
