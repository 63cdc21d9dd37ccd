# Stand-ins for libnvidia-ml.so.1 (tests/nvml/fake_nvml.c): the full one and one that lacks
# symbols, each in its own directory under the real file name, for FPULL_NVML_LIBRARY and
# LD_LIBRARY_PATH; and for libcuda.so.1 (tests/nvml/fake_cuda.c), for FPULL_CUDA_LIBRARY.
foreach(variant full minimal)
  add_library(fake_nvml_${variant} SHARED ${CMAKE_CURRENT_LIST_DIR}/fake_nvml.c)
  set_target_properties(fake_nvml_${variant} PROPERTIES
    OUTPUT_NAME nvidia-ml
    SOVERSION 1
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/nvml/${variant})
endforeach()
target_compile_definitions(fake_nvml_minimal PRIVATE FAKE_NVML_MINIMAL)

add_library(fake_cuda SHARED ${CMAKE_CURRENT_LIST_DIR}/fake_cuda.c)
set_target_properties(fake_cuda PROPERTIES
  OUTPUT_NAME cuda
  SOVERSION 1
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/nvml/cuda)

if(TARGET test_nvml)
  add_dependencies(test_nvml fake_nvml_full fake_nvml_minimal fake_cuda)
  target_compile_definitions(test_nvml PRIVATE
    FAKE_NVML_FULL_DIR="${CMAKE_BINARY_DIR}/tests/nvml/full"
    FAKE_NVML_MINIMAL_DIR="${CMAKE_BINARY_DIR}/tests/nvml/minimal"
    FAKE_CUDA_DIR="${CMAKE_BINARY_DIR}/tests/nvml/cuda")
endif()
