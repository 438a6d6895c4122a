# For scripts run with `cmake -P` (the baseline checks and refreshes, the fuzz checks): sets
# the environment their ipcheck runs in from ENV_VARS, "KEY=VALUE@@KEY=VALUE" (a driver to
# load, a layer to switch on); nothing when it is empty or not defined.
if(DEFINED ENV_VARS AND NOT ENV_VARS STREQUAL "")
  string(REPLACE "@@" ";" _env "${ENV_VARS}")
  foreach(kv ${_env})
    string(FIND "${kv}" "=" eq)
    string(SUBSTRING "${kv}" 0 ${eq} k)
    math(EXPR eq "${eq} + 1")
    string(SUBSTRING "${kv}" ${eq} -1 v)
    set(ENV{${k}} "${v}")
  endforeach()
endif()
