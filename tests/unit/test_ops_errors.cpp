// Bad input to the core op front-ends (src/ops): the typed error and a piece of its message for
// shapes that do not match or broadcast, mixed dtypes and devices, bad indices and arguments.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include "support/errors.h"

using namespace ember;
using ember::test::fake_cuda_tensor;
using ember::test::message_of;

TEST(BadInput, ShapesDtypesDevices) {
  EXPECT_NE(message_of([] { matmul(ones({2, 3}), ones({2, 3})); }).find("cannot be multiplied (2x3 and 2x3)"), std::string::npos);
  EXPECT_THROW(matmul(ones({2, 3}), ones({2, 3})), ShapeError);
  EXPECT_NE(message_of([] { add(ones({2, 3}), ones({4, 3})); }).find("[2, 3] and [4, 3] cannot be broadcast"), std::string::npos);
  EXPECT_THROW(matmul(ones({2, 3}), ones({3, 2}, {.dtype = DType::Float64})), DTypeError);
  EXPECT_THROW(ones({2}).view({3}), ShapeError);
  EXPECT_THROW(ones({2, 3}).transpose(0, 5), IndexError);
  EXPECT_THROW(ones({2}).item<float>(), ShapeError);
  EXPECT_THROW(ones({2}, {.dtype = DType::Int64}).requires_grad_(), DTypeError);
  EXPECT_THROW(Device::parse("gpu0"), ValueError);
  EXPECT_EQ(Device::parse("cuda:3"), Device::cuda(3));
  EXPECT_THROW(one_hot(tensor(std::vector<int64_t>{0, 10}), 10), ValueError);
  EXPECT_THROW(set_num_threads(0), ValueError);

  // A tensor that claims to live on cuda:0 (its memory is never touched): ops must refuse to mix.
  Tensor on_gpu = fake_cuda_tensor({4});
  std::string msg = message_of([&] { add(ones({4}), on_gpu); });
  EXPECT_NE(msg.find("same device"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cpu and cuda:0"), std::string::npos) << msg;
  EXPECT_THROW(matmul(ones({4, 4}), on_gpu), DeviceError);
  EXPECT_THROW(cat({ones({4}), on_gpu}), DeviceError);
}

TEST(Ops, MixedDevicesAndShapesAreRefused) {
  EXPECT_THROW(add(ones({2, 3}), ones({4})), ShapeError);
  try {
    matmul(ones({2, 3}), ones({2, 3}));
    FAIL();
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("2x3 and 2x3"), std::string::npos);
  }
}
