# The catalog on `vk` against Mesa's lavapipe, in every CI: the system's (Debian 12, Mesa
# 22.3.6) and bookworm-backports' (ci/mesa-backports unpacks it under the build), each plain
# and under the Khronos validation layer; a baseline diff for each, and a short fuzz campaign.
# VK_ICD_FILENAMES names lavapipe's ICD, so a machine with another GPU still tests the same
# driver. Not in sanitizer builds: lavapipe's LLVM JIT and the loader's leaks at exit are not
# ours to sanitize, and ci/test runs the vk tests once, in the default build.
if(NOT IPCHECK_HAVE_VK OR IPCHECK_SANITIZE)
  return()
endif()

set(IPCHECK_LAVAPIPE_ICD "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json" CACHE FILEPATH
    "lavapipe's ICD manifest (Debian's mesa-vulkan-drivers)")
set(IPCHECK_MESA_BACKPORTS "${CMAKE_BINARY_DIR}/mesa-backports" CACHE PATH
    "where ci/mesa-backports unpacked bookworm-backports' Mesa")

# The Mesa version of each lavapipe names its baseline: reports/baselines/vk-lavapipe-<version>.json.
execute_process(COMMAND dpkg-query -W -f=\${Version} mesa-vulkan-drivers OUTPUT_VARIABLE _mesa_system
                ERROR_QUIET RESULT_VARIABLE _rc)
string(REGEX REPLACE "^([0-9.]+).*" "\\1" _mesa_system "${_mesa_system}")
set(_mesa_bpo "")
if(EXISTS "${IPCHECK_MESA_BACKPORTS}/VERSION")
  file(READ "${IPCHECK_MESA_BACKPORTS}/VERSION" _mesa_bpo)
  string(REGEX REPLACE "^([0-9.]+).*" "\\1" _mesa_bpo "${_mesa_bpo}")
endif()

# A lavapipe case that fails runs once more (`--rerun-failures 1`): the catalog on four
# lavapipe configurations is ~320 runs of Mesa's code on a loaded 2-core CI machine, and a
# case that fails, then passes, is `flaky` (its attempts kept in its results.json, named on
# the run's output and at the end of ci/test), not a failure, as in deqp-runner. A case that
# fails both times fails the test.
set(_vk_args ARGS --rerun-failures 1)
set(_lvp "VK_ICD_FILENAMES=${IPCHECK_LAVAPIPE_ICD}")
set(_bpo "VK_ICD_FILENAMES=${IPCHECK_MESA_BACKPORTS}/lvp_icd.json"
         "LD_LIBRARY_PATH=${IPCHECK_MESA_BACKPORTS}/root/usr/lib/x86_64-linux-gnu")
ipcheck_add_case_tests(ADAPTER vk ENVIRONMENT ${_lvp} LABELS lavapipe ${_vk_args})
ipcheck_add_case_tests(ADAPTER vk SUFFIX +validation ENVIRONMENT ${_lvp} IPCHECK_VK_VALIDATION=1
                       LABELS lavapipe validation ${_vk_args})
if(_mesa_bpo)
  ipcheck_add_case_tests(ADAPTER vk SUFFIX +mesa${_mesa_bpo} ENVIRONMENT ${_bpo} LABELS lavapipe mesa-backports
                         ${_vk_args})
  ipcheck_add_case_tests(ADAPTER vk SUFFIX +mesa${_mesa_bpo}+validation ENVIRONMENT ${_bpo} IPCHECK_VK_VALIDATION=1
                         LABELS lavapipe mesa-backports validation ${_vk_args})
else()
  message(STATUS "no backports Mesa in ${IPCHECK_MESA_BACKPORTS} (run ci/mesa-backports): vk runs on the system's lavapipe only")
  add_test(NAME "vk+mesa-backports:fetched" COMMAND ${CMAKE_COMMAND} -E echo
           "no backports Mesa in ${IPCHECK_MESA_BACKPORTS}: run ci/mesa-backports (ci/setup does), then reconfigure")
  set_tests_properties("vk+mesa-backports:fetched" PROPERTIES LABELS "cases;vk" WILL_FAIL ON)
