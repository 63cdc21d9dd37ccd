# package.consumers: stage an install (DESTDIR, so nothing may depend on the configured
# prefix), then build a small program against it three ways and run each.
add_test(NAME package.consumers
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/consumers.sh ${CMAKE_BINARY_DIR}
                 ${CMAKE_INSTALL_FULL_LIBDIR} ${CMAKE_C_COMPILER} ${CMAKE_COMMAND}
                 "$<BOOL:${FPULL_SANITIZE}>")
set_tests_properties(package.consumers PROPERTIES ENVIRONMENT "${FPULL_TEST_ENV}" TIMEOUT 300)

# package.deb and package.rpm: the site packages of packaging/ built, unpacked into a
# scratch root and run (two whole builds: slow).
foreach(kind deb rpm)
  add_test(NAME package.${kind}
           COMMAND ${PYTHON3} ${CMAKE_SOURCE_DIR}/tests/integration/run.py
                   ${CMAKE_CURRENT_LIST_DIR}/test_packages.py test_${kind})
  set_tests_properties(package.${kind} PROPERTIES ENVIRONMENT "${FPULL_TEST_ENV}" TIMEOUT 1800
                       SKIP_RETURN_CODE 77)
endforeach()
