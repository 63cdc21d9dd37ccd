# The Slurm plugin's root-side code (contrib/slurm/job_dir.c, tree_remove.c) tested as a
# program of its own, as root, in a mount namespace of its own: security review 3's
# attacks on the epilog's unmount and removal, and run_dir's refusal.
add_executable(test_slurm_root ${CMAKE_CURRENT_LIST_DIR}/test_slurm_root.c
               ${CMAKE_SOURCE_DIR}/contrib/slurm/job_dir.c
               ${CMAKE_SOURCE_DIR}/contrib/slurm/tree_remove.c
               ${CMAKE_SOURCE_DIR}/contrib/slurm/sqsh_mount.c
               ${CMAKE_SOURCE_DIR}/contrib/slurm/run.c)
target_compile_definitions(test_slurm_root PRIVATE _GNU_SOURCE)
target_include_directories(test_slurm_root PRIVATE ${CMAKE_SOURCE_DIR}/lib
                           ${CMAKE_SOURCE_DIR}/contrib/slurm)
target_link_libraries(test_slurm_root PRIVATE fpull_harness fpull_static)
file(STRINGS ${CMAKE_CURRENT_LIST_DIR}/test_slurm_root.c slurm_root_lines
     REGEX "^TEST\\(([A-Za-z0-9_]+)\\)")
foreach(line ${slurm_root_lines})
  string(REGEX REPLACE "^TEST\\(([A-Za-z0-9_]+)\\).*" "\\1" name "${line}")
  add_test(NAME unit.test_slurm_root.${name} COMMAND test_slurm_root ${name})
  set_tests_properties(unit.test_slurm_root.${name} PROPERTIES ENVIRONMENT "${FPULL_TEST_ENV}"
                       TIMEOUT 120)
endforeach()

# What a task gets in the container (contrib/slurm/seccomp.c): the filter, in children.
add_executable(test_slurm_task ${CMAKE_CURRENT_LIST_DIR}/test_slurm_task.c
               ${CMAKE_SOURCE_DIR}/contrib/slurm/seccomp.c)
target_compile_definitions(test_slurm_task PRIVATE _GNU_SOURCE)
target_include_directories(test_slurm_task PRIVATE ${CMAKE_SOURCE_DIR}/lib
                           ${CMAKE_SOURCE_DIR}/contrib/slurm)
target_link_libraries(test_slurm_task PRIVATE fpull_harness fpull_static)
file(STRINGS ${CMAKE_CURRENT_LIST_DIR}/test_slurm_task.c slurm_task_lines
     REGEX "^TEST\\(([A-Za-z0-9_]+)\\)")
foreach(line ${slurm_task_lines})
  string(REGEX REPLACE "^TEST\\(([A-Za-z0-9_]+)\\).*" "\\1" name "${line}")
  add_test(NAME unit.test_slurm_task.${name} COMMAND test_slurm_task ${name})
  set_tests_properties(unit.test_slurm_task.${name} PROPERTIES ENVIRONMENT "${FPULL_TEST_ENV}")
endforeach()
