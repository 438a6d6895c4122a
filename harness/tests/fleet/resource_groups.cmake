# CTest resource groups hand each cuda case test its own GPU, with no GPU here: a nested ctest
# runs two of the generated cuda case tests (cmake/IpcheckCaseTests.cmake, as they are) with
# a resource spec of two fake GPUs and -j 2, against a fake libcuda (fake_libcuda.c, first on
# LD_LIBRARY_PATH) whose cuInit records the CUDA_VISIBLE_DEVICES the process saw and when,
# sleeps so that tests run side by side overlap, and answers "no device" (the cases skip).
# Passes when the two ran at the same time, each with its own device in its environment (and
# in results.json's run.options.resources), and when, without a spec, nothing is set.
#
# cmake -DIPCHECK=<ipcheck> -DCASE_TESTS=<build>/ctest/ipcheck-cuda.cmake -DFAKE_CUDA_DIR=<dir>
#       -DOUT=<dir> -P resource_groups.cmake
foreach(v IPCHECK CASE_TESTS FAKE_CUDA_DIR OUT)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "resource_groups.cmake needs -D${v}=...")
  endif()
endforeach()
file(REMOVE_RECURSE "${OUT}")
file(MAKE_DIRECTORY "${OUT}/tests" "${OUT}/log" "${OUT}/log-nospec")
# The fake libcuda writes its records from the roles, which under a root run have a user of
# their own (README, "What a role may do"): the log folders are writable by every user.
file(CHMOD "${OUT}/log" "${OUT}/log-nospec" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_WRITE
     GROUP_EXECUTE WORLD_READ WORLD_WRITE WORLD_EXECUTE)

# The generated cuda case tests, read by a ctest of their own (its Testing/ stays here).
file(WRITE "${OUT}/tests/CTestTestfile.cmake" "include(\"${CASE_TESTS}\")\n")
file(WRITE "${OUT}/two-gpus.json" [=[
{ "version": { "major": 1, "minor": 0 },
  "local": [ { "gpus": [ { "id": "0", "slots": 1 }, { "id": "1", "slots": 1 } ] } ] }
]=])

execute_process(COMMAND "${IPCHECK}" list --format json OUTPUT_VARIABLE list RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ipcheck list failed (${rc})")
endif()
string(JSON a GET "${list}" 0 id)
string(JSON b GET "${list}" 1 id)
string(REPLACE "." "\\." ra "${a}")
string(REPLACE "." "\\." rb "${b}")
set(pick "^cuda:(${ra}|${rb})$")

set(ENV{LD_LIBRARY_PATH} "${FAKE_CUDA_DIR}")
unset(ENV{CUDA_VISIBLE_DEVICES})

function(run_nested log spec)
  set(ENV{IPCHECK_FAKE_CUDA_LOG} "${OUT}/${log}")
  set(ENV{IPCHECK_CASE_TESTS_OUT} "${OUT}/results-${log}")
  set(ENV{IPCHECK_FAKE_CUDA_SLEEP_MS} 0)
  set(args --test-dir "${OUT}/tests" -R "${pick}" -j 2 --output-on-failure)
  if(spec)
    list(APPEND args --resource-spec-file "${OUT}/two-gpus.json")
    set(ENV{IPCHECK_FAKE_CUDA_SLEEP_MS} 2000)  # long enough to overlap on a loaded machine
  endif()
  execute_process(COMMAND "${CMAKE_CTEST_COMMAND}" ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("$ ctest ${args}\n${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the nested ctest failed (${rc})")
  endif()
  if(NOT out MATCHES "tests passed, 0 tests failed out of 2")
    message(FATAL_ERROR "the nested ctest did not run the two tests")
  endif()
endfunction()

# Each record: "<CUDA_VISIBLE_DEVICES>;<start ns>;<end ns>"
function(records log out_var)
  file(GLOB files "${OUT}/${log}/cuinit-*.txt")
  list(LENGTH files n)
  if(NOT n EQUAL 2)
    message(FATAL_ERROR "expected 2 cuInit records in ${OUT}/${log}, found ${n}: did the cuda probes load the fake libcuda?")
  endif()
  set(all "")
  foreach(f IN LISTS files)
    file(STRINGS "${f}" lines)
    set(rec "")
    foreach(l IN LISTS lines)
      string(REGEX REPLACE "^[A-Z_]+=" "" v "${l}")
      list(APPEND rec "${v}")
    endforeach()
    list(JOIN rec "," joined)
    list(APPEND all "${joined}")
  endforeach()
  set(${out_var} "${all}" PARENT_SCOPE)
endfunction()

run_nested(log ON)
records(log recs)
list(GET recs 0 r0)
list(GET recs 1 r1)
string(REPLACE "," ";" r0 "${r0}")
string(REPLACE "," ";" r1 "${r1}")
list(GET r0 0 dev0)
list(GET r0 1 start0)
list(GET r0 2 end0)
list(GET r1 0 dev1)
list(GET r1 1 start1)
list(GET r1 2 end1)
message("test A saw CUDA_VISIBLE_DEVICES=${dev0} from ${start0} to ${end0} ns")
message("test B saw CUDA_VISIBLE_DEVICES=${dev1} from ${start1} to ${end1} ns")
if(dev0 STREQUAL dev1 OR NOT dev0 MATCHES "^[01]$" OR NOT dev1 MATCHES "^[01]$")
  message(FATAL_ERROR "the two tests did not get distinct GPUs 0 and 1: '${dev0}' and '${dev1}'")
endif()
# Overlap: each started before the other ended (the numbers fit CMake's 64-bit integers).
if(start0 GREATER_EQUAL end1 OR start1 GREATER_EQUAL end0)
  message(FATAL_ERROR "the two tests did not run at the same time")
endif()

# What ipcheck recorded of it in each results.json.
foreach(id IN ITEMS "${a}" "${b}")
  file(READ "${OUT}/results-log/cuda/${id}/results.json" results)
  string(JSON v ERROR_VARIABLE e GET "${results}" run options resources env CUDA_VISIBLE_DEVICES)
  if(e OR NOT v MATCHES "^[01]$")
    message(FATAL_ERROR "${id}: run.options.resources.env.CUDA_VISIBLE_DEVICES is '${v}' ${e}")
  endif()
  message("${id}: results.json records CUDA_VISIBLE_DEVICES=${v}")
endforeach()

# Without a resource spec CTest allocates nothing, and ipcheck sets nothing.
run_nested(log-nospec OFF)
records(log-nospec recs)
foreach(r IN LISTS recs)
  if(NOT r MATCHES "^\\(unset\\),")
    message(FATAL_ERROR "without a resource spec a test saw CUDA_VISIBLE_DEVICES: ${r}")
  endif()
endforeach()
message("resource groups: two cuda case tests ran side by side on GPUs ${dev0} and ${dev1}; none set without a spec")
