# `ipcheck fuzz --export-c` for the `ur` adapter (CTest fuzz:export_c+ur, where the Unified
# Runtime stack is configured): findings on UR memory handles become C programs that build
# with a plain C compiler (C11, warnings as errors, libdl only), load the UR loader named on
# their command line, and run over the Level Zero driver the test's environment names
# (libze_ipcheck through the stack's 1.32 loader, as the ur-finding tests run):
#   - UMF's forged offset (open-trusts-header.md) reproduces on UR's Level Zero v2 adapter, the
#     finding's, and on v1 (--l0 v1: the change is to UMF's header, which both share);
#   - a finding from a results file (no reproducer kept) whose changes take values from this
#     run (the producer's pid, the bytes of an export that was put) reproduces stale_export;
#   - asked for --backend cuda, the program looks for UR's CUDA platform, not Level Zero: here
#     (no CUDA adapter) a set-up error naming it; where one exists, a verdict on it; a finding
#     of UR's CUDA adapter (layout ur-umf-cuda/1) chooses cuda itself;
#   - --backend for a finding that changes a provider's bytes, and inputs no UR program can
#     rebuild, are refused with their reason.
#   -DIPCHECK=<ipcheck> -DSRC=<repository root> -DOUT=<scratch folder> -DCC=<C compiler>
#   -DLOADER=<the stack's libur_loader.so.0>
file(REMOVE_RECURSE "${OUT}")
file(MAKE_DIRECTORY "${OUT}")
set(fixtures "${SRC}/fuzz/tests/fixtures")

include("${CMAKE_CURRENT_LIST_DIR}/export_c_helpers.cmake")

# Runs an exported program; its exit status and output in rc and out.
function(run_program name)
  execute_process(COMMAND "${OUT}/${name}" ${ARGN} RESULT_VARIABLE code OUTPUT_VARIABLE o ERROR_VARIABLE e TIMEOUT 120)
  message(STATUS "${name} ${ARGN}: exit ${code}\n${o}${e}")
  set(rc "${code}" PARENT_SCOPE)
  set(out "${o}${e}" PARENT_SCOPE)
endfunction()

function(expect_reproduced name verdict)
  run_program(${name} ${ARGN})
  if(NOT rc EQUAL 1 OR NOT out MATCHES "verdict  ${verdict}:" OR NOT out MATCHES "result   REPRODUCED")
    message(FATAL_ERROR "${name} ${ARGN} should reproduce ${verdict} (exit 1); got exit ${rc}:\n${out}")
  endif()
endfunction()

# Asked for UR's CUDA backend: a set-up error naming it where UR has none, else a verdict on it.
function(expect_cuda_backend name)
  run_program(${name} ${ARGN})
  if(NOT out MATCHES "backend cuda")
    message(FATAL_ERROR "${name} ${ARGN} did not choose UR's CUDA backend:\n${out}")
  endif()
  if(rc EQUAL 2)
    if(NOT out MATCHES "no cuda platform with a device")
      message(FATAL_ERROR "${name} ${ARGN}: a set-up error, but not for a missing CUDA platform:\n${out}")
    endif()
  elseif(NOT out MATCHES "\nverdict  ")
    message(FATAL_ERROR "${name} ${ARGN}: no verdict (exit ${rc}):\n${out}")
  endif()
endfunction()

# UMF's forged offset, found on v2: the finding's backend by default.
export_ok(offset_v2 "${fixtures}/ur-l0v2-open-trusts-offset.repro")
expect_in("${text}" "(Unified Runtime IPC memory handle)")
expect_in("${text}" "#define FINDING_BACKEND \"level_zero\"")
expect_in("${text}" "#define FINDING_L0 \"v2\"")
expect_in("${text}" "#define HANDLE_BYTES 120")
expect_in("${text}" "#define EXPECTED_VERDICT V_UNREADABLE_MAPPING")
expect_in("${text}" "{32, 8, SRC_LITERAL, 0, 0, 0, 0x40000000ull,")
expect_in("${text}" "ur.urIPCOpenMemHandleExp(context, devices[0], h,")
expect_reproduced(offset_v2 unreadable_mapping "${LOADER}")
expect_reproduced(offset_v2 unreadable_mapping --l0 v1 "${LOADER}")
expect_cuda_backend(offset_v2 --backend cuda "${LOADER}")

# The same mutation recorded on UR's CUDA adapter (where it crashes the importer): the program
# chooses the cuda backend itself.
export_ok(offset_cuda "${fixtures}/ur-cuda-open-trusts-offset.repro")
expect_in("${text}" "#define FINDING_BACKEND \"cuda\"")
expect_in("${text}" "#define FINDING_L0 \"\"")
expect_in("${text}" "#define HANDLE_BYTES 104")
expect_in("${text}" "#define EXPECTED_VERDICT V_CRASH")
expect_cuda_backend(offset_cuda "${LOADER}")

# From a results file: values of this run (the producer's pid, the bytes of a put export).
set(results "${fixtures}/ur-l0v2-results.json")
export_ok(stale stale_export-umf_offset+umf_pid --results "${results}")
expect_in("${text}" "#define BASE_SIDE 2")
expect_in("${text}" "{16, 4, SRC_PRODUCER_PID, 0, 0, 0, 0x2619ull,")
expect_in("${text}" "{32, 8, SRC_PRODUCER_REVOKED, 0, 32, 8, 0x1000ull,")
# The loader by environment instead of the argument.
set(ENV{REPRO_UR_LOADER} "${LOADER}")
expect_reproduced(stale stale_export)
unset(ENV{REPRO_UR_LOADER})

# Refusals: a provider's bytes on another backend; no loader; bad arguments; inputs no UR
# program can rebuild.
export_ok(provider wrong_size-provider_size --results "${results}")
run_program(provider --backend cuda "${LOADER}")
if(NOT rc EQUAL 2 OR NOT out MATCHES "past UMF's 40-byte header")
  message(FATAL_ERROR "a provider's bytes under --backend cuda should be refused (exit 2); got ${rc}:\n${out}")
endif()
run_program(offset_v2 "${OUT}/no-such-libur_loader.so.0")
if(NOT rc EQUAL 2 OR NOT out MATCHES "set-up error" OR NOT out MATCHES "cannot load")
  message(FATAL_ERROR "without a loader the program should exit 2 with a set-up error; got ${rc}:\n${out}")
endif()
run_program(offset_v2 --l0 v3)
if(NOT rc EQUAL 2 OR NOT out MATCHES "--l0 v3: use v1 or v2")
  message(FATAL_ERROR "--l0 v3 should be refused (exit 2); got ${rc}:\n${out}")
endif()

file(READ "${fixtures}/ur-l0v2-open-trusts-offset.repro" repro)
string(REPLACE "\"length\": 120" "\"length\": 64" short "${repro}")
file(WRITE "${OUT}/short.repro" "${short}")
export_refused("${OUT}/short.repro" "opens 64 bytes; its layout ur-umf-l0-v2/1 has 120")
string(REPLACE "\"target\": \"memory\"" "\"target\": \"physical\"" physical "${repro}")
string(REPLACE "\"setup\":" "\"target\": \"physical\", \"setup\":" physical "${physical}")
file(WRITE "${OUT}/physical.repro" "${physical}")
export_refused("${OUT}/physical.repro" "writes Unified Runtime programs for memory-handle findings")
message(STATUS "exported, compiled, run and refused as expected")
