# package.consumers: stage an install (DESTDIR, so nothing may depend on the configured
# prefix), then build a small program against it three ways and run each.
add_test(NAME package.consumers
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/consumers.sh ${CMAKE_BINARY_DIR}
                 ${CMAKE_INSTALL_FULL_LIBDIR} ${CMAKE_C_COMPILER} ${CMAKE_COMMAND}
                 "$<BOOL:${FPULL_SANITIZE}>")
set_tests_properties(package.consumers PROPERTIES ENVIRONMENT "${FPULL_TEST_ENV}" TIMEOUT 300)
