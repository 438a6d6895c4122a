# Flakes: the self-test case selftest.flaky fails its first run when IPCHECK_SELFTEST_FLAKY
# says so (a test-only switch: <counter file>:<failures>) and passes after. With
# --rerun-failures 3 it is `flaky` with both attempts kept, and the run passes; without, it
# is `fail`; an expectations line naming it flaky marks it expected; the diff from the
# failing run lists it as flaky, never as a regression or a fix.
#
# cmake -DIPCHECK_SELFTEST=<ipcheck-selftest> -DOUT=<dir> -P flaky.cmake
foreach(v IPCHECK_SELFTEST OUT)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "flaky.cmake needs -D${v}=...")
  endif()
endforeach()
file(REMOVE_RECURSE "${OUT}")
file(MAKE_DIRECTORY "${OUT}")

function(run name rc_want)
  # Made here, writable by all: a role of a root run runs as another user (README, "What a
  # role may do"), which may not create files in this folder.
  file(REMOVE "${OUT}/${name}.counter")
  file(TOUCH "${OUT}/${name}.counter")
  file(CHMOD "${OUT}/${name}.counter" PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ GROUP_WRITE WORLD_READ WORLD_WRITE)
  set(cmd "${CMAKE_COMMAND}" -E env "IPCHECK_SELFTEST_FLAKY=${OUT}/${name}.counter:1" "${IPCHECK_SELFTEST}" run
          --adapter ref --filter selftest.flaky --exact --audit proc --quiet --out "${OUT}/${name}" ${ARGN})
  execute_process(COMMAND ${cmd} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(REPLACE ";" " " shown "${cmd}")
  message("$ ${shown}\n${out}${err}")
  if(NOT rc EQUAL rc_want)
    message(FATAL_ERROR "${name}: exit status ${rc}, expected ${rc_want}")
  endif()
  file(READ "${OUT}/${name}/results.json" j)
  set(json "${j}" PARENT_SCOPE)
endfunction()

function(expect what got want)
  if(NOT got STREQUAL want)
    message(FATAL_ERROR "${what} is '${got}', expected '${want}'")
  endif()
endfunction()

# Without reruns: the first run fails, and so does the case.
run(once 1 --expectations none)
string(JSON st GET "${json}" cases 0 status)
expect("the status without --rerun-failures" "${st}" fail)
string(JSON n ERROR_VARIABLE none LENGTH "${json}" cases 0 attempts)
if(NOT none)
  message(FATAL_ERROR "a case that ran once has attempts (${n})")
endif()

# With reruns: failed, then passed in fresh processes: flaky, both attempts kept, the run passes.
run(rerun 0 --expectations none --rerun-failures 3)
string(JSON st GET "${json}" cases 0 status)
expect("the status with --rerun-failures 3" "${st}" flaky)
string(JSON n LENGTH "${json}" cases 0 attempts)
expect("the number of attempts" "${n}" 2)
string(JSON a0 GET "${json}" cases 0 attempts 0 status)
string(JSON a1 GET "${json}" cases 0 attempts 1 status)
expect("the attempts' statuses" "${a0},${a1}" "fail,pass")
string(JSON flaky GET "${json}" summary counts flaky)
string(JSON unexpected GET "${json}" summary unexpected)
expect("summary.counts.flaky, summary.unexpected" "${flaky},${unexpected}" "1,0")
string(JSON reruns GET "${json}" run options rerun_failures)
expect("run.options.rerun_failures" "${reruns}" 3)

# A known flake: an expectations line names it flaky; it stays flaky, marked expected.
file(WRITE "${OUT}/flakes.txt" "selftest.flaky  flaky  the switch makes its first run fail (harness/tests/fleet/flaky.cmake)\n")
run(known 0 --expectations "${OUT}/flakes.txt" --rerun-failures 3)
string(JSON st GET "${json}" cases 0 status)
string(JSON es GET "${json}" cases 0 expected_status)
expect("a known flake's status and expected_status" "${st},${es}" "flaky,flaky")

# The diff: from the failing run to the flaky one, no regression and no fix; listed as flaky.
execute_process(COMMAND "${IPCHECK_SELFTEST}" report diff "${OUT}/once/results.json" "${OUT}/rerun/results.json"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out)
message("$ ipcheck report diff once rerun\n${out}")
expect("the diff's exit status" "${rc}" 0)
foreach(text "0 regressions, 1 flaky case" "flaky in the new run" "selftest.flaky")
  string(FIND "${out}" "${text}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the diff lacks '${text}'")
  endif()
endforeach()
message("selftest.flaky: fail without reruns, flaky (fail, pass) with --rerun-failures 3; the diff lists it apart")
