# The Slurm plugin's code tested as programs of their own: test_slurm_root.c, the root side
# (contrib/slurm/root/job_dir.c, tree_remove.c) as root in a mount namespace of its own, against
# security review 3's attacks on the epilog's unmount and removal and run_dir's refusal;
# test_slurm_task.c, what a task gets in the container (task/seccomp.c), in children;
# test_slurm_pin.c, the job's pins (common/job_pin.c); test_slurm_msgs.c, the mounts' relative
# sources and the step's lines (common/settings.c, run.c).
set(slurm_src ${CMAKE_SOURCE_DIR}/contrib/slurm)
fpull_unit_test(${CMAKE_CURRENT_LIST_DIR}/test_slurm_root.c ${slurm_src}/root/job_dir.c
                ${slurm_src}/root/tree_remove.c ${slurm_src}/common/fuse_unmount.c
                ${slurm_src}/common/run.c)
fpull_unit_test(${CMAKE_CURRENT_LIST_DIR}/test_slurm_task.c ${slurm_src}/task/seccomp.c)
fpull_unit_test(${CMAKE_CURRENT_LIST_DIR}/test_slurm_pin.c ${slurm_src}/common/job_pin.c
                ${slurm_src}/common/settings.c ${slurm_src}/common/run.c)
target_include_directories(test_slurm_root PRIVATE ${slurm_src})
target_include_directories(test_slurm_task PRIVATE ${slurm_src})
target_include_directories(test_slurm_pin PRIVATE ${slurm_src})
fpull_unit_test(${CMAKE_CURRENT_LIST_DIR}/test_slurm_msgs.c ${slurm_src}/common/settings.c
                ${slurm_src}/common/run.c)
target_include_directories(test_slurm_msgs PRIVATE ${slurm_src})
# test_slurm_review4.c: security review 4 (issue 39), with a FUSE daemon of the user's on
# the job directory (fake_fuse.c, the kernel's protocol without libfuse).
fpull_unit_test(${CMAKE_CURRENT_LIST_DIR}/test_slurm_review4.c ${CMAKE_CURRENT_LIST_DIR}/fake_fuse.c
                ${slurm_src}/root/job_dir.c ${slurm_src}/root/tree_remove.c
                ${slurm_src}/common/fuse_unmount.c ${slurm_src}/common/run.c)
target_include_directories(test_slurm_review4 PRIVATE ${slurm_src} ${CMAKE_CURRENT_LIST_DIR})
