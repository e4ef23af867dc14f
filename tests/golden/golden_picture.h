// Pictures for the photo tests that compare ember against torchvision on PIL images
// (make_golden_photo.py -> photo_v1.bin, make_golden_augment.py -> augment_v1.bin): the hashed
// inputs both scripts make, the packed outputs they store, and a byte-for-byte comparison.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "ember/data/image.h"
#include "golden/golden_file.h"
#include "golden/hash_fill.h"

namespace ember::test {

// The scripts' pictures by name, "<kind><W>x<H>x<C>" with kind noise or ramp:
//   noise: byte i (interleaved rows) = splitmix64(fnv1a64("photo/noise") XOR i) >> 56
//   ramp:  byte (y, x, c) = (5 x + 3 y + 60 c + (the noise byte >> 5)) mod 256
inline data::Image hashed_picture(const std::string& name) {
  const std::string kind = name.substr(0, name.find_first_of("0123456789"));
  int w = 0, h = 0, c = 0;
  EXPECT_EQ(std::sscanf(name.c_str() + kind.size(), "%dx%dx%d", &w, &h, &c), 3) << name;
  data::Image img(w, h, c);
  const uint64_t seed = fnv1a64("photo/" + kind);
  for (int64_t i = 0; i < int64_t(img.pixels.size()); ++i) {
    uint8_t v = uint8_t(splitmix64(seed ^ uint64_t(i)) >> 56);
    if (kind == "ramp") {
      const int64_t ch = i % c, x = (i / c) % w, y = i / (int64_t(c) * w);
      v = uint8_t((5 * x + 3 * y + 60 * ch + (v >> 5)) % 256);
    }
    img.pixels[size_t(i)] = v;
  }
  return img;
}

// The picture stored as "<name>/shape" (H, W, C) and "<name>/bytes" (packed 8 to an int64).
inline data::Image golden_picture(const GoldenFile& file, const std::string& name) {
  const auto shape = file.get(name + "/shape").as_int64();
  const auto packed = file.get(name + "/bytes").as_int64();
  data::Image img(shape[1], shape[0], shape[2]);
  std::memcpy(img.pixels.data(), packed.data(), img.pixels.size());
  return img;
}

// Every "<kind>/..." picture of the file, without its "/shape" and "/bytes" suffix.
inline std::vector<std::string> golden_pictures(const GoldenFile& file, const std::string& kind) {
  std::vector<std::string> out;
  for (const auto& n : file.names_with_prefix(kind + "/"))
    if (n.size() > 6 && n.compare(n.size() - 6, 6, "/shape") == 0) out.push_back(n.substr(0, n.size() - 6));
  EXPECT_FALSE(out.empty()) << "no " << kind << " cases in the golden file";
  return out;
}

// Byte-for-byte equality, with the count and largest difference when not.
inline void expect_same_picture(const data::Image& want, const data::Image& got, const std::string& what) {
  ASSERT_EQ(got.width, want.width) << what;
  ASSERT_EQ(got.height, want.height) << what;
  ASSERT_EQ(got.channels, want.channels) << what;
  int64_t differ = 0, first = -1, worst = 0;
  for (size_t i = 0; i < want.pixels.size(); ++i) {
    const int d = std::abs(int(want.pixels[i]) - int(got.pixels[i]));
    if (d == 0) continue;
    if (first < 0) first = int64_t(i);
    ++differ, worst = std::max<int64_t>(worst, d);
  }
  EXPECT_EQ(differ, 0) << what << ": " << differ << " of " << want.pixels.size()
                       << " bytes differ from torchvision's, by up to " << worst << " (first at byte " << first << ")";
}

inline std::vector<std::string> split_name(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::stringstream in(s);
  for (std::string p; std::getline(in, p, sep);) parts.push_back(p);
  return parts;
}

}  // namespace ember::test
