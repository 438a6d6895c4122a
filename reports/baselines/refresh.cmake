# Refreshes the committed ref baseline: runs the catalog on `ref`, writes the run without
# its volatile fields to BASELINE, and shows what changed against the previous one.
# Run it through the build: cmake --build build --target refresh-ref-baseline
#
# cmake -DIPCHECK=<ipcheck> -DBASELINE=<ref-X.json> -DOUT=<dir> [-DJOBS=2] -P refresh.cmake
if(NOT DEFINED JOBS)
  set(JOBS 2)
endif()
file(REMOVE_RECURSE "${OUT}")
execute_process(COMMAND "${IPCHECK}" run --adapter ref -j ${JOBS} --quiet --out "${OUT}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 AND NOT rc EQUAL 1)
  message(FATAL_ERROR "ipcheck run --adapter ref exited with ${rc}; no baseline written")
endif()
if(rc EQUAL 1)
  message(WARNING "the ref run has unexpected results; the baseline records them as they are. "
                  "Commit it only if that is what the reference should do (see ${OUT}/report.md)")
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
