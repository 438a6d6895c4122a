# cmake -DEXE=<ipcref_tests_defects> -DDEFECT=<name> -DFILTER=<gtest filter> -P expect_caught.cmake
# Passes when the tests selected by FILTER pass with no defect and fail with DEFECT on.
foreach(_var EXE DEFECT FILTER)
  if(NOT DEFINED ${_var})
    message(FATAL_ERROR "expect_caught.cmake: ${_var} is not set")
  endif()
endforeach()

# A control run: the selected tests exist and pass against the defects build with none on.
execute_process(COMMAND ${CMAKE_COMMAND} -E env IPCREF_DEFECT=none ${EXE} --gtest_filter=${FILTER}
                RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out TIMEOUT 60)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "control run (IPCREF_DEFECT=none, ${FILTER}) did not pass: ${_rc}\n${_out}")
endif()
if(NOT _out MATCHES "\\[  PASSED  \\] [1-9]")
  message(FATAL_ERROR "filter ${FILTER} selects no test:\n${_out}")
endif()

# A hang is cut short after 10 s: that too counts as caught.
execute_process(COMMAND ${CMAKE_COMMAND} -E env IPCREF_DEFECT=${DEFECT} ${EXE} --gtest_filter=${FILTER}
                RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out TIMEOUT 10)
if(_rc EQUAL 0)
  message(FATAL_ERROR "defect ${DEFECT} was NOT caught by ${FILTER}:\n${_out}")
endif()
string(REGEX MATCHALL "\\[  FAILED  \\] [A-Za-z_/]+\\.[A-Za-z0-9_/]+(, where GetParam\\(\\) = [^ ]+)? \\(" _failed "${_out}")
list(REMOVE_DUPLICATES _failed)
message(STATUS "defect ${DEFECT} caught (${_rc}) by: ${_failed}")
