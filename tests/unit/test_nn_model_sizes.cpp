// Zoo models far from the input size they were designed for (issue 22): at --image-size 224 the
// 28x28 models' first fully connected layer grows to millions of weights; the warning says so and
// names the model that fits.
#include <gtest/gtest.h>

#include "ember/nn/models.h"

using namespace ember;

TEST(ModelSizes, FlattenModelsWarnFarAboveTheirDesignSizeAndNameResnetSmall) {
  EXPECT_EQ(models::design_size("bncnn48_fc128"), 28);
  EXPECT_EQ(models::design_size("alexnet_cifar"), 32);
  EXPECT_EQ(models::design_size("resnet_small"), 0);
  EXPECT_EQ(models::design_size("net.toml"), 0);
  const std::string w = models::input_size_warning("bncnn48_fc128", 3, 224, 10);
  EXPECT_NE(w.find("bncnn48_fc128 is built for 28x28 images: at 224x224"), std::string::npos) << w;
  EXPECT_NE(w.find("19.28 M parameters (0.31 M at 28x28)"), std::string::npos) << w;
  EXPECT_NE(w.find("--model resnet_small"), std::string::npos) << w;
  EXPECT_EQ(models::input_size_warning("bncnn48_fc128", 1, 56, 10), "");  // twice the design size: fine
  EXPECT_NE(models::input_size_warning("lenet5", 1, 60, 10), "");
  EXPECT_EQ(models::input_size_warning("alexnet_cifar", 3, 64, 10), "");
  EXPECT_EQ(models::input_size_warning("resnet_small", 3, 224, 10), "");
}
