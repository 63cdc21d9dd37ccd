# Fuzz targets over the Slurm plugin's parsers of user files, which need no Slurm: their
# sources compiled in (the plugin itself is built only where slurm/spank.h is).
if(TARGET fuzz_sqsh_config)
  target_sources(fuzz_sqsh_config PRIVATE ${CMAKE_SOURCE_DIR}/contrib/slurm/runner/sqsh_config.c)
  target_include_directories(fuzz_sqsh_config PRIVATE ${CMAKE_SOURCE_DIR}/contrib/slurm/runner)
endif()
