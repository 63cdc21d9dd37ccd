# fpull-regget: a tiny driver of the registry client for the transport integration tests
# (tests/integration/test_registry_auth.py, test_transport.py): $FPULL_BUILD_DIR/tests/fpull-regget.
add_executable(fpull-regget ${CMAKE_CURRENT_LIST_DIR}/regget.c)
target_compile_definitions(fpull-regget PRIVATE _GNU_SOURCE)
target_link_libraries(fpull-regget PRIVATE fpull_static)
