# CTest's ur-l0v1-fuzz:campaign and ur-l0v2-fuzz:campaign: a fuzz campaign on `ur` memory
# handles (UMF's header fields and the Level Zero provider's bytes, judged by the oracle) over
# UR's Level Zero v1 or v2 adapter on libze_ipcheck, judged from its results.json.
#
# UR finds things here, so findings do not fail the test; it prints them by class. It fails when:
#   - the campaign did not complete (a set-up error, a stop) or ran fewer than MIN_EXECUTIONS;
#   - ipcheck's own consumer died between inputs (a crash finding without an input: that is
#     ipcheck, not the runtime);
#   - a finding is outside the classes triaged in reports/findings/ur-578c2a84/: UMF trusts the
#     handle's base, offset and size and maps the exporter's whole pool slab (wrong_size,
#     wrong_offset, confused_deputy, unknown_mapping, unreadable_mapping, corrupt_mapping:
#     open-trusts-header.md; on v1 most unreadable mappings are an open that answered success
#     with no pointer: v1-error-as-success.md); close keeps the mapping (mapping_leak, close_failed on a second
#     close: close-keeps-mapping.md); handles open after put (stale_export:
#     stale-memory-handles.md). A crash or hang inside an open, a descriptor leak or a lost
#     context is new: triage it (a defect of libze_ipcheck is fixed, UR's or UMF's gets a note).
#
#   cmake -DIPCHECK=<ipcheck> -DL0=v1|v2 -DSECONDS=<s> -DOUT=<dir> [-DMIN_EXECUTIONS=n]
#         [-DENV_VARS=K=V@@K=V] -P check_fuzz.cmake
if(NOT DEFINED MIN_EXECUTIONS OR MIN_EXECUTIONS STREQUAL "")
  set(MIN_EXECUTIONS 1000)
endif()
include("${CMAKE_CURRENT_LIST_DIR}/../../../cmake/IpcheckScriptEnv.cmake")
file(REMOVE_RECURSE "${OUT}")
execute_process(COMMAND "${IPCHECK}" fuzz --adapter ur --adapter-opt l0=${L0} --time ${SECONDS} -j 2 --quiet --out "${OUT}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
# 0: no finding, 1: findings; anything else is a broken campaign (a usage error, an internal one).
if(NOT rc EQUAL 0 AND NOT rc EQUAL 1)
  message(FATAL_ERROR "ipcheck fuzz --adapter ur --adapter-opt l0=${L0} exited with ${rc}; see its output above")
endif()
if(NOT EXISTS "${OUT}/results.json")
  message(FATAL_ERROR "the campaign wrote no ${OUT}/results.json (exit ${rc})")
endif()
file(READ "${OUT}/results.json" doc)
string(JSON status GET "${doc}" fuzz status)
string(JSON reason GET "${doc}" fuzz reason)
if(NOT status STREQUAL "completed")
  message(FATAL_ERROR "the campaign did not complete: ${status}: ${reason}")
endif()
string(JSON target GET "${doc}" fuzz target)
string(JSON driver GET "${doc}" fuzz driver version)
string(JSON executions GET "${doc}" fuzz executions)
string(JSON rate GET "${doc}" fuzz exec_per_s)
string(JSON replaced GET "${doc}" fuzz workers replaced)
string(JSON verdicts GET "${doc}" fuzz verdicts)
if(NOT driver MATCHES "^level_zero/${L0} ")
  message(FATAL_ERROR "the campaign ran on '${driver}', not on UR's Level Zero ${L0} adapter")
endif()
if(executions LESS MIN_EXECUTIONS)
  message(FATAL_ERROR "only ${executions} executions in ${SECONDS} s, expected at least ${MIN_EXECUTIONS}")
endif()

set(triaged "^(wrong_size|wrong_offset|confused_deputy|unknown_mapping|unreadable_mapping|corrupt_mapping|mapping_leak|close_failed|stale_export)$")
string(JSON n LENGTH "${doc}" fuzz findings)
set(classes "")
set(untriaged "")
set(own_crash "")
if(n GREATER 0)
  math(EXPR last "${n} - 1")
  foreach(i RANGE ${last})
    string(JSON id GET "${doc}" fuzz findings ${i} id)
    string(JSON outcome GET "${doc}" fuzz findings ${i} outcome)
    string(JSON clause GET "${doc}" fuzz findings ${i} clause)
    string(JSON detail GET "${doc}" fuzz findings ${i} detail)
    string(JSON mutation GET "${doc}" fuzz findings ${i} mutation)
    if(outcome STREQUAL "crash" AND mutation STREQUAL "")
      string(APPEND own_crash "\n  ${id}: ${detail}")
    elseif(NOT outcome MATCHES "${triaged}")
      string(APPEND untriaged "\n  ${id} (${clause}): ${detail}")
    endif()
    list(APPEND classes "${outcome} (${clause})")
  endforeach()
endif()
# Findings by class, most first.
set(by_class "")
list(REMOVE_DUPLICATES classes)
foreach(c ${classes})
  set(k 0)
  foreach(i RANGE ${last})
    string(JSON outcome GET "${doc}" fuzz findings ${i} outcome)
    string(JSON clause GET "${doc}" fuzz findings ${i} clause)
    if("${outcome} (${clause})" STREQUAL c)
      math(EXPR k "${k} + 1")
    endif()
  endforeach()
  string(APPEND by_class "\n  ${c}: ${k}")
endforeach()
message(STATUS "ur fuzz on ${target}, ${driver}: ${executions} executions in ${SECONDS} s (${rate}/s), "
               "${replaced} workers replaced, ${n} findings by class:${by_class}\nverdicts: ${verdicts}")
if(own_crash)
  message(FATAL_ERROR "ipcheck's own consumer died between inputs (not the runtime's open):${own_crash}")
endif()
if(untriaged)
  message(FATAL_ERROR "findings outside the classes triaged in reports/findings/ur-578c2a84/:${untriaged}")
endif()
