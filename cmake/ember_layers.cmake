# libember is built from the layers of docs/layers.txt, the file scripts/check-deps.py checks the
# includes against, so the build and the checker cannot disagree about what a layer is:
#
#   ember_add_layers(LAYERS_FILE)   one OBJECT library per layer with sources under src/
#                                   (ember_layer_<name>); every .cpp/.cu file goes to the layer of the
#                                   longest path that holds it, as check-deps assigns it. Sets
#                                   EMBER_LIBRARY_LAYERS (bottom first) and EMBER_LAYER_<name>_USES.
#   ember_layer_links(NAME ITEM...) the libraries outside ember that layer NAME's own code calls.
#   ember_add_layer_checks()        one shared object per layer (layer-check/libember_layer_<name>.so)
#                                   from the same objects, linked with --no-undefined against only
#                                   the layers of its `uses` line and its ember_layer_links: a call to
#                                   a layer above (or to one it may not use, or to a vendor library
#                                   it does not list) is an undefined symbol there and fails the
#                                   build. libember itself holds every layer's objects in one .so,
#                                   where nothing could be undefined, so it cannot catch one.
#
# Header-only layers (kernels, umbrella) and layers outside src/ (apps, python) have no library;
# their includes are check-deps's. docs/architecture.md ("How the layers are built") explains.

# Reads `layer` and `uses` lines (the syntax is check-deps's; other lines are for it alone).
function(ember_read_layers file)
  file(STRINGS ${file} lines)
  set(order "")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "#.*" "" line "${line}")
    string(STRIP "${line}" line)
    if(line STREQUAL "")
      continue()
    endif()
    string(REGEX REPLACE "[ \t]+" ";" words "${line}")
    list(LENGTH words n)
    list(GET words 0 kind)
    if(n LESS 3 OR NOT (kind STREQUAL "layer" OR kind STREQUAL "uses"))
      continue()
    endif()
    list(GET words 1 name)
    list(SUBLIST words 2 -1 rest)
    if(kind STREQUAL "layer")
      list(APPEND order ${name})
      set(paths_${name} ${rest})
      set(uses_${name} "")
    else()
      list(APPEND uses_${name} ${rest})
    endif()
  endforeach()
  foreach(name IN LISTS order)
    set(EMBER_LAYER_${name}_PATHS ${paths_${name}} PARENT_SCOPE)
    set(EMBER_LAYER_${name}_USES ${uses_${name}} PARENT_SCOPE)
  endforeach()
  set(EMBER_LAYERS ${order} PARENT_SCOPE)
endfunction()

# Creates ember_layer_<name> for every layer with sources; `exclude` is a regex of source paths
# (relative to the project) that other CMake code adds itself (optional backends).
function(ember_add_layers layers_file exclude)
  ember_read_layers(${layers_file})
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${layers_file})
  # (9999 - length)|path|layer, sorted: the longest path first, as check-deps matches.
  set(claims "")
  foreach(layer IN LISTS EMBER_LAYERS)
    foreach(path IN LISTS EMBER_LAYER_${layer}_PATHS)
      string(REGEX REPLACE "/$" "" path "${path}")
      string(LENGTH "${path}" len)
      math(EXPR key "9999 - ${len}")
      list(APPEND claims "${key}|${path}|${layer}")
    endforeach()
  endforeach()
  list(SORT claims)
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS RELATIVE ${PROJECT_SOURCE_DIR}
       ${PROJECT_SOURCE_DIR}/src/*.cpp ${PROJECT_SOURCE_DIR}/src/*.cu)
  list(SORT sources)
  foreach(layer IN LISTS EMBER_LAYERS)
    set(sources_${layer} "")
  endforeach()
  foreach(src IN LISTS sources)
    if(src MATCHES "${exclude}")
      continue()
    endif()
    set(owner "")
    foreach(claim IN LISTS claims)
      string(REPLACE "|" ";" parts "${claim}")
      list(GET parts 1 path)
      string(LENGTH "${path}/" plen)
      string(SUBSTRING "${src}" 0 ${plen} head)
      if(src STREQUAL path OR head STREQUAL "${path}/")
        list(GET parts 2 owner)
        break()
      endif()
    endforeach()
    if(owner STREQUAL "")
      message(FATAL_ERROR "${src}: no layer of ${layers_file} claims this file; add its directory there")
    endif()
    list(APPEND sources_${owner} ${PROJECT_SOURCE_DIR}/${src})
  endforeach()

  set(built "")
  foreach(layer IN LISTS EMBER_LAYERS)
    if(NOT sources_${layer})
      continue()
    endif()
    add_library(ember_layer_${layer} OBJECT ${sources_${layer}})
    target_link_libraries(ember_layer_${layer} PRIVATE ember_build)
    list(APPEND built ${layer})
  endforeach()
  set(EMBER_LIBRARY_LAYERS ${built} PARENT_SCOPE)
  foreach(layer IN LISTS EMBER_LAYERS)
    set(EMBER_LAYER_${layer}_USES ${EMBER_LAYER_${layer}_USES} PARENT_SCOPE)
  endforeach()
endfunction()

function(ember_layer_links layer)
  set_property(GLOBAL APPEND PROPERTY EMBER_LAYER_${layer}_LINKS ${ARGN})
endfunction()

# The libraries outside ember that the layers call, all of them (what libember links).
function(ember_all_layer_links out)
  set(all "")
  foreach(layer IN LISTS EMBER_LIBRARY_LAYERS)
    get_property(links GLOBAL PROPERTY EMBER_LAYER_${layer}_LINKS)
    list(APPEND all ${links})
  endforeach()
  list(REMOVE_DUPLICATES all)
  set(${out} ${all} PARENT_SCOPE)
endfunction()

function(ember_add_layer_checks)
  set(checks "")
  foreach(layer IN LISTS EMBER_LIBRARY_LAYERS)
    set(t ember_layer_check_${layer})
    add_library(${t} SHARED $<TARGET_OBJECTS:ember_layer_${layer}>)
    set_target_properties(${t} PROPERTIES OUTPUT_NAME ember_layer_${layer} LINKER_LANGUAGE CXX
      LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/layer-check)
    target_link_options(${t} PRIVATE LINKER:--no-undefined)
    foreach(dep IN LISTS EMBER_LAYER_${layer}_USES)
      if(TARGET ember_layer_check_${dep})
        target_link_libraries(${t} PRIVATE ember_layer_check_${dep})
      endif()
    endforeach()
    get_property(links GLOBAL PROPERTY EMBER_LAYER_${layer}_LINKS)
    target_link_libraries(${t} PRIVATE ${links})
    list(APPEND checks ${t})
  endforeach()
  # `cmake --build build --target ember_layer_check` links just these.
  add_custom_target(ember_layer_check DEPENDS ${checks})
endfunction()
