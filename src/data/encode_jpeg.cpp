// JPEG encoding through TurboJPEG (the library that decodes JPEGs in decode_jpeg.cpp) with Pillow's
// defaults for Image.save(f, "JPEG"): baseline, the standard Huffman tables (no optimisation),
// libjpeg's quality scaling of the standard quantisation tables, the accurate integer DCT and 4:2:0
// chroma subsampling for RGB — so a file read back gives the pixels Pillow's file gives.
#include <turbojpeg.h>

#include <memory>

#include "ember/core/error.h"
#include "ember/data/encode.h"

namespace ember::data {

std::vector<uint8_t> encode_jpeg(std::span<const uint8_t> pixels, int64_t height, int64_t width, int64_t channels,
                                 int quality) {
  constexpr int64_t kMaxSide = 65535;  // JPEG's SOF: 16-bit sides
  EMBER_CHECK(height >= 1 && width >= 1 && height <= kMaxSide && width <= kMaxSide, ValueError,
              "encode_jpeg: the image is ", height, "x", width, " (height x width); JPEG needs sides from 1 to ",
              kMaxSide);
  EMBER_CHECK(channels == 1 || channels == 3, ValueError, "encode_jpeg: ", channels,
              " channels; JPEG takes 1 (grey) or 3 (RGB) here (Pillow: cannot write alpha as JPEG)");
  EMBER_CHECK(quality >= 1 && quality <= 100, ValueError, "encode_jpeg: quality ", quality, " is outside 1..100");
  const uint64_t expected = uint64_t(height) * uint64_t(width) * uint64_t(channels);
  EMBER_CHECK(pixels.size() == expected, ValueError, "encode_jpeg: ", pixels.size(), " bytes of pixels for a ",
              height, "x", width, "x", channels, " image, which holds ", expected);

  std::unique_ptr<void, int (*)(tjhandle)> tj(tjInitCompress(), tjDestroy);
  if (!tj) throw DataError(detail::cat("encode_jpeg: TurboJPEG could not start: ", tjGetErrorStr2(nullptr)));
  unsigned char* jpeg = nullptr;  // TurboJPEG allocates it (tjAlloc): ours to tjFree
  unsigned long size = 0;
  const int pixel_format = channels == 1 ? TJPF_GRAY : TJPF_RGB;
  const int subsampling = channels == 1 ? TJSAMP_GRAY : TJSAMP_420;
  const int rc = tjCompress2(tj.get(), pixels.data(), int(width), 0, int(height), pixel_format, &jpeg, &size,
                             subsampling, quality, TJFLAG_ACCURATEDCT);
  std::unique_ptr<unsigned char, void (*)(unsigned char*)> owned(jpeg, tjFree);
  if (rc != 0) throw DataError(detail::cat("encode_jpeg: TurboJPEG failed: ", tjGetErrorStr2(tj.get())));
  return std::vector<uint8_t>(jpeg, jpeg + size);
}

}  // namespace ember::data
