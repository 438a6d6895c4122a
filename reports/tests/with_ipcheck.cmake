# Tests that need the ipcheck executable, included by the top level after it defines the
# target: the `ipcheck report` command line, the ref baseline check, and the HTML report in
# a browser. (reports/ itself links nothing of harness or lib.)
set(_r "${PROJECT_SOURCE_DIR}/reports")
set(_data "${_r}/tests/data")
set(_out "${PROJECT_BINARY_DIR}/reports-tests")
set(_exe "$<TARGET_FILE:ipcheck>")

function(_ipcheck_report_test name rc cmd)
  cmake_parse_arguments(A "" "FIRST_CASE" "TEXT;FILES" ${ARGN})
  set(defs "-DCMD=${cmd}" "-DEXPECT_RC=${rc}")
  if(A_TEXT)
    list(JOIN A_TEXT "@@" t)
    list(APPEND defs "-DEXPECT_TEXT=${t}")
  endif()
  if(A_FIRST_CASE)
    list(APPEND defs "-DFIRST_CASE=${A_FIRST_CASE}")
  endif()
  if(A_FILES)
    list(JOIN A_FILES "@@" f)
    list(APPEND defs "-DEXPECT_FILES=${f}")
  endif()
  add_test(NAME "report-cli:${name}" COMMAND ${CMAKE_COMMAND} ${defs} -P "${_r}/tests/expect_run.cmake")
  set_tests_properties("report-cli:${name}" PROPERTIES LABELS "reports")
endfunction()

set(_old "${_data}/ze-1.3.29735.json")
set(_mid "${_data}/ze-1.3.29803.json")
set(_new "${_data}/ze-1.6.31294.json")
_ipcheck_report_test(diff-same 0 "${_exe}|report|diff|${_new}|${_new}" TEXT "result: no changes")
_ipcheck_report_test(diff-pass-to-crash 1 "${_exe}|report|diff|${_old}|${_mid}"
                     FIRST_CASE memory.roundtrip.page TEXT "regressions (1)")
_ipcheck_report_test(diff-worst-first 1 "${_exe}|report|diff|${_old}|${_new}|--format|md"
                     TEXT "**4 regressions" "| `memory.roundtrip.page` | pass | **crash** |")
# A case that skipped in the baseline and fails now (two GPUs ran the cross-device cases a
# one-GPU baseline skipped): no regression, but a new failure, and the gate fails.
_ipcheck_report_test(diff-skip-to-fail 1 "${_exe}|report|diff|${_old}|${_data}/ze-1.3.29735-physical-fails.json"
                     TEXT "0 regressions, 1 new failure" "physical.roundtrip  skip -> fail")
_ipcheck_report_test(diff-fix-only 0 "${_exe}|report|diff|${_mid}|${_old}" TEXT "0 regressions, 1 fix")
_ipcheck_report_test(diff-one-file 2 "${_exe}|report|diff|${_old}" TEXT "missing NEW")
_ipcheck_report_test(diff-bad-format 2 "${_exe}|report|diff|${_old}|${_new}|--format|html"
                     TEXT "--format is 'html'; use one of text, md, json")
_ipcheck_report_test(diff-newer-schema 2 "${_exe}|report|diff|${_data}/schema-newer.json|${_new}"
                     TEXT "is newer: the file was written by ipcheck 0.4.0")
_ipcheck_report_test(diff-missing-file 2 "${_exe}|report|diff|${_old}|${_out}/nowhere.json" TEXT "cannot read results file")
foreach(format md html junit)
  _ipcheck_report_test(render-${format} 0 "${_exe}|report|render|${_new}|--format|${format}|-o|${_out}/cli/report.${format}"
                       FILES "${_out}/cli/report.${format}")
endforeach()
_ipcheck_report_test(render-to-stdout 0 "${_exe}|report|render|${_old}" TEXT "# ipcheck results: ze, Intel(R) Level-Zero 1.3.29735")
_ipcheck_report_test(render-bad-format 2 "${_exe}|report|render|${_old}|--format|pdf" TEXT "--format is 'pdf'; use one of md, html, junit")
_ipcheck_report_test(history 0 "${_exe}|report|history|${_old}|${_mid}|${_new}|--changed"
                     TEXT "case (changed only)" "* memory.roundtrip.page")
