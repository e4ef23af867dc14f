// `ember predict FILE`: does the user's image look like the training data? A black-on-white drawing
// given to a white-on-black model (Fashion-MNIST, MNIST) or a colour photo given to a greyscale one
// gets a confident, wrong answer; these checks say so and suggest --invert.
#pragma once

#include <string>

#include "ember/data/dataset.h"

namespace ember::train {

// Mean intensity of the whole image and of its outer ring (the background, for centred objects),
// on the 0..255 scale, over all channels.
struct ImageLook {
  double mean = 0, border = 0;
};
ImageLook look_of(const Tensor& images_u8);  // uint8 (N, C, H, W): the average over the N images

// One sentence when the image (uint8 (1, C, H, W), as decoded for the dataset's geometry) looks
// unlike the training data (`want`: its look, `channels`: its channel count, `name`: as shown), ""
// otherwise. colour: the file had visibly different R, G, B values (checked by the caller on a
// 3-channel decode). inverted: --invert was given.
std::string unlike_training_data(const Tensor& image_u8, const ImageLook& want, int64_t channels,
                                 const std::string& name, bool colour, bool inverted);

// True when a uint8 (1, 3, H, W) image has visibly different colour channels (not a grey picture
// stored as RGB).
bool has_colour(const Tensor& rgb_u8);

// 255 - v for every pixel of a uint8 tensor, in place (--invert).
void invert_u8(Tensor& images_u8);

}  // namespace ember::train
