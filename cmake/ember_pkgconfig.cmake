# Writes ember.pc (from cmake/ember.pc.in) and installs it under <libdir>/pkgconfig. Paths are
# relative to the .pc file (${pcfiledir}), so `cmake --install --prefix P` and a moved prefix work
# without regenerating it. Libs.private lists what a static libember needs (pkg-config --static).

file(RELATIVE_PATH EMBER_PC_TO_PREFIX ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
file(RELATIVE_PATH EMBER_PC_LIBDIR ${CMAKE_INSTALL_PREFIX} ${CMAKE_INSTALL_FULL_LIBDIR})
file(RELATIVE_PATH EMBER_PC_INCLUDEDIR ${CMAKE_INSTALL_PREFIX} ${CMAKE_INSTALL_FULL_INCLUDEDIR})
string(REGEX REPLACE "/$" "" EMBER_PC_TO_PREFIX "${EMBER_PC_TO_PREFIX}")

# A library found by path (/usr/lib/.../libdnnl.so) becomes -ldnnl, the form pkg-config files use.
function(ember_pc_link_flag out lib)
  get_filename_component(name ${lib} NAME_WE)
  string(REGEX REPLACE "^lib" "" name ${name})
  set(${out} "-l${name}" PARENT_SCOPE)
endfunction()

set(EMBER_PC_CFLAGS "")
set(EMBER_PC_LIBS_PRIVATE "")
foreach(lib ${DNNL_LIBRARY} ${OPENBLAS_LIBRARY} ${STB_LIBRARY} ${TURBOJPEG_LIBRARY} ${SPNG_LIBRARY} ${WEBP_LIBRARY}
    ${ZLIB_LIBRARIES})
  ember_pc_link_flag(flag ${lib})
  string(APPEND EMBER_PC_LIBS_PRIVATE "${flag} ")
endforeach()
string(APPEND EMBER_PC_LIBS_PRIVATE "-lfmt -ltomlplusplus ${OpenMP_CXX_FLAGS}")
if(EMBER_WITH_CUDA)
  string(APPEND EMBER_PC_CFLAGS " -DEMBER_WITH_CUDA=1")
  string(APPEND EMBER_PC_LIBS_PRIVATE " -L${CUDAToolkit_LIBRARY_DIR} -lcudart_static -lrt -lpthread")
endif()
if(CMAKE_DL_LIBS)
  string(APPEND EMBER_PC_LIBS_PRIVATE " -l${CMAKE_DL_LIBS}")
endif()

configure_file(${CMAKE_CURRENT_LIST_DIR}/ember.pc.in ${PROJECT_BINARY_DIR}/ember.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/ember.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
