# The reference must not regress: runs the catalog on `ref` and diffs the run against the
# committed ref baseline. Fails when `ipcheck report diff` finds a regression.
#
# cmake -DIPCHECK=<ipcheck> -DBASELINE=<ref-X.json> -DOUT=<dir> [-DJOBS=2] -P check.cmake
if(NOT DEFINED JOBS)
  set(JOBS 2)
endif()
if(NOT EXISTS "${BASELINE}")
  message(FATAL_ERROR "no ref baseline at ${BASELINE}; create one with: "
                      "cmake --build build --target refresh-ref-baseline (reports/baselines/README.md)")
endif()
file(REMOVE_RECURSE "${OUT}")
execute_process(COMMAND "${IPCHECK}" run --adapter ref -j ${JOBS} --quiet --out "${OUT}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
# 0: as expected, 1: some case was not (the diff says whether that is new); anything else is a broken run.
if(NOT rc EQUAL 0 AND NOT rc EQUAL 1)
  message(FATAL_ERROR "ipcheck run --adapter ref exited with ${rc}; see its output above")
endif()
execute_process(COMMAND "${IPCHECK}" report diff "${BASELINE}" "${OUT}/results.json"
                RESULT_VARIABLE rc OUTPUT_VARIABLE diff ERROR_VARIABLE err)
message("${diff}${err}")
if(rc EQUAL 1)
  message(FATAL_ERROR "the reference regressed against ${BASELINE} (see the diff above). Fix the regression; "
                      "if the new behaviour is intended, refresh the baseline: "
                      "cmake --build build --target refresh-ref-baseline, and commit it with the change")
elseif(NOT rc EQUAL 0)
  message(FATAL_ERROR "ipcheck report diff exited with ${rc}; see its message above")
endif()
