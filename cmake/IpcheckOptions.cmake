# Warnings and sanitizers for ipcheck's own targets: link `ipcheck::options`.
add_library(ipcheck_options INTERFACE)
add_library(ipcheck::options ALIAS ipcheck_options)
target_compile_options(ipcheck_options INTERFACE -Wall -Wextra -Werror)
if(IPCHECK_SANITIZE AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  # GCC 12 at -O1 with sanitizers warns of maybe-uninitialized members inside <regex> and
  # <functional> (false positives in the standard library); the default build keeps the warning.
  target_compile_options(ipcheck_options INTERFACE -Wno-maybe-uninitialized)
endif()

if(CMAKE_UNITY_BUILD AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  # A unity build (the asan preset's: it compiles a target's sources a few to a translation
  # unit) includes each .cpp, so GCC takes a test fixture in an anonymous namespace for one
  # in a header; the warning means nothing there, and the default build keeps it.
  target_compile_options(ipcheck_options INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Wno-subobject-linkage>)
endif()

if(IPCHECK_SANITIZE)
  # Applied globally so that every object (ours and the test framework glue) agrees.
  add_compile_options(-fsanitize=${IPCHECK_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${IPCHECK_SANITIZE})
endif()

# Version string compiled into the tools: the project version and `git describe`, refreshed
# on every build (not only at configure time) in <build>/generated/ipcheck_version.h.
# A target that prints the version calls ipcheck_use_version(target).
set(IPCHECK_VERSION_HEADER "${CMAKE_BINARY_DIR}/generated/ipcheck_version.h")
find_package(Git QUIET)  # once, here: the script below runs on every build
set(_ipcheck_version_cmd "${CMAKE_COMMAND}" "-DSRC=${PROJECT_SOURCE_DIR}" "-DBASE=${PROJECT_VERSION}"
    "-DGIT_EXECUTABLE=${GIT_EXECUTABLE}"
    "-DOUT=${IPCHECK_VERSION_HEADER}" -P "${CMAKE_CURRENT_LIST_DIR}/WriteVersion.cmake")
execute_process(COMMAND ${_ipcheck_version_cmd})
add_custom_target(ipcheck_version_header COMMAND ${_ipcheck_version_cmd}
                  BYPRODUCTS "${IPCHECK_VERSION_HEADER}" COMMENT "" VERBATIM)
function(ipcheck_use_version target)
  add_dependencies(${target} ipcheck_version_header)
  target_include_directories(${target} PRIVATE "${CMAKE_BINARY_DIR}/generated")
endfunction()

# For executables that the harness starts by the hundred (every role of every case, every
# fuzz worker): libstdc++ and libgcc linked in, so that a process does not spend its start
# loading and binding them (bench: a two-role case took a fifth less CPU). Not with
# sanitizers, whose runtimes expect the shared C++ library.
add_library(ipcheck_fast_start INTERFACE)
add_library(ipcheck::fast_start ALIAS ipcheck_fast_start)
if(NOT IPCHECK_SANITIZE AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  target_link_options(ipcheck_fast_start INTERFACE -static-libstdc++ -static-libgcc)
endif()