_ipcheck_report_test(unknown-subcommand 2 "${_exe}|report|contrast" TEXT "unknown subcommand 'contrast'")
# `ipcheck run` writes every rendering next to results.json.
_ipcheck_report_test(run-writes-reports 0
                     "${_exe}|run|--adapter|ref|--filter|memory.roundtrip.page|--exact|--quiet|--out|${_out}/run"
                     TEXT "wrote ${_out}/run/report.html"
                     FILES "${_out}/run/results.json" "${_out}/run/report.md" "${_out}/run/report.html" "${_out}/run/junit.xml")
file(MAKE_DIRECTORY "${_out}/cli")
_ipcheck_report_test(merge-nothing 2 "${_exe}|report|merge" TEXT "missing FILE")
_ipcheck_report_test(merge-mixed 2 "${_exe}|report|merge|${_old}|${_new}|-o|${_out}/cli/mixed.json"
                     TEXT "differ in driver.version: '1.3.29735' and '1.6.31294'" "--allow-mixed")
_ipcheck_report_test(first-bad-needs-db 2 "${_exe}|report|first-bad|memory.roundtrip.page" TEXT "give --db FILE")

# The results store over the fixtures: one copy per run, history --db equal to the files',
# first-bad naming the version that broke a case.
add_test(NAME "store-cli:fixtures"
         COMMAND ${CMAKE_COMMAND} "-DIPCHECK=${_exe}" "-DDATA=${_data}" "-DOUT=${_out}/store" -P "${_r}/tests/store.cmake")
set_tests_properties("store-cli:fixtures" PROPERTIES LABELS "reports;fleet")

# The store on PostgreSQL through the command line (store_pg.sh): 16 concurrent adds, a server
# that goes away inside an add (its own server), history/first-bad equal to SQLite's and store
# copy between the backends. The fixture store_pg_server (reports/tests/CMakeLists.txt) starts
# and stops the shared server; each test skips (77) without PostgreSQL.
get_property(_have_libpq GLOBAL PROPERTY IPCHECK_HAVE_LIBPQ)
foreach(_t concurrent server-gone cli)
  add_test(NAME "store-pg:${_t}"
           COMMAND "${_r}/tests/store_pg.sh" ${_t} "${_exe}" "${PROJECT_BINARY_DIR}/pg-server" "${_data}"
                   "${_out}/store-pg-${_t}")
  if(NOT _have_libpq)
    set_tests_properties("store-pg:${_t}" PROPERTIES ENVIRONMENT "IPCHECK_NO_LIBPQ=1")
  endif()
  set_tests_properties("store-pg:${_t}" PROPERTIES LABELS store-pg SKIP_RETURN_CODE 77 TIMEOUT 300)
  if(NOT _t STREQUAL "server-gone")
    set_tests_properties("store-pg:${_t}" PROPERTIES FIXTURES_REQUIRED store_pg_server)
  endif()
endforeach()

# The reference against its committed baseline: this version's, else the newest there is.
set(_baseline "${_r}/baselines/ref-${PROJECT_VERSION}.json")
if(NOT EXISTS "${_baseline}")
  file(GLOB _ref_baselines "${_r}/baselines/ref-*.json")
  list(SORT _ref_baselines COMPARE NATURAL)
  list(POP_BACK _ref_baselines _newest)
  if(_newest)
    set(_baseline "${_newest}")
  endif()
endif()
add_test(NAME "ref-baseline:diff"
         COMMAND ${CMAKE_COMMAND} "-DIPCHECK=${_exe}" "-DBASELINE=${_baseline}" "-DOUT=${_out}/ref-baseline" -DJOBS=2
                 -P "${_r}/baselines/check.cmake")
