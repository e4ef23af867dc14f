// Shared by the end-to-end tests of the image-folder, report and bench items: runs the real `ember`
// binary through e2e_util.h and writes a small learnable image folder.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "e2e_util.h"

#define STB_IMAGE_WRITE_STATIC  // each test file gets its own copy (test_cli_e2e.cpp has one too)
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>

namespace ember::e2e {

using CliResult = ::e2e::Result;

// `prefix` goes before the binary (e.g. "cd DIR && " or "COLUMNS=80 ").
inline CliResult run_ember(const std::string& args, const std::string& prefix = "") { return ::e2e::run(args, prefix); }
inline std::string read_text(const std::string& path) { return ::e2e::read_text(path); }

// A 24x24 RGB image of class k: 0 "disc" (red disc), 1 "ring" (green ring), 2 "stripes" (blue
// vertical stripes), on a noisy dark background, jittered by `i`.
inline std::vector<unsigned char> shape_image(int k, int i) {
  const int s = 24;
  std::vector<unsigned char> px(size_t(s * s * 3));
  const double cx = 12 + (i % 5) - 2, cy = 12 + (i / 5 % 5) - 2;
  for (int y = 0; y < s; ++y)
    for (int x = 0; x < s; ++x) {
      const double r = std::hypot(x - cx, y - cy);
      const bool on = k == 0 ? r < 7 : k == 1 ? (r > 5 && r < 9) : ((x + i) / 3) % 2 == 0;
      unsigned char* p = &px[size_t((y * s + x) * 3)];
      const auto noise = (unsigned char)((x * 7 + y * 13 + i * 29) % 40);
      p[0] = p[1] = p[2] = noise;
      if (on) p[k] = (unsigned char)(200 + noise / 2);
    }
  return px;
}

inline const char* const kShapeClasses[] = {"disc", "ring", "stripes"};

// n images per class under dir/<class>/ (indices first_index.. first_index + n - 1), every third
// one a JPEG, the others PNG.
inline void write_shape_images(const std::filesystem::path& dir, int n, int first_index) {
  for (int k = 0; k < 3; ++k) {
    std::filesystem::create_directories(dir / kShapeClasses[k]);
    for (int i = first_index; i < first_index + n; ++i) {
      auto px = shape_image(k, i);
      const std::string base = (dir / kShapeClasses[k] / ("img" + std::to_string(i))).string();
      if (i % 3 == 0)
        ASSERT_NE(stbi_write_jpg((base + ".jpg").c_str(), 24, 24, 3, px.data(), 95), 0);
      else
        ASSERT_NE(stbi_write_png((base + ".png").c_str(), 24, 24, 3, px.data(), 24 * 3), 0);
    }
  }
}

}  // namespace ember::e2e

#define EMBER_EXPECT_HAS(out, piece) EXPECT_NE((out).find(piece), std::string::npos) << "output:\n" << (out)
#define EMBER_EXPECT_LACKS(out, piece) EXPECT_EQ((out).find(piece), std::string::npos) << "output:\n" << (out)
