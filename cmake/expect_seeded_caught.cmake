# cmake -DEXE=<twin test binary> -DDEFECT=<name> -DFILTER=<gtest filter> -P expect_seeded_caught.cmake
# A seeded defect of ipcheck's deciding code (reports/include/ipcheck/reports/seeded.hpp) must
# be caught by the test it names: the tests FILTER selects pass with no defect on and fail
# with IPCHECK_SEEDED_DEFECT=DEFECT.
foreach(_var EXE DEFECT FILTER)
  if(NOT DEFINED ${_var})
    message(FATAL_ERROR "expect_seeded_caught.cmake: ${_var} is not set")
  endif()
endforeach()
execute_process(COMMAND ${CMAKE_COMMAND} -E env IPCHECK_SEEDED_DEFECT=none ${EXE} --gtest_filter=${FILTER}
                RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out TIMEOUT 120)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "control run (no seeded defect, ${FILTER}) did not pass: ${_rc}\n${_out}")
endif()
if(NOT _out MATCHES "\\[  PASSED  \\] [1-9]")
  message(FATAL_ERROR "filter ${FILTER} selects no test:\n${_out}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E env IPCHECK_SEEDED_DEFECT=${DEFECT} ${EXE} --gtest_filter=${FILTER}
                RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out TIMEOUT 120)
if(_rc EQUAL 0)
  message(FATAL_ERROR "seeded defect ${DEFECT} was NOT caught by ${FILTER}:\n${_out}")
endif()
string(REGEX MATCHALL "\\[  FAILED  \\] [A-Za-z_/]+\\.[A-Za-z0-9_/]+" _failed "${_out}")
list(REMOVE_DUPLICATES _failed)
message(STATUS "seeded defect ${DEFECT} caught (${_rc}) by: ${_failed}")
