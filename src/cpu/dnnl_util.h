// What the oneDNN-backed CPU kernels share (nn_conv_dnnl.cpp, linear_dnnl.cpp): one CPU engine for
// the process, and the translation of oneDNN's failures into ember's typed error.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include "ember/core/error.h"

namespace ember::cpu {

dnnl::engine& dnnl_cpu_engine();  // created on first use

// Runs f; a dnnl::error becomes an ember::Error naming the op and oneDNN's status.
template <class F>
void dnnl_call(const char* op, F&& f) {
  try {
    f();
  } catch (const dnnl::error& e) {
    throw Error(detail::cat(op, ": oneDNN failed: ", e.what(), " (status ", int(e.status), ")"));
  }
}

}  // namespace ember::cpu
