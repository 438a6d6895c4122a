# ipcheck fuzz --results: the campaign's section goes into a run's results.json (cmake -P).
#   IPCHECK  ipcheck-defects (crash_on_truncated gives a finding with a reproducer quickly)
#   OUT      a folder, emptied first
# The run's cases stay, the fuzz section arrives, the finding's reproducer path resolves
# from the results.json's folder, the Markdown report shows the campaign, and a --results
# that is not a results.json is a usage error (exit 2) naming the file before any fuzzing.
file(REMOVE_RECURSE "${OUT}")
execute_process(COMMAND "${IPCHECK}" run --adapter ref --filter memory.roundtrip.page --exact --out "${OUT}/run"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ipcheck run exited ${rc}:\n${out}${err}")
endif()

file(WRITE "${OUT}/not-results.json" "{\"schema\": \"something else\"}")
execute_process(COMMAND "${IPCHECK}" fuzz --adapter ref --runs 10 --quiet --out "${OUT}/bad"
                        --results "${OUT}/not-results.json"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT err MATCHES "--results .*not-results\\.json")
  message(FATAL_ERROR "a bad --results should exit 2 naming the file; exit ${rc}:\n${out}${err}")
endif()
if(EXISTS "${OUT}/bad/results.json")
  message(FATAL_ERROR "a bad --results must stop the command before the campaign runs")
endif()

set(ENV{IPCREF_DEFECT} crash_on_truncated)
execute_process(COMMAND "${IPCHECK}" fuzz --adapter ref --runs 3000 --minimise-time 5 --quiet
                        --out "${OUT}/campaign" --results "${OUT}/run/results.json"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
unset(ENV{IPCREF_DEFECT})
message("${out}${err}")
if(NOT rc EQUAL 1)
  message(FATAL_ERROR "the campaign against crash_on_truncated should find a crash (exit 1); exit ${rc}")
endif()

file(READ "${OUT}/run/results.json" doc)
string(JSON ncases LENGTH "${doc}" cases)
string(JSON first GET "${doc}" cases 0 id)
if(NOT ncases EQUAL 1 OR NOT first STREQUAL "memory.roundtrip.page")
  message(FATAL_ERROR "the run's cases changed: ${ncases} cases, first '${first}'")
endif()
string(JSON status GET "${doc}" fuzz status)
string(JSON nfind LENGTH "${doc}" fuzz findings)
if(NOT status STREQUAL "completed" OR nfind LESS 1)
  message(FATAL_ERROR "the merged fuzz section: status '${status}', ${nfind} findings")
endif()
string(JSON repro GET "${doc}" fuzz findings 0 reproducer)
if(IS_ABSOLUTE "${repro}" OR NOT EXISTS "${OUT}/run/${repro}")
  message(FATAL_ERROR "the reproducer '${repro}' does not resolve from ${OUT}/run")
endif()
file(READ "${OUT}/run/report.md" md)
if(NOT md MATCHES "[Ff]uzz")
  message(FATAL_ERROR "${OUT}/run/report.md does not show the campaign")
endif()
message("merged: ${ncases} case, fuzz ${status} with ${nfind} finding(s); reproducer ${repro}")
