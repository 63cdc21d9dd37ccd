# Installing libfpull for other projects: fpull.pc for pkg-config and a CMake package, so
# that find_package(fpull) gives fpull::fpull (shared) and fpull::fpull_static.
include(CMakePackageConfigHelpers)

# One version everywhere: the headers' FPULL_VERSION is what programs compile against.
file(STRINGS ${CMAKE_SOURCE_DIR}/include/fpull/version.h fpull_header_version
     REGEX "^#define FPULL_VERSION \"")
if(NOT fpull_header_version MATCHES "\"${PROJECT_VERSION}\"")
  message(FATAL_ERROR "include/fpull/version.h says ${fpull_header_version}, "
                      "project() says ${PROJECT_VERSION}: change both")
endif()

# The dependencies with a .pc file, as pkg_check_modules prefix and module pairs. The CMake
# package looks them up again, since fpull::fpull_static's link interface names them.
set(FPULL_PC_DEPS CURL libcurl CJSON libcjson CRYPTO libcrypto ARCHIVE libarchive
    YAML yaml-0.1 CPUID libcpuid ZSTD libzstd SQUASHFS libsquashfs1 MHD libmicrohttpd)
if(ISAL_FOUND)
  list(APPEND FPULL_PC_DEPS ISAL libisal)
endif()

# fpull.pc. The dependencies go into Libs.private by their own link flags, not into
# Requires.private: Debian's libcurl.pc and libarchive.pc list in their Libs.private
# libraries (rtmp, ssh2, ldap, acl, ...) whose development files their -dev packages do
# not pull in, so "pkg-config --static fpull" would name libraries the linker cannot find.
# Linking libfpull.a needs these libraries only; a fully static program adds each
# dependency's own "pkg-config --static" flags, as for any library it links.
set(fpull_libs_private "")
set(deps ${FPULL_PC_DEPS})
while(deps)
  list(POP_FRONT deps prefix module)
  foreach(d ${${prefix}_LIBRARY_DIRS})
    if(NOT d IN_LIST CMAKE_C_IMPLICIT_LINK_DIRECTORIES)
      list(APPEND fpull_libs_private -L${d})
    endif()
  endforeach()
  foreach(l ${${prefix}_LIBRARIES})
    list(APPEND fpull_libs_private -l${l})
  endforeach()
  list(APPEND fpull_libs_private ${${prefix}_LDFLAGS_OTHER})
endwhile()
list(APPEND fpull_libs_private -pthread)
foreach(l ${CMAKE_DL_LIBS})
  list(APPEND fpull_libs_private -l${l})
endforeach()
list(REMOVE_DUPLICATES fpull_libs_private)
list(JOIN fpull_libs_private " " FPULL_PC_LIBS_PRIVATE)
set(fpull_pcdir ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
file(RELATIVE_PATH FPULL_PC_TO_PREFIX ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig
     ${CMAKE_INSTALL_PREFIX})
# Directories given as absolute paths stay absolute; relative ones follow the prefix.
foreach(d LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${d}}")
    set(FPULL_PC_${d} "${CMAKE_INSTALL_${d}}")
  else()
    set(FPULL_PC_${d} "\${prefix}/${CMAKE_INSTALL_${d}}")
  endif()
endforeach()
string(REGEX REPLACE "/$" "" FPULL_PC_TO_PREFIX "${FPULL_PC_TO_PREFIX}")
configure_file(${CMAKE_SOURCE_DIR}/lib/fpull.pc.in ${CMAKE_BINARY_DIR}/fpull.pc @ONLY)
configure_file(${CMAKE_SOURCE_DIR}/lib/fpull-static.pc.in ${CMAKE_BINARY_DIR}/fpull-static.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/fpull.pc ${CMAKE_BINARY_DIR}/fpull-static.pc
        DESTINATION ${fpull_pcdir})

# The CMake package.
set_target_properties(fpull_shared PROPERTIES EXPORT_NAME fpull)
set_target_properties(fpull_static PROPERTIES EXPORT_NAME fpull_static)
add_library(fpull::fpull ALIAS fpull_shared)
add_library(fpull::fpull_static ALIAS fpull_static)
set(fpull_cmakedir ${CMAKE_INSTALL_LIBDIR}/cmake/fpull)
list(JOIN FPULL_PC_DEPS " " FPULL_CMAKE_PC_DEPS)
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/fpullConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/fpullConfig.cmake
                              INSTALL_DESTINATION ${fpull_cmakedir})
# 0.x: a new minor version may change the API, so only the same minor is compatible.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/fpullConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(EXPORT fpullTargets NAMESPACE fpull:: DESTINATION ${fpull_cmakedir})
install(FILES ${CMAKE_BINARY_DIR}/fpullConfig.cmake ${CMAKE_BINARY_DIR}/fpullConfigVersion.cmake
        DESTINATION ${fpull_cmakedir})
