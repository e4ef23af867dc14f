// What the zoo's builders share (src/nn/models.cpp, models_torchvision.cpp): the argument checks.
#pragma once

#include <cstdint>

#include "ember/core/error.h"

namespace ember::models {

// ValueError naming the model unless num_classes, in_channels > 0 and image_size >= min_size.
inline void check_zoo_sizes(const char* model, int64_t num_classes, int64_t in_channels, int64_t image_size,
                            int64_t min_size) {
  EMBER_CHECK(num_classes > 0, ValueError, model, ": num_classes must be > 0, got ", num_classes);
  EMBER_CHECK(in_channels > 0, ValueError, model, ": in_channels must be > 0, got ", in_channels);
  EMBER_CHECK(image_size >= min_size, ValueError, model, ": image_size must be >= ", min_size, ", got ", image_size);
}

}  // namespace ember::models
