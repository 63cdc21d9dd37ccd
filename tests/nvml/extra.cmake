# Stand-ins for libnvidia-ml.so.1 (tests/nvml/fake_nvml.c): the full one and one that lacks
# symbols, each in its own directory under the real file name, for FPULL_NVML_LIBRARY and
# LD_LIBRARY_PATH.
foreach(variant full minimal)
  add_library(fake_nvml_${variant} SHARED ${CMAKE_CURRENT_LIST_DIR}/fake_nvml.c)
  set_target_properties(fake_nvml_${variant} PROPERTIES
    OUTPUT_NAME nvidia-ml
    SOVERSION 1
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/nvml/${variant})
endforeach()
target_compile_definitions(fake_nvml_minimal PRIVATE FAKE_NVML_MINIMAL)

if(TARGET test_nvml)
  add_dependencies(test_nvml fake_nvml_full fake_nvml_minimal)
  target_compile_definitions(test_nvml PRIVATE
    FAKE_NVML_FULL_DIR="${CMAKE_BINARY_DIR}/tests/nvml/full"
    FAKE_NVML_MINIMAL_DIR="${CMAKE_BINARY_DIR}/tests/nvml/minimal")
endif()
