# An adapter must not regress against its committed baseline (the reference, and our own
# Level Zero driver): runs the catalog and diffs the run against the baseline. Fails when
# `ipcheck report diff` finds a regression.
#
# cmake -DIPCHECK=<ipcheck> -DBASELINE=<adapter-X.json> -DOUT=<dir> [-DADAPTER=ref] [-DADAPTER_OPTS=k=v@@k=v] [-DNAME=<adapter>]
#       [-DENV_VARS=K=V@@K=V]
#       [-DJOBS=2] -P check.cmake
if(NOT DEFINED JOBS)
  set(JOBS 2)
endif()
if(NOT DEFINED ADAPTER)
  set(ADAPTER ref)
endif()
# NAME: the baseline's name in messages and its refresh target (refresh-<NAME>-baseline), when
# one adapter has several (ur-l0v1, ur-l0v2); ADAPTER_OPTS: "k=v@@k=v", each an --adapter-opt.
if(NOT DEFINED NAME OR NAME STREQUAL "")
  set(NAME ${ADAPTER})
endif()
set(_opts "")
if(DEFINED ADAPTER_OPTS AND NOT ADAPTER_OPTS STREQUAL "")
  string(REPLACE "@@" ";" _kvs "${ADAPTER_OPTS}")
  foreach(kv ${_kvs})
    list(APPEND _opts --adapter-opt "${kv}")
  endforeach()
endif()
# ENV: "KEY=VALUE@@KEY=VALUE" for the run (a driver to load, a layer to switch on).
include("${CMAKE_CURRENT_LIST_DIR}/../../cmake/IpcheckScriptEnv.cmake")

if(NOT EXISTS "${BASELINE}")
  message(FATAL_ERROR "no ${NAME} baseline at ${BASELINE}; create one with: "
                      "cmake --build build --target refresh-${NAME}-baseline (reports/baselines/README.md)")
endif()
file(REMOVE_RECURSE "${OUT}")
execute_process(COMMAND "${IPCHECK}" run --adapter ${ADAPTER} ${_opts} -j ${JOBS} --quiet --out "${OUT}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
# 0: as expected, 1: some case was not (the diff says whether that is new); anything else is a broken run.
if(NOT rc EQUAL 0 AND NOT rc EQUAL 1)
  message(FATAL_ERROR "ipcheck run --adapter ${ADAPTER} ${_opts} exited with ${rc}; see its output above")
endif()
execute_process(COMMAND "${IPCHECK}" report diff "${BASELINE}" "${OUT}/results.json"
                RESULT_VARIABLE rc OUTPUT_VARIABLE diff ERROR_VARIABLE err)
message("${diff}${err}")
if(rc EQUAL 1)
  message(FATAL_ERROR "${NAME} regressed against ${BASELINE} (see the diff above). Fix the regression; "
                      "if the new behaviour is intended, refresh the baseline: "
                      "cmake --build build --target refresh-${NAME}-baseline, and commit it with the change")
elseif(NOT rc EQUAL 0)
  message(FATAL_ERROR "ipcheck report diff exited with ${rc}; see its message above")
endif()
