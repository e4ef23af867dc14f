// Decode speed of data::decode_image on one thread: every JPEG of a folder read into memory, then
// decoded over and over for a few seconds, at full size and with DCT scaling to at least m x m
// (DecodeOptions::min_width/min_height), in images per second. Pillow's side, same files, is
// bench/decode_pillow.py; the photos come from bench/make_decode_photos.py. Rates are per CPU-second
// of the decoding thread (and per wall second beside it).
//   bench_decode DIR [--min-side M ...] [--seconds S] [--grey]
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "ember/core/error.h"
#include "ember/data/decode.h"
#include "ember/io/user_file.h"

using namespace ember;
namespace fs = std::filesystem;

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
// This thread's CPU time: on a shared machine the wall clock counts other programs' turns too,
// CPU time only ours (images per CPU-second is images/s per core).
double cpu_now() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_decode DIR [--min-side M ...] [--seconds S] [--grey]\n");
    return 2;
  }
  const fs::path dir = argv[1];
  std::vector<int64_t> sides{0};
  double seconds = 3.0;
  int channels = 3;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--min-side" && i + 1 < argc) sides.push_back(std::atoll(argv[++i]));
    else if (a == "--seconds" && i + 1 < argc) seconds = std::atof(argv[++i]);
    else if (a == "--grey") channels = 1;
    else {
      std::fprintf(stderr, "bench_decode: unknown argument '%s'\n", a.c_str());
      return 2;
    }
  }
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (data::is_image_extension(e.path().extension().string())) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    std::fprintf(stderr, "bench_decode: no image files in %s (bench/make_decode_photos.py writes some)\n",
                 dir.c_str());
    return 1;
  }
  std::vector<std::vector<uint8_t>> blobs;
  size_t total = 0;
  for (const fs::path& f : files) {
    blobs.push_back(io::read_user_file(f, io::kImageFile));
    total += blobs.back().size();
  }
  std::printf("ember decode_image: %zu files (%.1f KB each on average) from %s, one thread, %s\n", files.size(),
              double(total) / double(files.size()) / 1024.0, dir.c_str(), channels == 3 ? "RGB" : "grey");
  try {
    for (int64_t m : sides) {
      data::DecodeOptions o;
      o.channels = channels, o.min_width = m, o.min_height = m;
      for (const auto& b : blobs) data::decode_image(b, o, "warm-up");  // first touch, the thread's handle
      size_t n = 0;
      int64_t w = 0, h = 0;
      const double t0 = now(), c0 = cpu_now();
      double dt = 0;
      do {
        for (const auto& b : blobs) {
          const data::Image im = data::decode_image(b, o, "bench");
          w = im.width, h = im.height;
          ++n;
        }
        dt = now() - t0;
      } while (dt < seconds);
      const std::string what = m ? "scaled >= " + std::to_string(m) + "x" + std::to_string(m) : "full size";
      const double cpu = cpu_now() - c0;
      std::printf("  ember   %-18s %8.1f images per CPU-second, %8.1f images/s wall  (output %lldx%lld)\n",
                  what.c_str(), double(n) / cpu, double(n) / dt, static_cast<long long>(w), static_cast<long long>(h));
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "bench_decode: %s\n", e.what());
    return 1;
  }
  return 0;
}
