# The SDK: headers, libtessera_core, the plugins, and a CMake package so that
# out-of-tree plugins can do find_package(tessera) + tessera_add_plugin().
include(CMakePackageConfigHelpers)

install(EXPORT tesseraTargets NAMESPACE tessera:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tessera)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tesseraConfig.cmake.in
  ${CMAKE_BINARY_DIR}/tesseraConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tessera
  PATH_VARS TESSERA_RELATIVE_PLUGIN_DIR)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/tesseraConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES
  ${CMAKE_BINARY_DIR}/tesseraConfig.cmake
  ${CMAKE_BINARY_DIR}/tesseraConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/TesseraPlugin.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tessera)
