# Refreshes a committed baseline: runs the catalog on the adapter, writes the run without
# its volatile fields to BASELINE, and shows what changed against the previous one.
# Run it through the build: cmake --build build --target refresh-<adapter>-baseline
#
# cmake -DIPCHECK=<ipcheck> -DBASELINE=<adapter-X.json> -DOUT=<dir> [-DADAPTER=ref] [-DADAPTER_OPTS=k=v@@k=v] [-DNAME=<adapter>]
#       [-DENV_VARS=K=V@@K=V]
#       [-DJOBS=2] -P refresh.cmake
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

file(REMOVE_RECURSE "${OUT}")
execute_process(COMMAND "${IPCHECK}" run --adapter ${ADAPTER} ${_opts} -j ${JOBS} --quiet --out "${OUT}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 AND NOT rc EQUAL 1)
  message(FATAL_ERROR "ipcheck run --adapter ${ADAPTER} ${_opts} exited with ${rc}; no baseline written")
endif()
if(rc EQUAL 1)
  message(WARNING "the ${NAME} run has unexpected results; the baseline records them as they are. "
                  "Commit it only if that is what the adapter should do (see ${OUT}/report.md)")
endif()
if(EXISTS "${BASELINE}")
  execute_process(COMMAND "${IPCHECK}" report diff "${BASELINE}" "${OUT}/results.json" OUTPUT_VARIABLE diff)
  message("changes against the baseline being replaced:\n${diff}")
endif()
execute_process(COMMAND "${IPCHECK}" report baseline "${OUT}/results.json" -o "${BASELINE}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ipcheck report baseline exited with ${rc}; no baseline written")
endif()
message("wrote ${BASELINE}; review it with git diff, then commit it")
