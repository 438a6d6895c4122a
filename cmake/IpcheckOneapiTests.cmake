# Tests on Intel's released oneAPI runtimes (ci/oneapi-stack, cmake/IpcheckOneapi.cmake), over
# libze_ipcheck through the Level Zero 1.32 loader of ci/ur-stack (the wheels ship no Level Zero
# loader). Labels: ur-release (the `ur` adapter and UR's findings on each release's own UR
# loader, adapters and UMF), sycl (the `sycl` adapter). Without the releases or the stack, one
# test says so and skips.
if(NOT (IPCHECK_ONEAPI_PREFIX AND IPCHECK_UR_STACK_PREFIX AND TARGET ze_ipcheck))
  set(_why "")
  if(NOT IPCHECK_ONEAPI_PREFIX)
    string(APPEND _why "the oneAPI releases are not installed (run ci/oneapi-stack: it needs the Python package index or IPCHECK_ONEAPI_WHEELS, then reconfigure). ")
  endif()
  if(NOT IPCHECK_UR_STACK_PREFIX)
    string(APPEND _why "the Unified Runtime stack (its Level Zero 1.32 loader) is not built (run ci/ur-stack). ")
  endif()
  add_test(NAME oneapi-releases:not-installed
           COMMAND ${CMAKE_COMMAND} -E echo "skipped: ${_why}the sycl and ur-release tests are left out")
  set_tests_properties(oneapi-releases:not-installed PROPERTIES LABELS "sycl;ur-release" SKIP_REGULAR_EXPRESSION "skipped:")
  return()
endif()

# LD_LIBRARY_PATH: the release's lib/ (libsycl, UR's loader and adapters, UMF), then the stack's
# lib/ for libze_loader.so.1 and its layers.
function(ipcheck_oneapi_env out release)
  set(${out} "LD_LIBRARY_PATH=${IPCHECK_ONEAPI_PREFIX}/${release}/lib:${IPCHECK_UR_STACK_PREFIX}/lib"
             "ZE_ENABLE_ALT_DRIVERS=$<TARGET_FILE:ze_ipcheck>" PARENT_SCOPE)
endfunction()

# UR's findings (reports/findings/ur-578c2a84/) on each release: the same reproducers, built
# against the 578c2a84 headers and run over the release's loader; the outcome each must give is
# reports/findings/ur-releases.md's table (reproduced | not | setup | absent:<symbol>).
set(_ur_rel_findings
  "close_keeps_mapping|1|reproduced|reproduced"      "close_keeps_mapping|2|reproduced|reproduced"
  "open_trusts_offset|1|reproduced|reproduced"       "open_trusts_offset|2|reproduced|reproduced"
  "stale_memory_handles|1|reproduced|reproduced"     "stale_memory_handles|2|reproduced|reproduced"
  "v1_error_as_success|1|reproduced|reproduced"      "v1_error_as_success|2|not|not"
  "v1_physical_flag|1|absent:urIPCGetPhysMemHandleExp|reproduced" "v1_physical_flag|2|absent:urIPCGetPhysMemHandleExp|not"
  "v2_events|2|setup|reproduced"
  "v2_physical_fd_number|2|setup|reproduced"
  "v1_dies_without_regular_queues|1|reproduced|reproduced" "v1_dies_without_regular_queues|2|not|not")
list(GET IPCHECK_ONEAPI_RELEASES 0 _rel_old)
list(GET IPCHECK_ONEAPI_RELEASES 1 _rel_new)
foreach(_row IN LISTS _ur_rel_findings)
  string(REPLACE "|" ";" _f "${_row}")
  list(GET _f 0 _repro)
  list(GET _f 1 _l0)
  math(EXPR _v2 "${_l0} - 1")
  foreach(_i 2 3)
    list(GET _f ${_i} _expect)
    if(_i EQUAL 2)
      set(_rel ${_rel_old})
    else()
      set(_rel ${_rel_new})
    endif()
    if(_expect STREQUAL "reproduced")
      set(_re "(^|\n)reproduced:")
    elseif(_expect STREQUAL "not")
      set(_re "(^|\n)not reproduced:")
    elseif(_expect STREQUAL "setup")
      set(_re "(^|\n)setup:")
    else()
      string(REPLACE "absent:" "" _sym "${_expect}")
      set(_re "undefined symbol: ${_sym}")
    endif()
    ipcheck_oneapi_env(_env ${_rel})
    set(_name ur-release-finding:${_repro}+${_rel}+l0v${_l0})
    add_test(NAME ${_name} COMMAND ur_repro_${_repro})
    set_tests_properties(${_name} PROPERTIES LABELS "ur-release;findings" TIMEOUT 60
                         ENVIRONMENT "${_env};UR_LOADER_USE_LEVEL_ZERO_V2=${_v2}" PASS_REGULAR_EXPRESSION "${_re}")
  endforeach()
