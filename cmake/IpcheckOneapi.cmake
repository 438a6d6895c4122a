# Intel's released oneAPI runtime that `ci/oneapi-stack` installs from ci/oneapi-releases.lock
# (libsycl, the UR loader and its Level Zero adapters, UMF, dpctl's libsyclinterface; one folder
# per release) and links as build/oneapi. IPCHECK_ONEAPI names that folder; empty (not
# installed) leaves out the tests that need the releases (labels sycl, ur-release), which then
# say so in one test that skips. The `sycl` adapter and `ur`'s release= option are always
# built: they open the libraries at run time.
set(IPCHECK_ONEAPI "" CACHE PATH "Folder of the oneAPI releases ci/oneapi-stack installed (default: build/oneapi when present)")
set(IPCHECK_ONEAPI_PREFIX "${IPCHECK_ONEAPI}")
if(NOT IPCHECK_ONEAPI_PREFIX AND EXISTS "${PROJECT_SOURCE_DIR}/build/oneapi/complete")
  set(IPCHECK_ONEAPI_PREFIX "${PROJECT_SOURCE_DIR}/build/oneapi")
endif()
set(IPCHECK_ONEAPI_RELEASES "")
if(IPCHECK_ONEAPI_PREFIX)
  file(REAL_PATH "${IPCHECK_ONEAPI_PREFIX}" IPCHECK_ONEAPI_PREFIX)
  file(STRINGS "${PROJECT_SOURCE_DIR}/ci/oneapi-releases.lock" _oneapi_rows REGEX "^[0-9]")
  foreach(_row IN LISTS _oneapi_rows)
    string(REGEX REPLACE "\\|.*" "" _rel "${_row}")
    if(NOT _rel IN_LIST IPCHECK_ONEAPI_RELEASES)
      if(NOT EXISTS "${IPCHECK_ONEAPI_PREFIX}/${_rel}/RELEASE.txt")
        message(FATAL_ERROR "IPCHECK_ONEAPI=${IPCHECK_ONEAPI_PREFIX} lacks release ${_rel} of the lock: run ci/oneapi-stack, or clear IPCHECK_ONEAPI")
      endif()
      list(APPEND IPCHECK_ONEAPI_RELEASES "${_rel}")
    endif()
  endforeach()
  message(STATUS "oneAPI releases: ${IPCHECK_ONEAPI_RELEASES} in ${IPCHECK_ONEAPI_PREFIX}")
else()
  message(STATUS "oneAPI releases: not installed (ci/oneapi-stack installs them); the sycl and ur-release tests are left out")
endif()
