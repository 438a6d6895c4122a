# ipcheck_add_case_tests(ADAPTER name [SUFFIX s] [ENVIRONMENT k=v...] [LABELS l...] [ARGS a...])
#
# A value may hold semicolons when quoted: ENVIRONMENT "IPCHECK_REF_DEVICES=ref0=all;ref1=none"
# is one variable (arguments are parsed with PARSE_ARGV, which keeps them escaped).
#
# Registers one CTest test per (case, adapter): "<adapter><suffix>:<case id>", labelled
# "cases;<area>;<adapter>" plus LABELS. The list comes from `ipcheck list --format json`
# when ctest reads the tests (listing never loads a GPU runtime). A case that skips
# (no driver, no aspect) reports as skipped with its reason in the output. Each writes its
# results to <build>/ctest-results/<adapter><suffix>/<case id>, or under
# $IPCHECK_CASE_TESTS_OUT when ctest runs with that variable set.
#
# GPU adapters (cuda, ze) ask CTest for one GPU per test (RESOURCE_GROUPS "gpus:1"): with
# `ctest --resource-spec-file spec.json` (`ipcheck info --resource-spec > spec.json`) tests run
# side by side on distinct GPUs, and `ipcheck run --ctest-resources` gives every role of the
# case only its GPU (CUDA_VISIBLE_DEVICES, ZE_AFFINITY_MASK). Without a spec file CTest ignores
# the groups and nothing changes.
function(ipcheck_add_case_tests)
  cmake_parse_arguments(PARSE_ARGV 0 A "" "ADAPTER;SUFFIX" "ENVIRONMENT;LABELS;ARGS")
  set(name "${A_ADAPTER}${A_SUFFIX}")
  set(out_dir "${CMAKE_BINARY_DIR}/ctest-results/${name}")
  set(env "${A_ENVIRONMENT}")
  set(labels cases ${A_ADAPTER} ${A_LABELS})
  set(resources "")
  if(A_ADAPTER STREQUAL "cuda" OR A_ADAPTER STREQUAL "ze")
    list(APPEND A_ARGS --ctest-resources)
    set(resources "RESOURCE_GROUPS gpus:1")
  endif()
  list(JOIN A_ARGS " " extra)
  set(script "${CMAKE_BINARY_DIR}/ctest/ipcheck-${name}.cmake")
  file(GENERATE OUTPUT "${script}" CONTENT "
execute_process(COMMAND \"$<TARGET_FILE:ipcheck>\" list --format json
                OUTPUT_VARIABLE cases RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  add_test(\"${name}:list\" \"$<TARGET_FILE:ipcheck>\" list --format json)
  return()
endif()
string(JSON n LENGTH \"\${cases}\")
if(n EQUAL 0)
  return()
endif()
math(EXPR last \"\${n} - 1\")
set(out \"${out_dir}\")
if(DEFINED ENV{IPCHECK_CASE_TESTS_OUT})
  set(out \"\$ENV{IPCHECK_CASE_TESTS_OUT}/${name}\")
endif()
foreach(i RANGE \${last})
  string(JSON id GET \"\${cases}\" \${i} id)
  string(JSON area GET \"\${cases}\" \${i} area)
  add_test(\"${name}:\${id}\" \"$<TARGET_FILE:ipcheck>\" run --adapter ${A_ADAPTER} --filter \${id} --exact
           --quiet --skip-exit-code 77 --out \"\${out}/\${id}\" ${extra})
  set_tests_properties(\"${name}:\${id}\" PROPERTIES LABELS \"${labels};\${area}\" SKIP_RETURN_CODE 77
                       TIMEOUT 600 ENVIRONMENT \"${env}\" ${resources})
endforeach()
")
  set_property(DIRECTORY "${CMAKE_SOURCE_DIR}" APPEND PROPERTY TEST_INCLUDE_FILES "${script}")
endfunction()
