# Warnings and sanitizers for ipcheck's own targets: link `ipcheck::options`.
add_library(ipcheck_options INTERFACE)
add_library(ipcheck::options ALIAS ipcheck_options)
target_compile_options(ipcheck_options INTERFACE -Wall -Wextra -Werror)

if(IPCHECK_SANITIZE)
  # Applied globally so that every object (ours and the test framework glue) agrees.
  add_compile_options(-fsanitize=${IPCHECK_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${IPCHECK_SANITIZE})
endif()

# Version string compiled into the tools; git describe when available.
find_package(Git QUIET)
set(IPCHECK_VERSION_STRING "${PROJECT_VERSION}")
if(GIT_FOUND AND EXISTS "${PROJECT_SOURCE_DIR}/.git")
  execute_process(COMMAND "${GIT_EXECUTABLE}" describe --always --dirty --tags
                  WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}"
                  OUTPUT_VARIABLE _ipcheck_git OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(_ipcheck_git)
    set(IPCHECK_VERSION_STRING "${PROJECT_VERSION}+${_ipcheck_git}")
  endif()
endif()

# For executables that the harness starts by the hundred (every role of every case, every
# fuzz worker): libstdc++ and libgcc linked in, so that a process does not spend its start
# loading and binding them (bench: a two-role case took a fifth less CPU). Not with
# sanitizers, whose runtimes expect the shared C++ library.
add_library(ipcheck_fast_start INTERFACE)
add_library(ipcheck::fast_start ALIAS ipcheck_fast_start)
if(NOT IPCHECK_SANITIZE AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  target_link_options(ipcheck_fast_start INTERFACE -static-libstdc++ -static-libgcc)
endif()
