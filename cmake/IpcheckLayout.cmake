# Where ipcheck's files go under an install prefix (FHS), and the same relative places in
# the build folder, so that ipcheck finds what travels with it from its own executable
# (/proc/self/exe; harness/src/install_layout.cpp), built or installed, wherever the prefix:
#
#   bin/                ipcheck, and ipcheck-bench-cuda-floor (a program users run)
#   lib/ipcheck/        what ipcheck execs or a loader loads, never on PATH: the bench
#                       programs `ipcheck bench` starts, libze_ipcheck.so.1 (the Level Zero
#                       driver over ref, for ZE_ENABLE_ALT_DRIVERS)
#   share/ipcheck/      data: expectations/ (read by default by `ipcheck run` and `list`),
#                       baselines/ (the committed reference runs, for `ipcheck report diff`)
#   share/doc/ipcheck/  README.md, SECURITY.md, CONTRIBUTING.md, the reports' SCHEMA.md and
#                       STORE.md, and docs/ (the user guide, ARCHITECTURE.md, SPEC-CLAUSES.md)
#
# In the build folder: bin/ holds every program (the lookup tries beside ipcheck first, then
# lib/ipcheck/), lib/ the libraries, share/ipcheck/expectations/ the expectations.
# Install rules and the Debian package: cmake/IpcheckPackage.cmake.
set(IPCHECK_INSTALL_BINDIR bin)
set(IPCHECK_INSTALL_PKGLIBDIR lib/ipcheck)
set(IPCHECK_INSTALL_DATADIR share/ipcheck)
set(IPCHECK_INSTALL_DOCDIR share/doc/ipcheck)
# The build folder's programs are in <build>/bin: one level down, as in the prefix.
if(NOT CMAKE_RUNTIME_OUTPUT_DIRECTORY STREQUAL "${CMAKE_BINARY_DIR}/${IPCHECK_INSTALL_BINDIR}")
  message(FATAL_ERROR "ipcheck's layout expects its programs in <build>/${IPCHECK_INSTALL_BINDIR}")
endif()
# From bin/ to the others, as compiled into ipcheck (install_layout.cpp).
file(RELATIVE_PATH IPCHECK_REL_PKGLIBDIR "/p/${IPCHECK_INSTALL_BINDIR}" "/p/${IPCHECK_INSTALL_PKGLIBDIR}")
file(RELATIVE_PATH IPCHECK_REL_DATADIR "/p/${IPCHECK_INSTALL_BINDIR}" "/p/${IPCHECK_INSTALL_DATADIR}")
