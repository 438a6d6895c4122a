# Usage errors of `ipcheck fuzz` exit 2 and name the option, the value and the fix (cmake -P).
function(expect_usage pattern)
  execute_process(COMMAND "${IPCHECK}" fuzz ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 2 OR NOT err MATCHES "${pattern}")
    message(FATAL_ERROR "ipcheck fuzz ${ARGN}: expected exit 2 and '${pattern}', got exit ${rc}: ${out}${err}")
  endif()
endfunction()
expect_usage("--time S or --runs N" --adapter ref)
expect_usage("--time S or --runs N" --adapter ref --time 1 --runs 5)
expect_usage("option '--runs' is 'x'" --adapter ref --runs x)
expect_usage("--adapter is 'nope'; use one of" --adapter nope --time 1)
expect_usage("--stop-on is 'mapped'" --adapter ref --time 1 --stop-on mapped)
expect_usage("cannot read reproducer" --replay /nonexistent.repro)
expect_usage("--transport is 'carrier-pigeon'" --adapter ref --time 1 --transport carrier-pigeon)
expect_usage("--target is 'events'; give memory .memory handles., physical .physical-memory handles. or event" --adapter ref --time 1 --target events)
# A reproducer file never names a library to load (cuda's `library`, vk's and ur's `loader`):
# hostile:replay-library replays one of each and checks nothing was loaded.
