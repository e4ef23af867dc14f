// Error-checking helpers shared by the unit tests: the message of a thrown ember::Error, an
// expect-error that checks the exception type and a piece of the message, and a tensor that claims
// to live on cuda:0 (never read) to reach the device checks of a front-end in any build.
#pragma once

#include <gtest/gtest.h>

#include <ember/ember.h>

#include <memory>
#include <string>

namespace ember::test {

// what() of the E (by default any ember::Error) that f throws; says so when f throws another
// type or nothing, so a check on the message fails.
template <class E = Error, class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("wrong exception type: ") + e.what();
  }
  return "<no exception>";
}

// Runs f, expects an exception of type E (or derived) whose what() contains `piece`; returns the
// message so that hints can be checked.
template <class E, class F>
std::string expect_error(F&& f, const std::string& piece) {
  try {
    f();
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(piece), std::string::npos)
        << "message: " << e.what() << "\nexpected piece: " << piece;
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type, message: " << e.what();
    return {};
  }
  ADD_FAILURE() << "no exception thrown; expected one containing: " << piece;
  return {};
}

inline bool contains(const std::string& s, const std::string& piece) { return s.find(piece) != std::string::npos; }

// A float32 tensor whose storage claims to live on cuda:0 (host memory, never read).
inline Tensor fake_cuda_tensor(Shape shape) {
  static float buffer[1024];
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<StorageImpl>(buffer, sizeof buffer, Device::cuda(0), nullptr);
  impl->sizes = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = DType::Float32;
  return Tensor(impl);
}

}  // namespace ember::test
