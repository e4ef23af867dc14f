// JPEG through libjpeg-turbo's TurboJPEG API. Default flags (ISLOW IDCT, fancy upsampling) are
// Pillow's libjpeg settings, so a baseline file gives Pillow's pixels exactly; DCT-domain scaling
// decodes at 1/2, 1/4 or 1/8 when the caller needs no more. The markers before the first scan are
// walked here for the EXIF orientation and the progressive flag (TurboJPEG 2.1 reports neither).
#include <turbojpeg.h>

#include <cstring>
#include <vector>

#include "data/decode_internal.h"
#include "ember/core/error.h"

namespace ember::data::internal {
namespace {

// One decompressor per thread: tjInitDecompress allocates libjpeg's state (~a few KB and a
// malloc'ed error manager), which is worth keeping between the thousands of files a worker decodes.
// After a failed call the handle is replaced: TurboJPEG 2.1 leaves libjpeg's state as the error
// found it (a corrupt file's half-read Huffman tables then broke the next, valid file's header).
struct ThreadHandle {
  tjhandle h = tjInitDecompress();
  ~ThreadHandle() {
    if (h) tjDestroy(h);
  }
};
thread_local ThreadHandle t_handle;

tjhandle thread_handle(const std::string& name) {
  if (!t_handle.h) t_handle.h = tjInitDecompress();
  if (!t_handle.h) throw_decode_error(name, "JPEG", detail::cat("TurboJPEG could not start: ", tjGetErrorStr2(nullptr)));
  return t_handle.h;
}

void discard_thread_handle() {
  if (t_handle.h) tjDestroy(t_handle.h);
  t_handle.h = nullptr;
}

struct Markers {
  int orientation = 1;
  bool progressive = false;
};

// Walks SOI, then each marker segment up to SOS: the first APP1 "Exif\0" gives the orientation (as
// Pillow, which keeps the first), SOF2/6/10/14 mean progressive. Never reads outside `b`.
Markers walk_markers(std::span<const uint8_t> b) {
  Markers m;
  bool have_exif = false;
  size_t p = 2;
  while (p + 4 <= b.size()) {
    if (b[p] != 0xFF) break;
    const uint8_t marker = b[p + 1];
    if (marker == 0xFF) {  // fill byte
      ++p;
      continue;
    }
    if (marker == 0xD8 || (marker >= 0xD0 && marker <= 0xD7) || marker == 0x01) {  // no length
      p += 2;
      continue;
    }
    if (marker == 0xDA || marker == 0xD9) break;  // SOS, EOI: the header is over
    const size_t len = size_t(b[p + 2]) << 8 | b[p + 3];
    if (len < 2 || p + 2 + len > b.size()) break;
    const std::span<const uint8_t> payload = b.subspan(p + 4, len - 2);
    if (marker == 0xE1 && !have_exif && payload.size() >= 6 && std::memcmp(payload.data(), "Exif\0", 5) == 0) {
      have_exif = true;
      m.orientation = exif_orientation_from_tiff(payload.subspan(6));
    }
    if (marker == 0xC2 || marker == 0xC6 || marker == 0xCA || marker == 0xCE) m.progressive = true;
    p += 2 + len;
  }
  return m;
}

struct Header {
  int width = 0, height = 0, subsamp = 0, colorspace = 0;
};

Header read_header(tjhandle h, std::span<const uint8_t> bytes, const std::string& name) {
  Header hd;
  if (tjDecompressHeader3(h, bytes.data(), static_cast<unsigned long>(bytes.size()), &hd.width, &hd.height,
                          &hd.subsamp, &hd.colorspace) != 0) {
    const std::string why = tjGetErrorStr2(h);
    discard_thread_handle();
    throw_decode_error(name, "JPEG", detail::cat("its header is unreadable (libjpeg-turbo: ", why, ")"));
  }
  // TurboJPEG 2.1 reports success with a 0x0 size for an abbreviated file that holds only tables.
  if (hd.width <= 0 || hd.height <= 0)
    throw_decode_error(name, "JPEG", detail::cat("no image in it, only tables (its header gives ", hd.width, "x",
                                                 hd.height, ")"));
  return hd;
}

// The smallest 1/r, r in {8, 4, 2, 1}, among the library's factors, with ceil(side / r) still
// >= the minimum on both sides.
tjscalingfactor choose_scale(int w, int h, int64_t min_w, int64_t min_h) {
  if (min_w <= 0 && min_h <= 0) return {1, 1};  // no minimum: full size
  int n = 0;
  const tjscalingfactor* factors = tjGetScalingFactors(&n);
  for (int denom : {8, 4, 2}) {
    for (int i = 0; factors && i < n; ++i) {
      const tjscalingfactor f = factors[i];
      if (f.num != 1 || f.denom != denom) continue;
      if (TJSCALED(w, f) >= min_w && TJSCALED(h, f) >= min_h) return f;
    }
  }
  return {1, 1};
}

}  // namespace

ImageInfo probe_jpeg(std::span<const uint8_t> bytes, const std::string& name) {
  const Header hd = read_header(thread_handle(name), bytes, name);
  const Markers m = walk_markers(bytes);
  ImageInfo info;
  info.width = hd.width, info.height = hd.height, info.format = "JPEG";
  info.channels_in_file = hd.colorspace == TJCS_GRAY ? 1 : (hd.colorspace == TJCS_CMYK || hd.colorspace == TJCS_YCCK) ? 4 : 3;
  info.exif_orientation = m.orientation;
  info.progressive = m.progressive;
  return info;
}

Image decode_jpeg(std::span<const uint8_t> bytes, const ImageInfo& info, const DecodeOptions& opt,
                  const std::string& name) {
  tjhandle h = thread_handle(name);
  const Header hd = read_header(h, bytes, name);
  // The minimum applies to the picture as shown: a quarter-turned file swaps it.
  const bool turned = opt.apply_exif && info.exif_orientation >= 5;
  const tjscalingfactor sf =
      choose_scale(hd.width, hd.height, turned ? opt.min_height : opt.min_width, turned ? opt.min_width : opt.min_height);
  const int w = TJSCALED(hd.width, sf), ht = TJSCALED(hd.height, sf);
  const bool cmyk = hd.colorspace == TJCS_CMYK || hd.colorspace == TJCS_YCCK;
  const bool grey_file = hd.colorspace == TJCS_GRAY;
  // A grey file decodes straight to grey (or to RGB, libjpeg replicating it); colour files decode to
  // RGB (CMYK to CMYK, converted below), and grey is then Pillow's convert("L") of the RGB.
  int pf = TJPF_RGB, px = 3;
  if (cmyk) pf = TJPF_CMYK, px = 4;
  else if (grey_file && opt.channels == 1) pf = TJPF_GRAY, px = 1;
  Image out(w, ht, opt.channels);
  std::vector<uint8_t> scratch;
  uint8_t* dst = out.pixels.data();
  if (px != opt.channels) {
    scratch.resize(size_t(w) * size_t(ht) * size_t(px));
    dst = scratch.data();
  }
  if (tjDecompress2(h, bytes.data(), static_cast<unsigned long>(bytes.size()), dst, w, 0, ht, pf, 0) != 0) {
    std::string why = tjGetErrorStr2(h);
    const int code = tjGetErrorCode(h);
    discard_thread_handle();
    // libjpeg warns and goes on for damage it can step over (extraneous bytes before a marker, a
    // bad restart marker), as Pillow does; a file that ends early is refused, as Pillow refuses it
    // ("image file is truncated") instead of handing out grey rows. The text TurboJPEG 2.1 keeps is
    // libjpeg's first warning, unless an error came after it; and once a warning is seen it reports
    // TJERR_WARNING even for that error (a progressive file cut in a later scan: "Premature end of
    // JPEG file", then "Bogus Huffman table definition"). So after a warning the file is decoded
    // again, stopping at the first warning: a different text means an error followed it.
    bool fatal = code == TJERR_FATAL || why.find("Premature end") != std::string::npos;
    if (!fatal) {
      tjhandle again = thread_handle(name);
      std::vector<uint8_t> discard(size_t(w) * size_t(ht) * size_t(px));
      if (tjDecompress2(again, bytes.data(), static_cast<unsigned long>(bytes.size()), discard.data(), w, 0, ht, pf,
                        TJFLAG_STOPONWARNING) != 0) {
        const std::string first = tjGetErrorStr2(again);
        discard_thread_handle();
        if (first.find("Premature end") != std::string::npos) why = first, fatal = true;
        else if (first != why) fatal = true;
      }
    }
    if (fatal)
      throw_decode_error(name, "JPEG",
                         detail::cat(why.find("Premature end") != std::string::npos ? "truncated, the file ends early "
                                                                                     : "",
                                     "(libjpeg-turbo: ", why, "; ", bytes.size(), " bytes, ", hd.width, "x", hd.height,
                                     info.progressive ? " progressive" : "", ")"));
  }
  const size_t n = size_t(w) * size_t(ht);
  if (cmyk) {
    if (opt.channels == 3) inverted_cmyk_to_rgb(scratch.data(), out.pixels.data(), n);
    else {
      std::vector<uint8_t> rgb(n * 3);
      inverted_cmyk_to_rgb(scratch.data(), rgb.data(), n);
      rgb_to_grey(rgb.data(), out.pixels.data(), n);
    }
  } else if (px == 3 && opt.channels == 1) {
    rgb_to_grey(scratch.data(), out.pixels.data(), n);
  }
  return out;
}

}  // namespace ember::data::internal
