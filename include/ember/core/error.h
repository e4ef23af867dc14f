// Typed errors. User mistakes (bad shapes, wrong dtype, a corrupt file) throw one of these with a
// message naming the op, the argument and the values; EMBER_ASSERT is for our own invariants.
// Front-ends catch them: the CLI prints what() and hint(), exits non-zero; Python raises ember.errors.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace ember {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg, std::string hint = {})
      : std::runtime_error(msg), hint_(std::move(hint)) {}
  // One line telling the user how to fix it; empty when there is nothing they can do.
  const std::string& hint() const noexcept { return hint_; }

 private:
  std::string hint_;
};

#define EMBER_DEFINE_ERROR(Name)   \
  class Name : public Error {      \
   public:                         \
    using Error::Error;            \
  };
EMBER_DEFINE_ERROR(ShapeError)      // shapes or ranks that do not fit together
EMBER_DEFINE_ERROR(DTypeError)      // a dtype the op does not accept
EMBER_DEFINE_ERROR(DeviceError)     // tensors on different devices, a device that does not exist
EMBER_DEFINE_ERROR(ValueError)      // an argument out of its range (negative lr, stride 0, label 10 of 10)
EMBER_DEFINE_ERROR(IndexError)      // an index or dim out of range
EMBER_DEFINE_ERROR(AutogradError)   // backward through a freed graph, non-scalar without gradient
EMBER_DEFINE_ERROR(DataError)       // a dataset file that is not what it claims to be
EMBER_DEFINE_ERROR(IOError)         // open/read/write/rename failures, with path and errno text
EMBER_DEFINE_ERROR(FormatError)     // a checkpoint or config file that is malformed
EMBER_DEFINE_ERROR(CudaError)       // a CUDA / cuBLAS / cuDNN call that failed
EMBER_DEFINE_ERROR(OutOfMemoryError)
EMBER_DEFINE_ERROR(NotImplementedError)
EMBER_DEFINE_ERROR(InternalError)   // a bug in ember: please report it
#undef EMBER_DEFINE_ERROR

namespace detail {
template <class... Args>
std::string cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace detail
}  // namespace ember

// Throws ember::Type with the concatenated message when cond is false.
#define EMBER_CHECK(cond, Type, ...)                                  \
  do {                                                                \
    if (!(cond)) [[unlikely]]                                         \
      throw ::ember::Type(::ember::detail::cat(__VA_ARGS__));         \
  } while (0)

// Internal invariant: a failure is a bug in ember, never the user's fault.
#define EMBER_ASSERT(cond, ...)                                                          \
  do {                                                                                   \
    if (!(cond)) [[unlikely]]                                                            \
      throw ::ember::InternalError(::ember::detail::cat(                                 \
          "internal error at " __FILE__ ":", __LINE__, ": ", #cond, " ", ##__VA_ARGS__)); \
  } while (0)
