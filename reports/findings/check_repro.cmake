# ur-finding:<name>+<backend>: runs a finding's reproducer and checks that what it prints is
# the outcome its note states, not a looser one. The note holds the outcome on a line of its own,
#   Outcome (l0v1, l0v2): `<CMake regular expression the reproducer's output must match>`
# naming the backends it holds on. A reproducer that prints "reproduced:" with other details,
# or "partly reproduced:", fails the test, as does a note with no outcome for the backend.
# -DREPRO=<program> -DNOTE=<the finding's .md> -DBACKEND=<l0v1|l0v2>
cmake_minimum_required(VERSION 3.25)
foreach(v REPRO NOTE BACKEND)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "check_repro.cmake: -D${v}=... is missing")
  endif()
endforeach()
file(STRINGS "${NOTE}" outcomes REGEX "^Outcome \\(([a-z0-9, ]+)\\): `.*`$")
set(pattern "")
foreach(line IN LISTS outcomes)
  string(REGEX MATCH "^Outcome \\(([a-z0-9, ]+)\\): `(.*)`$" _ "${line}")
  set(expected "${CMAKE_MATCH_2}")
  string(REPLACE "," ";" backends "${CMAKE_MATCH_1}")
  string(REPLACE " " "" backends "${backends}")
  if(BACKEND IN_LIST backends)
    set(pattern "${expected}")
  endif()
endforeach()
if(pattern STREQUAL "")
  message(FATAL_ERROR "${NOTE} states no outcome for ${BACKEND}: add a line 'Outcome (${BACKEND}): `<regex>`' "
                      "with what its reproducer prints there")
endif()
execute_process(COMMAND "${REPRO}" OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
string(STRIP "${out}" out)
message(STATUS "${REPRO} (exit ${rc}):\n${out}")
if(NOT rc EQUAL 1)
  message(FATAL_ERROR "the reproducer exited ${rc}, not 1 (reproduced); its note ${NOTE} states: ${pattern}\n"
                      "(0: not reproduced, fixed upstream? 2: setup failed; 3: only part of the finding holds)\n${err}")
endif()
if(NOT out MATCHES "${pattern}")
  message(FATAL_ERROR "the reproducer's outcome is not the one its note states:\n  printed: ${out}\n"
                      "  ${NOTE} states: ${pattern}")
endif()
message(STATUS "the outcome matches ${NOTE}")
