# A seeded defect of the bench gate (bench/include/ipcheck/bench/gate_defects.hpp) must be
# caught by the check named: the check passes on ipcheck-defects with no gate defect on (the
# control), and fails ("check failed:") with IPCHECK_BENCH_DEFECT=<DEFECT>.
#   -DIPCHECK=<ipcheck-defects> -DOUT=<folder> -DCHECK=<check_gate.cmake's check> -DDEFECT=<name>
#   -DSCRIPT=<check_gate.cmake> [-DREF_DEFECT=<IPCREF_DEFECT for both runs>]
foreach(_var IPCHECK OUT CHECK DEFECT SCRIPT)
  if(NOT DEFINED ${_var})
    message(FATAL_ERROR "expect_gate_caught.cmake: ${_var} is not set")
  endif()
endforeach()
if(NOT DEFINED REF_DEFECT)
  set(REF_DEFECT none)
endif()
foreach(_run control defect)
  set(_on none)
  if(_run STREQUAL "defect")
    set(_on ${DEFECT})
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -E env IPCREF_DEFECT=${REF_DEFECT} IPCHECK_BENCH_DEFECT=${_on}
                          ${CMAKE_COMMAND} -DIPCHECK=${IPCHECK} -DOUT=${OUT}/${_run} -DCHECK=${CHECK} -P ${SCRIPT}
                  RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out TIMEOUT 150)
  if(_run STREQUAL "control" AND NOT _rc EQUAL 0)
    message(FATAL_ERROR "control run (no gate defect) of check ${CHECK} did not pass (${_rc}):\n${_out}")
  endif()
  if(_run STREQUAL "defect")
    if(_rc EQUAL 0 OR NOT _out MATCHES "check failed:")
      message(FATAL_ERROR "gate defect ${DEFECT} was NOT caught by check ${CHECK} (${_rc}):\n${_out}")
    endif()
    string(REGEX MATCH "check failed: [^\n]*" _why "${_out}")
    message(STATUS "gate defect ${DEFECT} caught by check ${CHECK}: ${_why}")
  endif()
endforeach()
