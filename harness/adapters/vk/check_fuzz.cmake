# CTest's vk-lavapipe-<version>-fuzz:campaign: a vk fuzz campaign on one lavapipe, judged from
# its results.json. Every finding must belong to a class triaged in
# reports/findings/vk-lavapipe-<version>/: today one, "the import accepts an allocation size
# that does not match the export's" (kinds wrong_size and unreadable_mapping, fields that
# change the size or swap in another export's descriptor and inode; documented behaviour:
# the sizes must match, VUID-VkMemoryAllocateInfo-allocationSize-01742); and on Mesa 25.0.7
# "a memfd imported as DMA_BUF maps the payload's private header" (unknown_mapping with the
# handle type changed; a driver defect, reports/findings/vk-lavapipe-25.0.7/). Anything else
# (a crash, a hang, a leak, a confused deputy, a stale export) fails the test.
#   cmake -DIPCHECK=<ipcheck> -DSECONDS=<s> -DOUT=<dir> [-DENV_VARS=K=V@@K=V] -P check_fuzz.cmake
include("${CMAKE_CURRENT_LIST_DIR}/../../../cmake/IpcheckScriptEnv.cmake")
file(REMOVE_RECURSE "${OUT}")
execute_process(COMMAND "${IPCHECK}" fuzz --adapter vk --time ${SECONDS} -j 2 --quiet --out "${OUT}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT EXISTS "${OUT}/results.json")
  message(FATAL_ERROR "the campaign wrote no ${OUT}/results.json (exit ${rc})")
endif()
file(READ "${OUT}/results.json" doc)
string(JSON status GET "${doc}" fuzz status)
string(JSON reason GET "${doc}" fuzz reason)
if(status STREQUAL "skip")
  message(STATUS "campaign skipped: ${reason}")
  return()
endif()
string(JSON executions GET "${doc}" fuzz executions)
string(JSON rate GET "${doc}" fuzz exec_per_s)
string(JSON replaced GET "${doc}" fuzz workers replaced)
if(executions LESS 1000)
  message(FATAL_ERROR "only ${executions} executions in ${SECONDS} s (status ${status}: ${reason})")
endif()
string(JSON n LENGTH "${doc}" fuzz findings)
set(untriaged "")
set(triaged 0)
if(n GREATER 0)
  math(EXPR last "${n} - 1")
  foreach(i RANGE ${last})
    string(JSON id GET "${doc}" fuzz findings ${i} id)
    string(JSON detail GET "${doc}" fuzz findings ${i} detail)
    if(id MATCHES "^(wrong_size|unreadable_mapping)-([a-z_+]*size[a-z_+]*|descriptor\\+ino|ino\\+descriptor)$" OR
       id MATCHES "^(unknown_mapping|wrong_size|unreadable_mapping|corrupt_mapping)-handle_type$")
      math(EXPR triaged "${triaged} + 1")
    else()
      string(APPEND untriaged "\n  ${id}: ${detail}")
    endif()
  endforeach()
endif()
message(STATUS "${executions} executions (${rate}/s), ${replaced} workers replaced, ${n} findings (${triaged} of the triaged classes)")
if(untriaged)
  message(FATAL_ERROR "findings outside the triaged classes (reports/findings/vk-lavapipe-*/):${untriaged}")
endif()
