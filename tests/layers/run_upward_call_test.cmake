# A call upward fails to link (ctest: layers_upward_call_fails_to_link). Copies the sources the
# library is built from (CMakeLists.txt, cmake/, docs/layers.txt, include/, src/) into a scratch
# tree, configures it CPU-only without tests, apps or benchmarks, and builds the layer checks of
# cmake/ember_layers.cmake (libember_layer_<name>.so, linked with --no-undefined against only the
# layers below):
#   1. the clean copy's tape check (core and tape) links;
#   2. a core file that calls empty() -- declared in core's own ember/core/tensor.h, defined by the
#      ops layer, so check-deps (includes) sees nothing wrong -- makes core's check fail to link,
#      naming ember::empty;
#   3. the tape calling the engine's autograd::backward (the AccumulateGrad cycle's shape) makes the
#      tape's check fail to link, naming it.
# Inputs: SOURCE_DIR, WORK_DIR, GENERATOR, CXX_COMPILER, C_COMPILER, LAUNCHER (optional, e.g. ccache),
# PYTHON (optional: then check-deps must pass the copy of step 2, the call the includes cannot show).

function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (exit ${rc})\n  command: ${ARGN}\n${out}\n${err}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

# Builds `target` in the scratch tree and expects it to fail with every one of `pieces` in the output.
function(expect_link_failure what target)
  execute_process(COMMAND ${CMAKE_COMMAND} --build ${build} --target ${target}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(all "${out}\n${err}")
  if(rc EQUAL 0)
    message(FATAL_ERROR "${what}: ${target} linked, but it calls a layer above it\n${all}")
  endif()
  foreach(piece IN LISTS ARGN)
    string(FIND "${all}" "${piece}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "${what}: ${target} failed, but its output does not name '${piece}'\n${all}")
    endif()
  endforeach()
  message(STATUS "${what}: ${target} fails to link, as it must")
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
set(tree ${WORK_DIR}/tree)
set(build ${WORK_DIR}/build)
file(MAKE_DIRECTORY ${tree}/docs)
foreach(d cmake include src)
  file(COPY ${SOURCE_DIR}/${d} DESTINATION ${tree})
endforeach()
file(COPY ${SOURCE_DIR}/CMakeLists.txt DESTINATION ${tree})
file(COPY ${SOURCE_DIR}/docs/layers.txt DESTINATION ${tree}/docs)

set(launcher)
if(LAUNCHER)
  set(launcher -DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER})
endif()
run_step("configuring the scratch copy" ${CMAKE_COMMAND} -S ${tree} -B ${build} -G ${GENERATOR}
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_C_COMPILER=${C_COMPILER} ${launcher}
  -DEMBER_CUDA=OFF -DEMBER_BUILD_TESTS=OFF -DEMBER_BUILD_APPS=OFF -DEMBER_BUILD_BENCH=OFF -DEMBER_USE_GLOO=OFF)

# 1. The clean tree links.
run_step("linking the clean copy's core and tape checks" ${CMAKE_COMMAND} --build ${build} --target ember_layer_check_tape)
message(STATUS "the clean copy's core and tape link on their own")

# 2. Core calls an op front-end.
set(planted ${tree}/src/core/planted_upward_call.cpp)
file(WRITE ${planted} "// Planted by tests/layers/run_upward_call_test.cmake: core calling up into ops.
#include \"ember/core/tensor.h\"

namespace ember {
Tensor planted_scratch() { return empty({2, 3}); }  // empty() is the ops layer's (src/ops/tensor.cpp)
}  // namespace ember
")
run_step("reconfiguring with the planted core file" ${CMAKE_COMMAND} ${build})
if(PYTHON)
  run_step("check-deps on the planted copy (its includes are all core's)" ${PYTHON}
    ${SOURCE_DIR}/scripts/check-deps.py --root ${tree})
  message(STATUS "check-deps passes the planted copy: only the linker can see this call")
endif()
expect_link_failure("core calls ember::empty (ops)" ember_layer_check_core "undefined reference" "ember::empty(")
file(REMOVE ${planted})
run_step("reconfiguring without the planted core file" ${CMAKE_COMMAND} ${build})

# 3. The tape calls the engine.
file(APPEND ${tree}/src/autograd/tape.cpp "
// Planted by tests/layers/run_upward_call_test.cmake: the tape calling up into the engine.
namespace ember::autograd {
void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads, bool retain_graph);
void planted_backward(const Tensor& t) { backward({t}, {Tensor()}, false); }
}  // namespace ember::autograd
")
expect_link_failure("the tape calls ember::autograd::backward (the engine)" ember_layer_check_tape
  "undefined reference" "ember::autograd::backward(")
