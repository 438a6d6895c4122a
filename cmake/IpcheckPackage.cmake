# What `cmake --install` lays out under a prefix (the layout: cmake/IpcheckLayout.cmake), the
# Debian package CPack makes of it, and the CTest that installs that package into a scratch
# root and runs ipcheck from there. Included by the top level once every target exists.
#
#   cmake --install build --prefix /opt/ipcheck       # or: (cd build && cpack -G DEB)
#
# Only what users run and what ipcheck execs, loads or reads at run time is installed: never
# the test programs, the seeded-defect twins (ipcheck-defects, libze_ipcheck_defects) or
# anything of the build's tests.

install(TARGETS ipcheck RUNTIME DESTINATION ${IPCHECK_INSTALL_BINDIR})
# Programs users run by hand (bench/README.md): the floors of a parallel CUDA campaign and of
# a ur campaign.
foreach(_t ipcheck-bench-cuda-floor ipcheck-bench-ur-floor)
  if(TARGET ${_t})
    install(TARGETS ${_t} RUNTIME DESTINATION ${IPCHECK_INSTALL_BINDIR})
  endif()
endforeach()
# What ipcheck execs for its roles, and what `ipcheck bench` starts (found beside ipcheck, or
# in lib/ipcheck: install_layout.cpp).
foreach(_t ipcheck-role ipcheck-role-shared ipcheck-bench-ipc ipcheck-bench-harness ipcheck-bench-peer ipcheck-bench-count)
  if(TARGET ${_t})
    install(TARGETS ${_t} RUNTIME DESTINATION ${IPCHECK_INSTALL_PKGLIBDIR})
  endif()
endforeach()
# Our Level Zero driver over ref, for the `ze` adapter without an Intel GPU: the loader opens
# it by path (ZE_ENABLE_ALT_DRIVERS=<prefix>/lib/ipcheck/libze_ipcheck.so.1), so it stays out
# of the library path, and nothing links it (no development symlink).
if(TARGET ze_ipcheck)
  install(TARGETS ze_ipcheck LIBRARY DESTINATION ${IPCHECK_INSTALL_PKGLIBDIR} NAMELINK_SKIP)
endif()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/cases/expectations/ DESTINATION ${IPCHECK_INSTALL_DATADIR}/expectations
        FILES_MATCHING PATTERN "*.txt")
# The committed reference runs and their explanations (not the CMake scripts that check them).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/reports/baselines/ DESTINATION ${IPCHECK_INSTALL_DATADIR}/baselines
        FILES_MATCHING PATTERN "*.json" PATTERN "*.md" PATTERN "*.txt")
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/SECURITY.md ${PROJECT_SOURCE_DIR}/CONTRIBUTING.md
              ${PROJECT_SOURCE_DIR}/reports/SCHEMA.md ${PROJECT_SOURCE_DIR}/reports/STORE.md
        DESTINATION ${IPCHECK_INSTALL_DOCDIR})
# The user guide and the design pages in docs/ beside the README, as in the tree, so the
# README's links (docs/running.md, ...) hold in the installed copy too.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${IPCHECK_INSTALL_DOCDIR}/docs FILES_MATCHING PATTERN "*.md")

# The Debian package: ipcheck_<version>-<release>_<arch>.deb, installed under /usr.
set(IPCHECK_PACKAGE_CONTACT "ipcheck maintainers <maintainers@users.noreply.a-seed-97092aec.example>"
    CACHE STRING "The Debian package's Maintainer field (a farm that builds its own package names itself)")
set(IPCHECK_PACKAGE_RELEASE "1" CACHE STRING "The Debian revision of the package (the part after the version's dash)")
set(CPACK_GENERATOR DEB)
set(CPACK_SOURCE_GENERATOR "")
set(CPACK_PACKAGE_NAME ipcheck)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${IPCHECK_PACKAGE_CONTACT}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "${PROJECT_DESCRIPTION}\n"
    "Runs conformance cases, fuzz campaigns and benchmarks of GPU inter-process\n"
    "communication (memory, physical-memory and event handles) against Level Zero,\n"
    "CUDA, Vulkan or its own reference implementation, each role in a fresh process,\n"
    "and writes results.json with Markdown, HTML and JUnit reports, diffs, history\n"
    "and a results store (an SQLite file, or a PostgreSQL database many machines\n"
    "add to at once).")
set(CPACK_DEBIAN_PACKAGE_RELEASE "${IPCHECK_PACKAGE_RELEASE}")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# Depends: worked out from the binaries by dpkg-shlibdeps (libc6, libsqlite3-0, libpq5, ...).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# What the adapters open at run time (dlopen), which dpkg-shlibdeps cannot see. Recommends:
# the Level Zero loader (ze) and the Vulkan loader (vk). Suggests: drivers for them and
# NVIDIA's libcuda (cuda); Mesa's lavapipe (a Vulkan driver on the CPU) and the Khronos
# validation layer. Without any of them ipcheck runs, and those adapters' cases skip with the
# reason.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libze1, libvulkan1")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS
    "libze-intel-gpu1 | intel-level-zero-gpu, libcuda1, mesa-vulkan-drivers, vulkan-validationlayers")
# Debian ships stripped programs; fast to build and install.
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_COMPRESSION_TYPE gzip)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)

# CTest (label package): `cpack` once (fixture), the .deb unpacked with `dpkg-deb -x` into a
# scratch root, then ipcheck run from there; the scratch folder is removed at the end, pass or
# fail. Not in sanitizer builds (a package of sanitized programs means nothing).
find_program(IPCHECK_DPKG_DEB dpkg-deb)
if(NOT IPCHECK_SANITIZE AND IPCHECK_DPKG_DEB)
  set(_scratch "${CMAKE_BINARY_DIR}/package-test")
  set(_script "${PROJECT_SOURCE_DIR}/cmake/package_test.cmake")
  set(_common -DSCRATCH=${_scratch} -DBUILD=${CMAKE_BINARY_DIR} -DCPACK=${CMAKE_CPACK_COMMAND}
              -DDPKG_DEB=${IPCHECK_DPKG_DEB} -DVERSION=${PROJECT_VERSION} -DSRC=${PROJECT_SOURCE_DIR} -P ${_script})
  if(TARGET ze_ipcheck AND ZE_LOADER_LIBRARY)
    list(PREPEND _common -DWITH_ZE=ON)  # the driver is packaged, and the loader is here to load it
  endif()
  add_test(NAME package:deb COMMAND ${CMAKE_COMMAND} -DSTEP=deb ${_common})
  add_test(NAME package:installed-run COMMAND ${CMAKE_COMMAND} -DSTEP=run ${_common})
  add_test(NAME package:cleanup COMMAND ${CMAKE_COMMAND} -DSTEP=cleanup ${_common})
  set_tests_properties(package:deb PROPERTIES FIXTURES_SETUP ipcheck_package LABELS package TIMEOUT 300)
  set_tests_properties(package:installed-run PROPERTIES FIXTURES_REQUIRED ipcheck_package LABELS package TIMEOUT 300)
  set_tests_properties(package:cleanup PROPERTIES FIXTURES_CLEANUP ipcheck_package LABELS package TIMEOUT 60)
endif()