endforeach()

# Baselines per release, gated by `ipcheck report diff` like the others
# (reports/baselines/check.cmake): sycl-l0<v>-oneapi-<release>.json and
# ur-l0<v>-oneapi-<release>.json, each the catalog over our driver with that release's own UR.
# refresh-<name>-baseline rewrites one; reports/baselines/oneapi-2026.1.2-to-2026.2.0.md is the
# report between the two releases (README: gating a new release against the last).
set(_rel_baselines "${PROJECT_SOURCE_DIR}/reports/baselines")
set(_rel_env "LD_LIBRARY_PATH=${IPCHECK_UR_STACK_PREFIX}/lib@@ZE_ENABLE_ALT_DRIVERS=$<TARGET_FILE:ze_ipcheck>")
foreach(_rel IN LISTS IPCHECK_ONEAPI_RELEASES)
  foreach(_adapter sycl ur)
    foreach(_l0 v1 v2)
      set(_name ${_adapter}-l0${_l0}-oneapi-${_rel})
      set(_file "${_rel_baselines}/${_name}.json")
      if(_adapter STREQUAL "sycl")
        set(_labels "reports;baseline;sycl")
      else()
        set(_labels "reports;baseline;ur-release")
      endif()
      add_test(NAME "${_name}-baseline:diff"
               COMMAND ${CMAKE_COMMAND} "-DIPCHECK=$<TARGET_FILE:ipcheck>" "-DBASELINE=${_file}"
                       "-DOUT=${CMAKE_BINARY_DIR}/ctest-results/${_name}-baseline" -DADAPTER=${_adapter}
                       "-DADAPTER_OPTS=release=${_rel}@@l0=${_l0}" -DNAME=${_name} "-DENV_VARS=${_rel_env}" -DJOBS=2
                       -P "${_rel_baselines}/check.cmake")
      set_tests_properties("${_name}-baseline:diff" PROPERTIES LABELS "${_labels}" TIMEOUT 900)
      add_custom_target(refresh-${_name}-baseline
                        COMMAND ${CMAKE_COMMAND} "-DIPCHECK=$<TARGET_FILE:ipcheck>" "-DBASELINE=${_file}"
                                "-DOUT=${CMAKE_BINARY_DIR}/${_name}-refresh" -DADAPTER=${_adapter}
                                "-DADAPTER_OPTS=release=${_rel}@@l0=${_l0}" -DNAME=${_name} "-DENV_VARS=${_rel_env}" -DJOBS=2
                                -P "${_rel_baselines}/refresh.cmake"
                        DEPENDS ipcheck ze_ipcheck USES_TERMINAL
                        COMMENT "Refreshing reports/baselines/${_name}.json (${_adapter}, oneAPI ${_rel}, Level Zero ${_l0}, our driver)")
    endforeach()
  endforeach()
endforeach()

# The sycl catalog on the newest release again under the Level Zero validation layer (labels
# sycl, validation), v1 and v2, diffed against the same baselines: the layer must change no
# verdict.
foreach(_l0 v1 v2)
  set(_name sycl-l0${_l0}-oneapi-${_rel_new})
  add_test(NAME "${_name}+validation-baseline:diff"
           COMMAND ${CMAKE_COMMAND} "-DIPCHECK=$<TARGET_FILE:ipcheck>" "-DBASELINE=${_rel_baselines}/${_name}.json"
                   "-DOUT=${CMAKE_BINARY_DIR}/ctest-results/${_name}+validation-baseline" -DADAPTER=sycl
                   "-DADAPTER_OPTS=release=${_rel_new}@@l0=${_l0}" -DNAME=${_name}
                   "-DENV_VARS=${_rel_env}@@ZE_ENABLE_VALIDATION_LAYER=1@@ZE_ENABLE_PARAMETER_VALIDATION=1" -DJOBS=2
                   -P "${_rel_baselines}/check.cmake")
  set_tests_properties("${_name}+validation-baseline:diff" PROPERTIES LABELS "reports;baseline;sycl;validation" TIMEOUT 900)
endforeach()
