# ipcheck_gtest_properties(<target> LABELS <label>... [TIMEOUT <seconds>] [TEST_LIST <var>])
#
# Gives every test that gtest_discover_tests(<target> ...) discovers all of LABELS and the
# TIMEOUT; call it after that gtest_discover_tests, in the same directory. Not through
# gtest_discover_tests's PROPERTIES: it hands them on as a flat list, so LABELS "a;b"
# TIMEOUT 120 arrives as LABELS a and the rest as properties named b and 120 (the tests keep
# the label a only, and no timeout), and no escape survives the trip. Instead CTest reads a
# script after the discovered tests (TEST_INCLUDE_FILES, in the order they were added) that
# sets both on the tests in the discovery's TEST_LIST (<target>_TESTS unless given). A target
# not built yet has no list: its <target>_NOT_BUILT placeholder is left as it is.
function(ipcheck_gtest_properties target)
  cmake_parse_arguments(PARSE_ARGV 1 A "" "TIMEOUT;TEST_LIST" "LABELS")
  if(NOT A_LABELS OR A_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "usage: ipcheck_gtest_properties(${target} LABELS <label>... [TIMEOUT <seconds>] [TEST_LIST <var>])")
  endif()
  get_property(includes DIRECTORY PROPERTY TEST_INCLUDE_FILES)
  if(NOT includes MATCHES "/${target}\\[[0-9]+\\]_include\\.cmake")
    message(FATAL_ERROR "ipcheck_gtest_properties(${target}): call it after gtest_discover_tests(${target} ...)")
  endif()
  set(test_list "${target}_TESTS")
  if(A_TEST_LIST)
    set(test_list "${A_TEST_LIST}")
  endif()
  set(properties "LABELS \"${A_LABELS}\"")
  if(A_TIMEOUT)
    string(APPEND properties " TIMEOUT ${A_TIMEOUT}")
  endif()
  set(script "${CMAKE_CURRENT_BINARY_DIR}/${target}_properties.cmake")
  file(WRITE "${script}" "if(${test_list})\n  set_tests_properties(\${${test_list}} PROPERTIES ${properties})\nendif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${script}")
endfunction()
