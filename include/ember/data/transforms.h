// Per-sample transforms: uint8 (C, H, W) in, float32 (C, H, W) out, in one pass.
//
// Order (as the usual torchvision pipeline): random crop with padding -> horizontal flip ->
// scale to [0, 1] -> normalise per channel -> random erasing. The first four are fused into a
// single gather per output pixel through a 256-entry lookup table per channel, so a sample costs
// one read of the source pixels and one write of the outputs, with no per-pixel virtual calls.
//
// Randomness is stateless (Philox 4x32-10, see core/generator.h). For sample `index` of epoch
// `epoch` under run seed `seed`, block b of four 32-bit words is
//   philox4x32_10(counter = {lo32(index), hi32(index), lo32(epoch), 0x7E000000 | b},
//                 key = {lo32(seed), hi32(seed)})
// and the words are used as:
//   block 0: w0 % (2*pad + 1) -> crop dy, w1 % (2*pad + 1) -> crop dx, w2 < p_flip*2^32 -> flip,
//            w3 < p_erase*2^32 -> erase
//   block 1..10 (random-erasing attempts, as torchvision: the first rectangle that fits wins):
//            u(w0) -> area fraction in [scale_lo, scale_hi], u(w1) -> log aspect ratio in
//            [log r_lo, log r_hi], w2 % (H - h + 1) -> top, w3 % (W - w + 1) -> left; a
//            rectangle counts when 1 <= h < H and 1 <= w < W (torchvision's h < H, w < W)
// with u(w) = (w >> 8) * 2^-24. So the same (seed, epoch, index) always gives the same sample,
// whatever the worker count or the order of work, and a resumed run sees identical augmentations.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace ember::data {

enum class PadMode { Zero, Reflect };

struct TransformOptions {
  bool scale = true;             // pixel / 255 (false: raw 0..255 values as float)
  bool scale_by_reciprocal = false;  // scale as pixel * float(1 / 255), transforms.v2's ToDtype (one ulp
                                     // from ToTensor's division for some values)
  bool normalize = true;         // (x - mean) / std per channel, after scaling
  std::vector<float> mean, std;  // empty: the dataset's known mean/std
  int64_t crop_padding = 0;      // random crop of the input size from the image padded by this; 0 = off
  PadMode pad_mode = PadMode::Zero;  // Zero pads with pixel value 0 (before normalising), Reflect mirrors
                                     // without repeating the edge (needs crop_padding < H and < W)
  double hflip_p = 0.0;          // probability of a horizontal flip
  double erase_p = 0.0;          // probability of random erasing (value 0, after normalising)
  std::array<double, 2> erase_scale{0.02, 0.33};  // area fraction range
  std::array<double, 2> erase_ratio{0.3, 3.3};    // aspect ratio (h / w) range
};

// The random choices for one sample, drawn from (seed, epoch, index) as documented above.
struct SampleParams {
  int64_t crop_dy = 0, crop_dx = 0;  // offsets into the padded image, in [0, 2*pad]
  bool flip = false;
  bool erase = false;
  int64_t erase_top = 0, erase_left = 0, erase_h = 0, erase_w = 0;
};
SampleParams draw_sample_params(const TransformOptions& opt, uint64_t seed, int64_t epoch, int64_t index,
                                int64_t height, int64_t width);

// A transform bound to one image geometry and a resolved mean/std: cheap to apply from any
// number of threads at once (it is immutable after construction).
class SampleTransform {
 public:
  // mean/std: the dataset's (used when opt.mean/opt.std are empty); sizes must equal channels.
  // Throws ValueError for a bad option (std <= 0, padding >= size with Reflect, p outside [0, 1]).
  SampleTransform(TransformOptions opt, int64_t channels, int64_t height, int64_t width,
                  const std::vector<float>& dataset_mean, const std::vector<float>& dataset_std);

  // src: uint8 (C, H, W) contiguous, or (H, W, C) when channels_last (a decoded picture's layout,
  // read in place rather than transposed first); dst: float32 (C, H, W) contiguous, fully
  // overwritten.
  void apply(const uint8_t* src, const SampleParams& p, float* dst, bool channels_last = false) const;
  // draw_sample_params + apply.
  void apply(const uint8_t* src, uint64_t seed, int64_t epoch, int64_t index, float* dst,
             bool channels_last = false) const;

  const TransformOptions& options() const { return opt_; }
  int64_t channels() const { return c_; }
  int64_t height() const { return h_; }
  int64_t width() const { return w_; }
  // True when no option draws random numbers (no crop, flip or erase).
  bool deterministic() const;
  // (C, 256): the float32 output of each pixel value per channel (scale + normalise); what
  // apply() reads when no augmentation moves or erases pixels.
  const std::vector<float>& lookup_table() const { return lut_; }

 private:
  TransformOptions opt_;
  int64_t c_, h_, w_;
  std::vector<float> lut_;  // (C, 256): the output value of each pixel value per channel
};

}  // namespace ember::data
