# CPU detection on arm64 and ppc64le CPUs we do not have: lib/detect/hwcap.c cross-built statically
# (with tests/qemu/hwcap_probe.c, nothing else from libfpull) and run under qemu-user's CPU
# models; tests/qemu/run.py feeds what it reports to fpull and checks the tags against what
# GCC's tables say that CPU is. One ctest test per (architecture, model); skipped (77) with
# the reason only when the cross compiler or qemu-user is missing (scripts/deps.sh installs
# both, so CI runs them).
set(FPULL_QEMU_ARCHS aarch64 ppc64le)
set(FPULL_QEMU_aarch64_CC aarch64-linux-gnu-gcc)
set(FPULL_QEMU_aarch64_QEMU qemu-aarch64)
set(FPULL_QEMU_aarch64_MODELS a64fx neoverse-n1 cortex-a76 cortex-a72 max)
set(FPULL_QEMU_ppc64le_CC powerpc64le-linux-gnu-gcc)
set(FPULL_QEMU_ppc64le_QEMU qemu-ppc64le)
set(FPULL_QEMU_ppc64le_MODELS power8 power9 power10)

foreach(arch ${FPULL_QEMU_ARCHS})
  find_program(FPULL_QEMU_${arch}_CC_PATH ${FPULL_QEMU_${arch}_CC})
  find_program(FPULL_QEMU_${arch}_QEMU_PATH ${FPULL_QEMU_${arch}_QEMU})
  set(probe ${CMAKE_BINARY_DIR}/tests/hwcap-probe-${arch})
  set(reason "")
  if(NOT FPULL_QEMU_${arch}_CC_PATH)
    set(reason "${FPULL_QEMU_${arch}_CC} not installed (Debian gcc-*-linux-gnu)")
  elseif(NOT FPULL_QEMU_${arch}_QEMU_PATH)
    set(reason "${FPULL_QEMU_${arch}_QEMU} not installed (Debian qemu-user)")
  else()
    add_custom_command(
      OUTPUT ${probe}
      COMMAND ${FPULL_QEMU_${arch}_CC_PATH} -std=c11 -O2 -static -Wall -Wextra -Werror
              -I${CMAKE_SOURCE_DIR}/lib ${CMAKE_CURRENT_LIST_DIR}/hwcap_probe.c
              ${CMAKE_SOURCE_DIR}/lib/detect/hwcap.c -o ${probe}
      DEPENDS ${CMAKE_CURRENT_LIST_DIR}/hwcap_probe.c ${CMAKE_SOURCE_DIR}/lib/detect/hwcap.c
              ${CMAKE_SOURCE_DIR}/lib/detect/hwcap.h
      COMMENT "Cross-building the ${arch} hwcap probe")
    add_custom_target(hwcap-probe-${arch} ALL DEPENDS ${probe})
  endif()
  foreach(model ${FPULL_QEMU_${arch}_MODELS})
    if(reason)
      add_test(NAME qemu.${arch}.${model}
               COMMAND sh -c "echo 'skipped: ${reason}'; exit 77")
    else()
      add_test(NAME qemu.${arch}.${model}
               COMMAND ${PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/run.py --qemu
                       ${FPULL_QEMU_${arch}_QEMU_PATH} --probe ${probe} --model ${model})
    endif()
    set_tests_properties(qemu.${arch}.${model} PROPERTIES ENVIRONMENT "${FPULL_TEST_ENV}"
                         TIMEOUT 120 SKIP_RETURN_CODE 77)
  endforeach()
endforeach()

# x86-64: fpull itself under qemu-user's x86 CPU models, every amd64 tag it reports checked by
# running code built with -march=TAG there (tests/qemu/x86_exec.py; issue 33). On an x86-64
# build host only: qemu-x86_64 runs the build's own binary.
set(FPULL_QEMU_x86_MODELS Nehalem Haswell-noTSX EPYC-Milan max)
find_program(FPULL_QEMU_x86_QEMU_PATH qemu-x86_64)
foreach(model ${FPULL_QEMU_x86_MODELS})
  if(NOT CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64)$")
    add_test(NAME qemu.x86_64.${model}
             COMMAND sh -c "echo 'skipped: not an x86-64 build host'; exit 77")
  elseif(FPULL_SANITIZE)
    # qemu-user cannot map ASan's shadow memory: the sanitized fpull is killed at start.
    add_test(NAME qemu.x86_64.${model}
             COMMAND sh -c "echo 'skipped: a sanitizer build does not run under qemu-user'; exit 77")
  elseif(NOT FPULL_QEMU_x86_QEMU_PATH)
    add_test(NAME qemu.x86_64.${model}
             COMMAND sh -c "echo 'skipped: qemu-x86_64 not installed (Debian qemu-user)'; exit 77")
  else()
    add_test(NAME qemu.x86_64.${model}
             COMMAND ${PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/x86_exec.py --qemu
                     ${FPULL_QEMU_x86_QEMU_PATH} --model ${model})
  endif()
  set_tests_properties(qemu.x86_64.${model} PROPERTIES ENVIRONMENT "${FPULL_TEST_ENV}"
                       TIMEOUT 300 SKIP_RETURN_CODE 77)
endforeach()
