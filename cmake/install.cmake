# cmake --install [--prefix P]: the public headers, liblumen.so.0.1.0 (+ .so.0, .so links) and
# liblumen.a, lumen.pc for pkg-config, the CMake package (find_package(lumen) -> lumen::lumen)
# and the backend modules (src/backends/cuda installs liblumen_cuda.so into
# ${CMAKE_INSTALL_LIBDIR}/lumen-modules, where the installed liblumen.so looks for modules).
#
# lumen::lumen is the shared library only. Its dependencies (FFTW, OpenMP, libpng, libjpeg,
# libtiff) are linked into liblumen.so, so the package needs no find_dependency and a consumer
# needs none of their -dev packages. Static linking is pkg-config's job (`pkg-config --static`
# lists every dependency of liblumen.a), which keeps this package free of the imported targets
# (PkgConfig::FFTW3F, OpenMP::OpenMP_C) that it would otherwise have to recreate.
include(CMakePackageConfigHelpers)

set(LUMEN_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/lumen)

# Every include/*.h, found at install time (new public headers need no edit here).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")
install(TARGETS lumen_shared EXPORT lumenTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS lumen ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})

install(EXPORT lumenTargets NAMESPACE lumen:: DESTINATION ${LUMEN_INSTALL_CMAKEDIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/lumenConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/lumenConfig.cmake INSTALL_DESTINATION ${LUMEN_INSTALL_CMAKEDIR})
# 0.x: the soname is liblumen.so.0, so every 0.y.z satisfies a request for 0.1.
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/lumenConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/lumenConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/lumenConfigVersion.cmake
        DESTINATION ${LUMEN_INSTALL_CMAKEDIR})

# lumen.pc. Its prefix is ${pcfiledir}/<back to the prefix>, so the file is right for any
# --prefix given at install time (and after the tree is moved), not only the configured one.
set(LUMEN_PC_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
file(RELATIVE_PATH LUMEN_PC_PREFIX /prefix/${LUMEN_PC_DIR} /prefix)
string(REGEX REPLACE "/$" "" LUMEN_PC_PREFIX "\${pcfiledir}/${LUMEN_PC_PREFIX}")
foreach(kind LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${kind}}")
    set(LUMEN_PC_${kind} "${CMAKE_INSTALL_${kind}}")
  else()
    set(LUMEN_PC_${kind} "\${prefix}/${CMAKE_INSTALL_${kind}}")
  endif()
endforeach()
# What liblumen.a needs on a static link line, in the order the linker wants them.
set(LUMEN_PC_LIBS_PRIVATE ${OpenMP_C_FLAGS})
# The libraries' folders first, where the linker does not look by itself: dependencies in a
# prefix of their own (a user's, Homebrew's, conda's, scripts/gpu-check.sh's carried packages).
set(LUMEN_PC_LIB_DIRS ${FFTW3F_LIBRARY_DIRS} ${WEBP_LIBRARY_DIRS})
foreach(path ${LUMEN_FFTW3F_OMP_LIBRARY} ${PNG_LIBRARIES} ${JPEG_LIBRARIES} ${TIFF_LIBRARIES}
        ${OPENEXR_CORE_LIBRARY})
  if(IS_ABSOLUTE "${path}")
    get_filename_component(dir "${path}" DIRECTORY)
    list(APPEND LUMEN_PC_LIB_DIRS "${dir}")
  endif()
endforeach()
list(REMOVE_DUPLICATES LUMEN_PC_LIB_DIRS)
if(LUMEN_PC_LIB_DIRS AND CMAKE_C_IMPLICIT_LINK_DIRECTORIES)
  list(REMOVE_ITEM LUMEN_PC_LIB_DIRS ${CMAKE_C_IMPLICIT_LINK_DIRECTORIES})
endif()
foreach(dir ${LUMEN_PC_LIB_DIRS})
  string(APPEND LUMEN_PC_LIBS_PRIVATE " -L${dir}")
endforeach()
get_filename_component(LUMEN_EXR_CORE_NAME ${OPENEXR_CORE_LIBRARY} NAME_WE)
string(REGEX REPLACE "^lib" "" LUMEN_EXR_CORE_NAME ${LUMEN_EXR_CORE_NAME})
set(LUMEN_PC_FFTW_OMP)
if(LUMEN_FFTW_OMP)
  set(LUMEN_PC_FFTW_OMP fftw3f_omp)
endif()
foreach(lib ${LUMEN_PC_FFTW_OMP} ${FFTW3F_LIBRARIES} png jpeg tiff ${WEBP_LIBRARIES} ${LUMEN_EXR_CORE_NAME} m
        ${CMAKE_DL_LIBS} pthread)
  string(APPEND LUMEN_PC_LIBS_PRIVATE " -l${lib}")
endforeach()
configure_file(${CMAKE_CURRENT_LIST_DIR}/lumen.pc.in ${CMAKE_CURRENT_BINARY_DIR}/lumen.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/lumen.pc DESTINATION ${LUMEN_PC_DIR})