endif()

# Each lavapipe against its committed baseline; `refresh-vk-lavapipe-<version>-baseline` rewrites one.
set(_ipcheck "$<TARGET_FILE:ipcheck>")
set(_baselines "${PROJECT_SOURCE_DIR}/reports/baselines")
function(_ipcheck_vk_baseline version env_list)
  if(NOT version)
    return()
  endif()
  list(JOIN env_list "@@" env)
  set(file "${_baselines}/vk-lavapipe-${version}.json")
  add_test(NAME "vk-lavapipe-${version}-baseline:diff"
           COMMAND ${CMAKE_COMMAND} "-DIPCHECK=${_ipcheck}" "-DBASELINE=${file}"
                   "-DOUT=${CMAKE_BINARY_DIR}/reports-tests/vk-lavapipe-${version}" -DADAPTER=vk "-DENV_VARS=${env}"
                   -DJOBS=2 -P "${_baselines}/check.cmake")
  set_tests_properties("vk-lavapipe-${version}-baseline:diff" PROPERTIES LABELS "reports;baseline;vk" TIMEOUT 600)
  add_custom_target(refresh-vk-lavapipe-${version}-baseline
                    COMMAND ${CMAKE_COMMAND} "-DIPCHECK=${_ipcheck}" "-DBASELINE=${file}"
                            "-DOUT=${CMAKE_BINARY_DIR}/reports-tests/vk-lavapipe-${version}-refresh" -DADAPTER=vk
                            "-DENV_VARS=${env}" -DJOBS=2 -P "${_baselines}/refresh.cmake"
                    DEPENDS ipcheck USES_TERMINAL
                    COMMENT "Refreshing reports/baselines/vk-lavapipe-${version}.json (lavapipe, Mesa ${version})")
endfunction()
_ipcheck_vk_baseline("${_mesa_system}" "${_lvp}")
_ipcheck_vk_baseline("${_mesa_bpo}" "${_bpo}")

# A vk fuzz campaign on each lavapipe, short in CI (IPCHECK_VK_FUZZ_SECONDS, default 10; the
# full 60-s campaign: ctest -R vk-fuzz with IPCHECK_VK_FUZZ_SECONDS=60 at configure, or
# `ipcheck fuzz --adapter vk --time 60`). Findings must be of the classes triaged in
# reports/findings/vk-lavapipe-<version>/ (check_fuzz.cmake lists them).
set(IPCHECK_VK_FUZZ_SECONDS 10 CACHE STRING "seconds of the vk fuzz campaign CTest runs")
function(_ipcheck_vk_fuzz version env_list)
  if(NOT version)
    return()
  endif()
  list(JOIN env_list "@@" env)
  math(EXPR timeout "${IPCHECK_VK_FUZZ_SECONDS} + 180")
  add_test(NAME "vk-lavapipe-${version}-fuzz:campaign"
           COMMAND ${CMAKE_COMMAND} "-DIPCHECK=${_ipcheck}" "-DSECONDS=${IPCHECK_VK_FUZZ_SECONDS}" "-DENV_VARS=${env}"
                   "-DOUT=${CMAKE_BINARY_DIR}/ctest-results/vk-fuzz-${version}"
                   -P "${PROJECT_SOURCE_DIR}/harness/adapters/vk/check_fuzz.cmake")
  set_tests_properties("vk-lavapipe-${version}-fuzz:campaign" PROPERTIES LABELS "fuzz;vk" TIMEOUT ${timeout})
endfunction()
_ipcheck_vk_fuzz("${_mesa_system}" "${_lvp}")
_ipcheck_vk_fuzz("${_mesa_bpo}" "${_bpo}")