set_tests_properties("ref-baseline:diff" PROPERTIES LABELS "reports;baseline;ref" TIMEOUT 600)
# The catalog with fresh role processes and with kept ones (--reuse-roles) finds the same.
add_test(NAME "ref-reuse:diff"
         COMMAND ${CMAKE_COMMAND} "-DIPCHECK=${_exe}" "-DOUT=${_out}/ref-reuse" -DJOBS=2
                 -P "${_r}/baselines/reuse_check.cmake")
set_tests_properties("ref-reuse:diff" PROPERTIES LABELS "reports;reuse;ref" TIMEOUT 600)
add_custom_target(refresh-ref-baseline
                  COMMAND ${CMAKE_COMMAND} "-DIPCHECK=${_exe}" "-DBASELINE=${_r}/baselines/ref-${PROJECT_VERSION}.json"
                          "-DOUT=${_out}/ref-refresh" -DJOBS=2 -P "${_r}/baselines/refresh.cmake"
                  DEPENDS ipcheck USES_TERMINAL
                  COMMENT "Refreshing reports/baselines/ref-${PROJECT_VERSION}.json from a run of the catalog on ref")

# Our Level Zero driver through the real loader, against its committed baseline: the ze
# adapter's paths (both handle conventions live in their own CTest runs) must not regress.
if(TARGET ze_ipcheck)
  set(_ze_env "ZE_ENABLE_ALT_DRIVERS=$<TARGET_FILE:ze_ipcheck>")
  set(_ze_baseline "${_r}/baselines/ze-ipcheck-${PROJECT_VERSION}.json")
  add_test(NAME "ze-baseline:diff"
           COMMAND ${CMAKE_COMMAND} "-DIPCHECK=${_exe}" "-DBASELINE=${_ze_baseline}" "-DOUT=${_out}/ze-baseline"
                   -DADAPTER=ze "-DENV_VARS=${_ze_env}" -DJOBS=2 -P "${_r}/baselines/check.cmake")
  set_tests_properties("ze-baseline:diff" PROPERTIES LABELS "reports;baseline;ze" TIMEOUT 600)
  add_test(NAME "ze-reuse:diff"
           COMMAND ${CMAKE_COMMAND} "-DIPCHECK=${_exe}" "-DOUT=${_out}/ze-reuse" -DADAPTER=ze "-DENV_VARS=${_ze_env}"
                   -DJOBS=2 -P "${_r}/baselines/reuse_check.cmake")
  set_tests_properties("ze-reuse:diff" PROPERTIES LABELS "reports;reuse;ze" TIMEOUT 600)
  add_custom_target(refresh-ze-baseline
                    COMMAND ${CMAKE_COMMAND} "-DIPCHECK=${_exe}" "-DBASELINE=${_ze_baseline}" "-DOUT=${_out}/ze-refresh"
                            -DADAPTER=ze "-DENV_VARS=${_ze_env}" -DJOBS=2 -P "${_r}/baselines/refresh.cmake"
                    DEPENDS ipcheck ze_ipcheck USES_TERMINAL
                    COMMENT "Refreshing reports/baselines/ze-ipcheck-${PROJECT_VERSION}.json (our Level Zero driver)")
endif()

