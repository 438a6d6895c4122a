# The real Unified Runtime stack that `ci/ur-stack` builds from pinned sources (the Level Zero
# loader 1.32 with its layers, UMF, the UR loader and UR's adapters) and links as
# build/ur-stack. IPCHECK_UR_STACK names its prefix; empty (the stack was not built) leaves out
# the tests that need it: the `ur` adapter's catalog and the `ze` catalog through the 1.32
# loader. The `ur` adapter itself is always built: it opens libur_loader.so.0 at run time.
set(IPCHECK_UR_STACK "" CACHE PATH "Prefix of the Unified Runtime stack built by ci/ur-stack (default: build/ur-stack when present)")
set(IPCHECK_UR_STACK_PREFIX "${IPCHECK_UR_STACK}")
if(NOT IPCHECK_UR_STACK_PREFIX AND EXISTS "${PROJECT_SOURCE_DIR}/build/ur-stack/lib/libur_loader.so.0")
  set(IPCHECK_UR_STACK_PREFIX "${PROJECT_SOURCE_DIR}/build/ur-stack")
endif()
if(IPCHECK_UR_STACK_PREFIX)
  foreach(_f lib/libur_loader.so.0 lib/libze_loader.so.1 lib/libumf.so.1 include/unified-runtime/ur_api.h)
    if(NOT EXISTS "${IPCHECK_UR_STACK_PREFIX}/${_f}")
      message(FATAL_ERROR "IPCHECK_UR_STACK=${IPCHECK_UR_STACK_PREFIX} lacks ${_f}: run ci/ur-stack, or clear IPCHECK_UR_STACK")
    endif()
  endforeach()
  file(REAL_PATH "${IPCHECK_UR_STACK_PREFIX}" IPCHECK_UR_STACK_PREFIX)
  message(STATUS "Unified Runtime stack: ${IPCHECK_UR_STACK_PREFIX}")
else()
  message(STATUS "Unified Runtime stack: not built (ci/ur-stack builds it); the ur and ze-1.32 tests are left out")
endif()
