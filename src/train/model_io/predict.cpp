// A trained model run for inference (predict.h): its input from a file or pixels, and its forward
// and evaluation under the model's precision with batch norms folded, for every reader alike.
#include "ember/train/predict.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "ember/autocast.h"
#include "ember/autograd/node.h"
#include "ember/data/decode.h"
#include "ember/data/loader.h"
#include "ember/data/photo_transforms.h"
#include "ember/nn/layers.h"
#include "ember/ops.h"
#include "ember/train/image_check.h"
#include "ember/train/precision_choice.h"
#include "ember/train/run_data.h"

namespace ember::train {
namespace {

// The scope every inference forward runs in: no autograd, the precision's autocast (bf16 / fp16;
// none for fp32), batch norms folded into their convolutions. The weights stay float32.
class InferenceScope {
 public:
  InferenceScope(Device device, const std::string& precision)
      : autocast_(device.type, PrecisionChoice{precision, ""}.dtype(), precision != "fp32") {}

 private:
  autograd::NoGradGuard no_grad_;
  autocast autocast_;
  nn::FoldBatchNorm fold_;
};

// uint8 (N, C, H, W) pixels normalised with the training set's mean and std by the loader: the
// test set's own path.
Tensor normalised(const InferenceModel& m, const Tensor& pixels_u8) {
  const StoredInput& in = m.input;
  const int64_t n = pixels_u8.size(0);
  const data::Dataset set = data::dataset_from_tensors(pixels_u8.contiguous(), zeros({n}, {.dtype = DType::Int64}),
                                                       int64_t(in.classes.size()), in.classes, in.mean, in.std);
  data::LoaderOptions lo;
  lo.batch_size = n, lo.workers = 0, lo.shuffle = false;
  return data::DataLoader(set, lo).make_batch(0, 0).x;
}

}  // namespace

PredictFiles predict_files(const std::vector<std::string>& paths) {
  namespace fs = std::filesystem;
  PredictFiles out;
  for (const std::string& path : paths) {
    std::error_code ec;
    if (!fs::is_directory(path, ec)) {
      out.images.push_back(path);
      continue;
    }
    std::vector<fs::path> entries;
    fs::directory_iterator it(path, ec);
    if (ec) throw IOError(fmt::format("cannot list the folder '{}': {}", path, ec.message()), "check its permissions");
    for (fs::directory_iterator end; it != end; it.increment(ec)) {
      if (ec) throw IOError(fmt::format("cannot list the folder '{}': {}", path, ec.message()), "check its permissions");
      entries.push_back(it->path());
    }
    std::sort(entries.begin(), entries.end());
    size_t found = 0;
    for (const fs::path& e : entries) {
      const std::string name = e.filename().string();
      if (name.starts_with(".")) continue;
      std::error_code ec2;
      if (fs::is_directory(e, ec2)) {
        out.notes.push_back(fmt::format("skipping {}: a folder (predict reads the images directly in '{}')",
                                        e.string(), path));
      } else if (!data::is_image_extension(e.extension().string())) {
        out.notes.push_back(fmt::format("skipping {}: not an image file (.jpg, .png, .webp, .bmp, .gif, ...)", e.string()));
      } else {
        out.images.push_back(e.string());
        ++found;
      }
    }
    if (found == 0)
      throw DataError(fmt::format("the folder '{}' holds no image files{}", path,
                                  entries.empty() ? "" : fmt::format(" ({} other entries)", entries.size())),
                      "give image files (.jpg, .png, .webp, .bmp, .gif, .tga, .ppm, .pgm) or a folder of them");
  }
  return out;
}

ImageInput image_input(const InferenceModel& m, const std::string& file, const ImageInputOptions& o) {
  const std::vector<int64_t>& shape = m.input.input_shape;  // (C, H, W)
  ImageInput out;
  if (m.photo) {
    // torchvision's evaluation transforms on the decoded RGB picture (data/photo_transforms.h).
    const int64_t crop = shape[1];
    const data::Image picture = data::read_rgb_image(file, o.max_pixels);
    const data::Image cropped = data::eval_resize_crop(picture, crop);
    out.x = empty({1, 3, crop, crop});
    data::to_planes(cropped, m.input.mean, m.input.std, out.x.data_ptr<float>());
    out.description = fmt::format("{} ({}x{}, resized to {} and centre-cropped to {}x{})", file, picture.width,
                                  picture.height, data::resize_for_crop(crop), crop, crop);
    return out;
  }
  // Decoded and resized to the dataset's geometry, then normalised by the same loader code as the
  // test set. An image-folder run was trained on centre crops (aspect ratio kept): so is this.
  data::ImageFolderOptions io;
  io.channels = shape[0], io.height = shape[1], io.width = shape[2];
  io.max_pixels = o.max_pixels;  // the header is checked before decoding
  if (m.data == kImageFolder) io.resize = data::ResizeMode::CenterCrop;
  Tensor image = data::load_image(file, io).unsqueeze(0).contiguous();
  if (o.invert) invert_u8(image);
  if (m.look) {
    bool colour = false;
    if (io.channels == 1) {
      data::ImageFolderOptions rgb = io;
      rgb.channels = 3;
      colour = has_colour(data::load_image(file, rgb).unsqueeze(0));
    }
    if (std::string why = unlike_training_data(image, *m.look, io.channels, m.data_label, colour, o.invert);
        !why.empty())
      out.warnings.push_back(file + " " + why);
  }
  out.x = normalised(m, image);
  out.description = fmt::format("{} ({}x{}x{} as {}{})", file, io.channels, io.height, io.width, m.data_label,
                                o.invert ? ", inverted" : "");
  return out;
}

Tensor pixels_input(const InferenceModel& m, const Tensor& pixels_u8) {
  const std::vector<int64_t>& s = m.input.input_shape;
  EMBER_CHECK(pixels_u8.dtype() == DType::UInt8 && pixels_u8.dim() == 4 && pixels_u8.size(1) == s[0] &&
                  pixels_u8.size(2) == s[1] && pixels_u8.size(3) == s[2],
              ShapeError, "the model takes uint8 pixels (N, ", s[0], ", ", s[1], ", ", s[2], "), got ",
              dtype_name(pixels_u8.dtype()), " ", shape_str(pixels_u8.sizes()));
  return normalised(m, pixels_u8.cpu());
}

Tensor inference_logits(const InferenceModel& m, const Tensor& x) {
  InferenceScope scope(m.device, m.precision);
  return (*m.model)(x.to(m.device, DType::Float32)).to(DType::Float32).cpu();
}

Tensor class_probabilities(const InferenceModel& m, const Tensor& x) {
  return nn::functional::softmax(inference_logits(m, x), 1);
}

EvalResult evaluate_inference(nn::Module& model, const std::string& precision, const data::Dataset& test,
                              const EvalOptions& o) {
  InferenceScope scope(o.device, precision);
  return evaluate(model, test, o);
}

}  // namespace ember::train
