# fpull-libapi: drives the public library API the way a program does, for
# tests/integration/test_library_api.py: $FPULL_BUILD_DIR/tests/fpull-libapi.
add_executable(fpull-libapi ${CMAKE_CURRENT_LIST_DIR}/libapi.c)
target_compile_definitions(fpull-libapi PRIVATE _GNU_SOURCE)
target_link_libraries(fpull-libapi PRIVATE fpull_static)
