# Unit tests of the Slurm plugin's code that needs no Slurm: its sources compiled in (the
# plugin itself is built only where slurm/spank.h is).
if(TARGET test_sqsh_config)
  target_sources(test_sqsh_config PRIVATE ${CMAKE_SOURCE_DIR}/contrib/slurm/runner/sqsh_config.c)
  target_include_directories(test_sqsh_config PRIVATE ${CMAKE_SOURCE_DIR}/contrib/slurm/runner)
endif()
