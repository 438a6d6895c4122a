# `ipcheck fuzz --export-c`: CUDA findings become C programs that build with a plain C
# compiler (C11, warnings as errors, libdl only); other adapters' findings and findings without
# an input are refused with their reason.
#   -DIPCHECK=<ipcheck> -DSRC=<repository root> -DOUT=<scratch folder> -DCC=<C compiler>
file(REMOVE_RECURSE "${OUT}")
file(MAKE_DIRECTORY "${OUT}")
# The campaign the triage in reports/findings/cuda-580.159.04/ was written from (the
# baseline of 2026-11-23, kept beside its triage when the baseline was remade).
set(baseline "${SRC}/reports/findings/cuda-580.159.04/campaign-2026-11-23.json")
set(fixtures "${SRC}/fuzz/tests/fixtures")

include("${CMAKE_CURRENT_LIST_DIR}/export_c_helpers.cmake")

# A finding of the committed H100 baseline, by id (its reproducer files were not kept: the
# input comes from the section's mutation text).
export_ok(deputy confused_deputy-bytes_24 --results "${baseline}")
expect_in("${text}" "finding confused_deputy-bytes_24")
expect_in("${text}" "NVIDIA driver 580.159.04")
expect_in("${text}" "#define FINDING_WRITTEN_BY \"ipcheck ")
expect_in("${text}" "#define EXPECTED_VERDICT V_CONFUSED_DEPUTY")
expect_in("${text}" "#define BASE_NAME \"producer.export[2]\"")
expect_in("${text}" "{24, 8, SRC_LITERAL, 0, 0, 0, 0x17a0000000200ull,")
expect_in("${text}" "{\"producer.alloc[3]\", 65536, KIND_DEVICE, 0, 1, 0,")
# Without a driver the program says so and exits 2 (set-up error), never 0 or 1.
execute_process(COMMAND "${CMAKE_COMMAND}" -E env REPRO_LIBCUDA=${OUT}/no-such-libcuda.so "${OUT}/deputy"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT out MATCHES "set-up error" OR NOT out MATCHES "cannot load")
  message(FATAL_ERROR "without a driver the program should exit 2 with a set-up error; got ${rc}: ${out}${err}")
endif()

# A value taken from another export and a pid: resolved in the program's own run.
export_ok(pid_swap "unknown_mapping-bytes_24+bytes_8" --results "${baseline}")
expect_in("${text}" "{24, 8, SRC_PRODUCER_EXPORT, 4, 24, 8, 0x4420000000200ull,")
expect_in("${text}" "#define BASE_SIDE 1")

# A reproducer file with the learned layout: named fields, the size field checked.
export_ok(learned "${fixtures}/cuda-offset-learned.repro")
expect_in("${text}" "{28, 4, SRC_LITERAL, 0, 0, 0, 0x17a00ull,")
expect_in("${text}" "{8, 4, SRC_PRODUCER_PID, 0, 0, 0, 0x360ull,")
expect_in("${text}" "{16, 8, SRC_PRODUCER_EXPORT, 0, 16, 8, 0x1000ull,")
expect_in("${text}" "#define SIZE_FIELD_OFFSET 16")

# Refusals.
# An event-handle finding (--target event): the program opens with cuIpcOpenEventHandle and
# judges the event's state.
set(event_campaign "${SRC}/reports/findings/cuda-580.159.04/campaign-event-2026-11-24.json")
export_ok(event_deputy confused_deputy-bytes_16 --results "${event_campaign}")
expect_in("${text}" "(CUDA IPC event handle)")
expect_in("${text}" "#define TARGET_EVENT 1")
expect_in("${text}" "#define EXPECTED_VERDICT V_CONFUSED_DEPUTY")
expect_in("${text}" "{16, 8, SRC_LITERAL, 0, 0, 0, 0xffeull,")
expect_in("${text}" "{\"producer.alloc[1]\", 1},")
expect_in("${text}" "cu.cuIpcOpenEventHandle(&ev, h)")

export_refused("${fixtures}/ref-fd.repro" "supports cuda findings")
export_refused(crash-audit "has no input" --results "${baseline}")
export_refused(no-such-finding "has no fuzz finding 'no-such-finding'" --results "${baseline}")
execute_process(COMMAND "${IPCHECK}" fuzz --export-c confused_deputy-bytes_24 --results "${baseline}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT "${out}${err}" MATCHES "-o FILE")
  message(FATAL_ERROR "--export-c without -o should be a usage error naming -o; got ${rc}: ${out}${err}")
endif()
message(STATUS "exported, compiled and refused as expected")
