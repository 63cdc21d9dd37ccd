# The Slurm plugin's code tested as programs of their own: test_slurm_root.c, the root side
# (contrib/slurm/job_dir.c, tree_remove.c) as root in a mount namespace of its own, against
# security review 3's attacks on the epilog's unmount and removal and run_dir's refusal;
# test_slurm_task.c, what a task gets in the container (seccomp.c), in children.
function(fpull_slurm_test name)
  add_executable(${name} ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/${name}.c ${ARGN})
  target_compile_definitions(${name} PRIVATE _GNU_SOURCE)
  target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/lib
                             ${CMAKE_SOURCE_DIR}/contrib/slurm)
  target_link_libraries(${name} PRIVATE fpull_harness fpull_static)
  file(STRINGS ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/${name}.c lines REGEX "^TEST\\(([A-Za-z0-9_]+)\\)")
  foreach(line ${lines})
    string(REGEX REPLACE "^TEST\\(([A-Za-z0-9_]+)\\).*" "\\1" test "${line}")
    add_test(NAME unit.${name}.${test} COMMAND ${name} ${test})
    set_tests_properties(unit.${name}.${test} PROPERTIES ENVIRONMENT "${FPULL_TEST_ENV}"
                         TIMEOUT 120)
  endforeach()
endfunction()

fpull_slurm_test(test_slurm_root ${CMAKE_SOURCE_DIR}/contrib/slurm/job_dir.c
                 ${CMAKE_SOURCE_DIR}/contrib/slurm/tree_remove.c
                 ${CMAKE_SOURCE_DIR}/contrib/slurm/sqsh_mount.c
                 ${CMAKE_SOURCE_DIR}/contrib/slurm/run.c)
fpull_slurm_test(test_slurm_task ${CMAKE_SOURCE_DIR}/contrib/slurm/seccomp.c)
