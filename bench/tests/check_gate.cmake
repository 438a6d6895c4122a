# The count gate's own checks (label bench-gate), each a short gate on 4 KiB open + close only:
#   -DCHECK=slow_open   (IPCREF_DEFECT=slow_open set by CTest, ipcheck-defects): the gate exits 1
#                       and ref/mem_open_close/4KiB fails on its system calls (the sleep is a
#                       clock_nanosleep: no instruction count moves by much, a syscall count does)
#   -DCHECK=unmeasured  the gate exits 1 naming every row it did not measure (the other verbs,
#                       the two-role case): a renamed, filtered or failed benchmark fails the gate
# Run with -DIPCHECK=<ipcheck or ipcheck-defects> -DOUT=<folder>. A failed check says
# "check failed:" (what the defect twins, expect_gate_caught.cmake, look for).
foreach(_var IPCHECK OUT CHECK)
  if(NOT DEFINED ${_var})
    message(FATAL_ERROR "check_gate.cmake: ${_var} is not set")
  endif()
endforeach()
file(REMOVE_RECURSE "${OUT}")
execute_process(COMMAND "${IPCHECK}" bench --adapter ref --gate counts --parts ipc
                        --filter "^ref/(floor/)?mem_open_close/4KiB$" --out "${OUT}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
message("${out}${err}")
if(NOT rc EQUAL 1)
  message(FATAL_ERROR "check failed: the gate exited ${rc}, not 1")
endif()
if(CHECK STREQUAL "slow_open")
  if(NOT out MATCHES "\nref/mem_open_close/4KiB +syscalls +[^\n]* fail [^\n]*clock_nanosleep")
    message(FATAL_ERROR "check failed: ref/mem_open_close/4KiB did not fail on its system calls (a clock_nanosleep over its floor)")
  endif()
  message("caught: ref/mem_open_close/4KiB fails on its system calls")
elseif(CHECK STREQUAL "unmeasured")
  foreach(row "ref/mem_open_repeat/\\*" "ref/phys_open_map/\\*" "ref/event_signal_wake" "harness/two_role_case")
    if(NOT out MATCHES "\n${row} +[a-z]+ +- +[^\n]* unmeasured")
      message(FATAL_ERROR "check failed: the gate did not call ${row} unmeasured")
    endif()
  endforeach()
  if(out MATCHES "\nref/mem_open_close/4KiB +[a-z]+ +[^\n]* unmeasured")
    message(FATAL_ERROR "check failed: ref/mem_open_close/4KiB was measured, and called unmeasured")
  endif()
  message("every unmeasured row named, and the gate failed")
else()
  message(FATAL_ERROR "check_gate.cmake: CHECK is '${CHECK}'; use slow_open or unmeasured")
endif()
