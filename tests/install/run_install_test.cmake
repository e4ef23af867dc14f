# The install as a user meets it: installs ember from BINARY_DIR, moves the prefix (everything
# installed must be relocatable), runs the installed `ember --version`, checks that libcurl is not
# among the run-time dependencies, then builds and runs tests/install/consumer three ways: with
# find_package(ember) against the install, with pkg-config against the install, and with
# -Dember_DIR=BINARY_DIR against the build tree.
# Inputs: SOURCE_DIR, BINARY_DIR, WORK_DIR, GENERATOR, LIBDIR (CMAKE_INSTALL_LIBDIR), CXX_COMPILER, PKG_CONFIG (empty: that part
# is skipped with a message), EMBER_VERSION, HAVE_CLI (ON when the ember command was built),
# LAUNCHER (optional compiler launcher such as ccache).

function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (exit ${rc})\n  command: ${ARGN}\n${out}\n${err}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

# A consumer that prints the version and checks a sum and its gradient (main.cpp) must print this.
function(check_consumer_output how out)
  if(NOT out MATCHES "ember ${EMBER_VERSION} sum=6 grad=12")
    message(FATAL_ERROR "the consumer built ${how} printed an unexpected line: '${out}'")
  endif()
  message(STATUS "consumer (${how}) printed: ${out}")
endfunction()

function(build_cmake_consumer how build_dir)
  set(launcher)
  if(LAUNCHER)
    set(launcher -DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER})
  endif()
  run_step("configuring the consumer (${how})" ${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/install/consumer
    -B ${build_dir} -G ${GENERATOR} -DCMAKE_CXX_COMPILER=${CXX_COMPILER} ${launcher} ${ARGN})
  run_step("building the consumer (${how})" ${CMAKE_COMMAND} --build ${build_dir})
  run_step("running the consumer (${how})" ${build_dir}/consumer)
  check_consumer_output("${how}" "${step_output}")
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
set(staged ${WORK_DIR}/staged)
set(prefix ${WORK_DIR}/prefix)
run_step("cmake --install" ${CMAKE_COMMAND} --install ${BINARY_DIR} --prefix ${staged})
# Nothing installed may remember where it was installed: rename the prefix, then use only that.
file(RENAME ${staged} ${prefix})
set(libdir ${prefix}/${LIBDIR})
set(libember ${libdir}/libember.so)
if(NOT EXISTS ${libember})
  message(FATAL_ERROR "the install has no ${libember}")
endif()

# 1. The installed command starts (it used to exit 127: no run path to libember).
set(executables)
if(HAVE_CLI)
  run_step("the installed `ember --version`" ${prefix}/bin/ember --version)
  if(NOT step_output MATCHES "ember ${EMBER_VERSION}")
    message(FATAL_ERROR "the installed `ember --version` printed '${step_output}', expected 'ember ${EMBER_VERSION}'")
  endif()
  message(STATUS "installed ember --version: ${step_output}")
  set(executables EXECUTABLES ${prefix}/bin/ember)
endif()

# 2. libcurl (and its ~30 libraries) is loaded on the first download, never at start-up: neither
# libember nor the ember command may depend on it, directly or through another library.
set(CMAKE_GET_RUNTIME_DEPENDENCIES_PLATFORM linux+elf)
file(GET_RUNTIME_DEPENDENCIES LIBRARIES ${libember} ${executables}
  DIRECTORIES ${libdir} RESOLVED_DEPENDENCIES_VAR deps UNRESOLVED_DEPENDENCIES_VAR missing)
if(missing)
  message(FATAL_ERROR "unresolved run-time dependencies of the install: ${missing}")
endif()
list(FILTER deps INCLUDE REGEX "libcurl")
if(deps)
  message(FATAL_ERROR "libcurl is a link dependency of the install (${deps}); "
    "it must be loaded on first use only (src/data/curl_lazy.cpp)")
endif()

# 3. find_package(ember) against the installed (and moved) prefix.
build_cmake_consumer("find_package, installed" ${WORK_DIR}/build-installed -DCMAKE_PREFIX_PATH=${prefix})

# 4. pkg-config against the installed prefix: one compiler line, as a Makefile user would write it.
if(PKG_CONFIG)
  set(pc_env ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${libdir}/pkgconfig ${PKG_CONFIG})
  run_step("pkg-config --modversion ember" ${pc_env} --modversion ember)
  string(STRIP "${step_output}" pc_version)
  if(NOT pc_version STREQUAL EMBER_VERSION)
    message(FATAL_ERROR "pkg-config reports ember ${pc_version}, the build is ${EMBER_VERSION}")
  endif()
  run_step("pkg-config --cflags --libs ember" ${pc_env} --cflags --libs ember)
  separate_arguments(pc_flags UNIX_COMMAND "${step_output}")
  run_step("pkg-config --variable=libdir ember" ${pc_env} --variable=libdir ember)
  string(STRIP "${step_output}" pc_libdir)
  run_step("building the consumer (pkg-config)" ${LAUNCHER} ${CXX_COMPILER} -std=c++20
    ${SOURCE_DIR}/tests/install/consumer/main.cpp ${pc_flags} -Wl,-rpath,${pc_libdir}
    -o ${WORK_DIR}/consumer-pkgconfig)
  run_step("running the consumer (pkg-config)" ${WORK_DIR}/consumer-pkgconfig)
  check_consumer_output("pkg-config, installed" "${step_output}")
else()
  message(STATUS "pkg-config not found when ember was configured: skipped the pkg-config consumer")
endif()

# 5. The build tree as a package: -Dember_DIR=<build> needs emberConfig.cmake and emberTargets.cmake.
build_cmake_consumer("ember_DIR, build tree" ${WORK_DIR}/build-tree -Dember_DIR=${BINARY_DIR})