# The real Unified Runtime over our Level Zero driver, against its committed baselines: one per
# Level Zero adapter of UR (v1, v2), named by the UR commit the stack was built from (its
# STACK.txt, written by ci/ur-stack), in the environment of the ur+l0v1/ur+l0v2 case tests.
if(IPCHECK_UR_STACK_PREFIX AND TARGET ze_ipcheck)
  set(_ur_commit "")
  if(EXISTS "${IPCHECK_UR_STACK_PREFIX}/STACK.txt")
    file(STRINGS "${IPCHECK_UR_STACK_PREFIX}/STACK.txt" _ur_line REGEX "^unified-runtime [0-9a-f]+")
    if(_ur_line MATCHES "^unified-runtime ([0-9a-f]+)")
      string(SUBSTRING "${CMAKE_MATCH_1}" 0 8 _ur_commit)
    endif()
  endif()
  if(_ur_commit STREQUAL "")
    message(STATUS "ur baselines: ${IPCHECK_UR_STACK_PREFIX}/STACK.txt names no unified-runtime commit "
                   "(not a ci/ur-stack prefix?): ur-l0v1/ur-l0v2-baseline:diff are left out")
  else()
    set(_ur_env "LD_LIBRARY_PATH=${IPCHECK_UR_STACK_PREFIX}/lib@@ZE_ENABLE_ALT_DRIVERS=$<TARGET_FILE:ze_ipcheck>")
    foreach(_l0 v1 v2)
      set(_name ur-l0${_l0})
      set(_ur_baseline "${_r}/baselines/${_name}-${_ur_commit}.json")
      add_test(NAME "${_name}-baseline:diff"
               COMMAND ${CMAKE_COMMAND} "-DIPCHECK=${_exe}" "-DBASELINE=${_ur_baseline}" "-DOUT=${_out}/${_name}-baseline"
                       -DADAPTER=ur -DADAPTER_OPTS=l0=${_l0} -DNAME=${_name} "-DENV_VARS=${_ur_env}" -DJOBS=2
                       -P "${_r}/baselines/check.cmake")
      set_tests_properties("${_name}-baseline:diff" PROPERTIES LABELS "reports;baseline;ur;ur-${_l0}" TIMEOUT 600)
      add_custom_target(refresh-${_name}-baseline
                        COMMAND ${CMAKE_COMMAND} "-DIPCHECK=${_exe}" "-DBASELINE=${_ur_baseline}" "-DOUT=${_out}/${_name}-refresh"
                                -DADAPTER=ur -DADAPTER_OPTS=l0=${_l0} -DNAME=${_name} "-DENV_VARS=${_ur_env}" -DJOBS=2
                                -P "${_r}/baselines/refresh.cmake"
                        DEPENDS ipcheck ze_ipcheck USES_TERMINAL
                        COMMENT "Refreshing reports/baselines/${_name}-${_ur_commit}.json (UR ${_ur_commit}, Level Zero ${_l0}, our driver)")
    endforeach()
    # Our driver's seeded defect that leaves UR's v2 adapter no context
    # (lib/zedriver/include/ze_ipcheck/defects.hpp): no case runs, so the run must fail and the
    # diff against the v2 baseline must count the lost coverage.
    if(TARGET ze_ipcheck_defects)
      set(_ur_defects_env "LD_LIBRARY_PATH=${IPCHECK_UR_STACK_PREFIX}/lib@@ZE_ENABLE_ALT_DRIVERS=$<TARGET_FILE:ze_ipcheck_defects>")
      add_test(NAME "defects:ur-l0v2.context_create_fails"
               COMMAND ${CMAKE_COMMAND} "-DIPCHECK=${_exe}" "-DOUT=${_out}/defect-ur-context" -DADAPTER=ur
                       -DADAPTER_OPTS=l0=v2 "-DENV_VARS=${_ur_defects_env}@@IPCHECK_ZE_DEFECT=context_create_fails"
                       "-DFILTER=memory.roundtrip.*" -DEXPECT_RESULTS=runtime_init
                       "-DBASELINE=${_r}/baselines/ur-l0v2-${_ur_commit}.json" "-DEXPECT_DIFF=coverage lost (runtime_init)"
                       -P "${_r}/baselines/expect_caught.cmake")
      set_tests_properties("defects:ur-l0v2.context_create_fails" PROPERTIES LABELS "defects;ur;ur-v2" TIMEOUT 300)
    endif()
  endif()
endif()

# The HTML page in headless Chromium; skipped (77) without one. Screenshots land in
# <build>/reports-browser/.
add_test(NAME "report-browser:html"
         COMMAND "${_r}/tests/browser_test.sh" "${_exe}" "${_new}" "${_old}" "${PROJECT_BINARY_DIR}/reports-browser" 11 5
                 "${_old}" "${_mid}" "${_new}")
set_tests_properties("report-browser:html" PROPERTIES LABELS "browser" SKIP_RETURN_CODE 77 TIMEOUT 300)
