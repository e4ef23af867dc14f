# Data-parallel training (src/dist, docs/distributed.md): the backends of the process group are
# optional at build time. Gloo (Debian libgloo-dev; scripts/setup.sh installs it) gives the CPU
# backend; NCCL (nccl.h next to the CUDA toolkit) the GPU backend, loaded with dlopen on first use
# (src/dist/nccl_lazy.cpp) so a CUDA build starts where libnccl is absent. Included after the
# layer libraries exist (cmake/ember_layers.cmake); the top-level CMakeLists keeps src/dist/gloo_*
# and nccl_* out of the dist layer's sources, and these are added to it here.
option(EMBER_USE_GLOO "Build the Gloo CPU backend of the process group when Gloo is found" ON)
set(EMBER_WITH_GLOO OFF)
if(EMBER_USE_GLOO)
  find_package(Gloo CONFIG QUIET)
  if(TARGET gloo)
    set(EMBER_WITH_GLOO ON)
    target_sources(ember_layer_dist PRIVATE ${PROJECT_SOURCE_DIR}/src/dist/gloo_backend.cpp)
    target_link_libraries(ember_layer_dist PRIVATE gloo)
    ember_layer_links(dist gloo)
    set_property(SOURCE ${PROJECT_SOURCE_DIR}/src/dist/process_group.cpp ${PROJECT_SOURCE_DIR}/src/dist/gloo_backend.cpp
      APPEND PROPERTY COMPILE_DEFINITIONS EMBER_WITH_GLOO=1)
    message(STATUS "ember: Gloo found, building the CPU process-group backend")
  else()
    message(STATUS "ember: Gloo not found (apt-get install libgloo-dev); distributed training on CPUs is unavailable")
  endif()
endif()

set(EMBER_WITH_NCCL OFF)
if(EMBER_WITH_CUDA)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${NCCL_ROOT} $ENV{NCCL_ROOT} ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_ROOT}
    PATH_SUFFIXES include)
  if(NCCL_INCLUDE_DIR)
    set(EMBER_WITH_NCCL ON)
    set(EMBER_NCCL_SOURCES ${PROJECT_SOURCE_DIR}/src/dist/nccl_backend.cpp ${PROJECT_SOURCE_DIR}/src/dist/nccl_lazy.cpp)
    target_sources(ember_layer_dist PRIVATE ${EMBER_NCCL_SOURCES})
    target_include_directories(ember_layer_dist PRIVATE ${NCCL_INCLUDE_DIR})
    # The NCCL backend orders its stream after the compute stream with CUDA events: it calls the
    # CUDA runtime (linked once, into libember, by the CUDA backend's line in CMakeLists.txt).
    ember_layer_links(dist CUDA::cudart_static)
    set_property(SOURCE ${PROJECT_SOURCE_DIR}/src/dist/nccl_lazy.cpp APPEND PROPERTY COMPILE_OPTIONS -fvisibility=hidden)
    set_property(SOURCE ${PROJECT_SOURCE_DIR}/src/dist/process_group.cpp ${EMBER_NCCL_SOURCES}
      APPEND PROPERTY COMPILE_DEFINITIONS EMBER_WITH_NCCL=1)
    message(STATUS "ember: nccl.h found in ${NCCL_INCLUDE_DIR}, building the NCCL process-group backend (libnccl loaded at run time)")
  else()
    message(STATUS "ember: nccl.h not found (set NCCL_ROOT); distributed training on GPUs is unavailable")
  endif()
endif()
