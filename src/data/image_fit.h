// The image-folder loader's fitting of one decoded picture to a fixed size (image_folder.cpp), shared
// with the photo cache's pictures loaded as tensors (image_folder_splits.cpp), so a folder and its
// cache give their small models the same kind of input.
#pragma once

#include <cstdint>

#include "ember/data/dataset.h"

namespace ember::data {

// Resizes (ResizeMode::Resize) or scales and centre-crops (CenterCrop) `img`, which has
// opt.channels channels, to (opt.height, opt.width) and writes it as (C, H, W) planes into `out`.
// False when stb_image_resize fails.
bool fit_image_into(const Image& img, const ImageFolderOptions& opt, uint8_t* out);

}  // namespace ember::data
