# `cmake --install` of the C++ inference SDK: the runtime libraries, the inference API's headers,
# load_and_run, and a CMake package (find_package(NeoMeg), target NeoMeg::inference). The Python
# wheel (scikit-build) installs its own layout in python/CMakeLists.txt instead.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(_neomeg_libs neomeg_dnn neomeg_core neomeg_serialization neomeg_inference)
# The libraries find each other beside themselves, load_and_run finds them in ../lib.
set_target_properties(${_neomeg_libs} PROPERTIES INSTALL_RPATH "$ORIGIN")
if(NEOMEG_WITH_CUDA)
  # cuBLAS and cuDNN are loaded at run time (the CUDA runtime is linked statically); the
  # toolkit's directory stays in the RUNPATH, where their dlopen looks too.
  set_property(TARGET neomeg_core neomeg_dnn APPEND PROPERTY INSTALL_RPATH "${CUDAToolkit_LIBRARY_DIR}")
endif()
set_target_properties(load_and_run PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")

install(TARGETS ${_neomeg_libs} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS load_and_run RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The inference API's header and the two error headers it includes.
install(FILES ${PROJECT_SOURCE_DIR}/src/include/neomeg/inference/model.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/neomeg/inference)
install(FILES ${PROJECT_SOURCE_DIR}/src/include/neomeg/serialization/errors.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/neomeg/serialization)
install(FILES ${PROJECT_SOURCE_DIR}/dnn/include/neomeg/dnn/errors.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/neomeg/dnn)

set(_neomeg_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/NeoMeg)
# NeoMegConfig.cmake declares NeoMeg::inference itself (an imported shared library with its include
# directory): an export set would have to carry every library below it with their build-tree
# include directories, while a user links the inference library alone.
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/NeoMegConfig.cmake.in
  ${PROJECT_BINARY_DIR}/NeoMegConfig.cmake INSTALL_DESTINATION ${_neomeg_cmake_dir}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_LIBDIR CMAKE_INSTALL_BINDIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/NeoMegConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/NeoMegConfig.cmake ${PROJECT_BINARY_DIR}/NeoMegConfigVersion.cmake
        DESTINATION ${_neomeg_cmake_dir})
