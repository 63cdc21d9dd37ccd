# The unpack and whiteout unit tests once more with every case also written as a SquashFS
# image and compared with the directory output (tests/unit/unpack_case.h, FP_CASE_SQFS):
# the hostile-layer cases give the same exit codes and the same trees (issue 14).
foreach(stem test_unpack test_whiteout)
  set(src ${CMAKE_CURRENT_SOURCE_DIR}/unit/${stem}.c)
  add_executable(${stem}_sqfs ${src})
  target_compile_definitions(${stem}_sqfs PRIVATE _GNU_SOURCE FP_CASE_SQFS)
  target_include_directories(${stem}_sqfs PRIVATE ${CMAKE_SOURCE_DIR}/lib
                                                  ${CMAKE_CURRENT_SOURCE_DIR}/unit)
  target_link_libraries(${stem}_sqfs PRIVATE fpull_harness fpull_static)
  file(STRINGS ${src} lines REGEX "^TEST\\(([A-Za-z0-9_]+)\\)")
  foreach(line ${lines})
    string(REGEX REPLACE "^TEST\\(([A-Za-z0-9_]+)\\).*" "\\1" name "${line}")
    add_test(NAME unit.${stem}_sqfs.${name} COMMAND ${stem}_sqfs ${name})
    set_tests_properties(unit.${stem}_sqfs.${name} PROPERTIES ENVIRONMENT "${FPULL_TEST_ENV}"
                         TIMEOUT 300)
  endforeach()
endforeach()
