# CTest's package tests (label package; cmake/IpcheckPackage.cmake), one script, three steps:
#   STEP=deb      cpack -G DEB into SCRATCH/deb, check its control fields and its file list,
#                 unpack it with dpkg-deb -x into SCRATCH/root (the fixture's setup)
#   STEP=run      run the unpacked ipcheck from SCRATCH/root/usr/bin and check what it did
#   STEP=cleanup  remove SCRATCH (the fixture's cleanup: runs whether the others passed or not)
# cmake -DSTEP=... -DSCRATCH=DIR -DBUILD=DIR -DCPACK=cpack -DDPKG_DEB=dpkg-deb -DVERSION=X.Y.Z
#       -DSRC=<source folder> [-DWITH_ZE=ON] -P package_test.cmake
foreach(v STEP SCRATCH BUILD CPACK DPKG_DEB VERSION SRC)
  if(NOT DEFINED ${v} OR "${${v}}" STREQUAL "")
    message(FATAL_ERROR "package_test.cmake: -D${v}=... is missing")
  endif()
endforeach()
set(root "${SCRATCH}/root")
set(prefix "${root}/usr")

# run(OUT_VAR EXPECT_RC cmd...): runs cmd, fails naming it unless it exits EXPECT_RC; OUT_VAR
# gets standard output and error together.
function(run out_var expect_rc)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc STREQUAL "${expect_rc}")
    list(JOIN ARGN " " cmd)
    message(FATAL_ERROR "`${cmd}` exited ${rc}, expected ${expect_rc}:\n${out}")
  endif()
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

function(expect_text what text)
  foreach(want ${ARGN})
    string(FIND "${text}" "${want}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "${what} does not say '${want}':\n${text}")
    endif()
  endforeach()
endfunction()

# The installed programs must not reach into the build folder: no path of its programs, data
# or libraries in what they print or write.
function(expect_no_build_path what text)
  foreach(dir bin lib share)
    string(FIND "${text}" "${BUILD}/${dir}/" at)
    if(NOT at EQUAL -1)
      message(FATAL_ERROR "${what} names the build folder (${BUILD}/${dir}/), not the installed one:\n${text}")
    endif()
  endforeach()
endfunction()

if(STEP STREQUAL "cleanup")
  file(REMOVE_RECURSE "${SCRATCH}")
  if(EXISTS "${SCRATCH}")
    message(FATAL_ERROR "could not remove ${SCRATCH}")
  endif()
  return()
endif()

if(STEP STREQUAL "deb")
  file(REMOVE_RECURSE "${SCRATCH}")
  file(MAKE_DIRECTORY "${SCRATCH}/deb")
  # CPack's install step writes the build folder's install_manifest.txt: put back what was there.
  set(manifest "${BUILD}/install_manifest.txt")
  set(had_manifest OFF)
  if(EXISTS "${manifest}")
    file(READ "${manifest}" manifest_before)
    set(had_manifest ON)
  endif()
  execute_process(COMMAND "${CPACK}" -G DEB --config "${BUILD}/CPackConfig.cmake" -B "${SCRATCH}/deb"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(had_manifest)
    file(WRITE "${manifest}" "${manifest_before}")
  else()
    file(REMOVE "${manifest}")
  endif()
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "cpack -G DEB exited ${rc}:\n${out}")
  endif()
  file(GLOB debs "${SCRATCH}/deb/*.deb")
  list(LENGTH debs n)
  if(NOT n EQUAL 1)
    message(FATAL_ERROR "cpack made ${n} .deb files in ${SCRATCH}/deb, expected one:\n${out}")
  endif()
  get_filename_component(name "${debs}" NAME)
  if(NOT name MATCHES "^ipcheck_${VERSION}-[0-9]+_[a-z0-9]+\\.deb$")
    message(FATAL_ERROR "the package is named ${name}, expected ipcheck_${VERSION}-<release>_<arch>.deb")
  endif()

  # Control fields: Depends worked out by dpkg-shlibdeps (at least the C library), the loaders
  # the adapters open at run time as Recommends.
  run(control 0 "${DPKG_DEB}" --field "${debs}" Package Version Architecture Depends Recommends Suggests)
  expect_text("${name}'s control fields" "${control}" "Package: ipcheck" "Version: ${VERSION}-" "Depends: " "libc6"
              "Recommends: libze1, libvulkan1" "Suggests: ")

  # The file list: what ipcheck needs at run time, and nothing of the tests or the defect twins.
  run(list 0 "${DPKG_DEB}" --contents "${debs}")
  set(want ./usr/bin/ipcheck ./usr/bin/ipcheck-bench-cuda-floor ./usr/bin/ipcheck-bench-ur-floor ./usr/lib/ipcheck/ipcheck-role ./usr/lib/ipcheck/ipcheck-role-shared
           ./usr/lib/ipcheck/ipcheck-bench-ipc ./usr/lib/ipcheck/ipcheck-bench-harness ./usr/lib/ipcheck/ipcheck-bench-peer
           ./usr/lib/ipcheck/ipcheck-bench-count
           ./usr/share/ipcheck/expectations/ref.txt ./usr/share/ipcheck/expectations/vk.txt
           ./usr/share/ipcheck/baselines/ref-${VERSION}.json ./usr/share/doc/ipcheck/README.md
           ./usr/share/doc/ipcheck/SECURITY.md ./usr/share/doc/ipcheck/SCHEMA.md)
  # Every page of docs/ (the user guide the README links, ARCHITECTURE.md, SPEC-CLAUSES.md).
  file(GLOB pages RELATIVE ${SRC}/docs ${SRC}/docs/*.md)
  if(NOT pages)
    message(FATAL_ERROR "no docs/*.md under ${SRC}")
  endif()
  foreach(page ${pages})
    list(APPEND want ./usr/share/doc/ipcheck/docs/${page})
  endforeach()
  if(WITH_ZE)
    list(APPEND want ./usr/lib/ipcheck/libze_ipcheck.so.1)
  endif()
  foreach(f ${want})
    if(NOT list MATCHES " ${f}( |\n|$)")
      message(FATAL_ERROR "${name} lacks ${f}:\n${list}")
    endif()
  endforeach()
  foreach(bad "defects" "selftest" "_test" "/include/" "\\.a\n" "\\.cmake\n" "libze_ipcheck\\.so\n")
    if(list MATCHES "${bad}")
      message(FATAL_ERROR "${name} holds a file it must not (matching '${bad}'):\n${list}")
    endif()
  endforeach()

  run(out 0 "${DPKG_DEB}" -x "${debs}" "${root}")
  message(STATUS "${name}: unpacked into ${root}\n${control}")
  return()
endif()

if(NOT STEP STREQUAL "run")
  message(FATAL_ERROR "package_test.cmake: STEP is '${STEP}'; use deb, run or cleanup")
endif()

set(ipcheck "${prefix}/bin/ipcheck")
if(NOT EXISTS "${ipcheck}")
  message(FATAL_ERROR "${ipcheck} is not there: the package:deb step did not unpack the package")
endif()

# The programs carry no RPATH into the build folder (CMake drops the build's at install).
find_program(READELF readelf)
if(READELF)
  file(GLOB elves "${prefix}/bin/*" "${prefix}/lib/ipcheck/*")
  foreach(f ${elves})
    run(dyn 0 "${READELF}" -d "${f}")
    if(dyn MATCHES "R(UN)?PATH")
      message(FATAL_ERROR "${f} has an RPATH or RUNPATH:\n${dyn}")
    endif()
  endforeach()
endif()

# The catalog and the installed data.
run(out 0 "${ipcheck}" list)
expect_text("ipcheck list" "${out}" "memory.roundtrip.page" "event.roundtrip")
run(out 0 "${ipcheck}" list --expectations --adapter vk)
expect_text("ipcheck list --expectations --adapter vk" "${out}" "${prefix}/share/ipcheck/expectations/vk.txt")
expect_no_build_path("ipcheck list --expectations" "${out}")

# A short run on ref: every case passes, judged with the installed expectations file.
set(cases memory.roundtrip.page event.roundtrip robustness.open.garbage.memory)
set(filters "")
foreach(c ${cases})
  list(APPEND filters --filter ${c})
endforeach()
set(out_dir "${SCRATCH}/run-ref")
run(out 0 "${ipcheck}" run --adapter ref ${filters} --exact -j 2 --out "${out_dir}")
expect_text("ipcheck run" "${out}" "expectations: ${prefix}/share/ipcheck/expectations/ref.txt" "${out_dir}/results.json")
file(READ "${out_dir}/results.json" json)
expect_no_build_path("ipcheck run's output" "${out}")
expect_no_build_path("${out_dir}/results.json" "${json}")
string(JSON n LENGTH "${json}" cases)
list(LENGTH cases want_n)
if(NOT n EQUAL want_n)
  message(FATAL_ERROR "the run has ${n} cases, expected ${want_n} (${cases}):\n${out}")
endif()
# The roles ran as the installed role program (lib/ipcheck/ipcheck-role), not as ipcheck.
string(JSON role_program GET "${json}" run runner role_program)
if(NOT role_program STREQUAL "ipcheck-role")
  message(FATAL_ERROR "the run's roles ran as '${role_program}', expected the installed ipcheck-role:\n${out}")
endif()
math(EXPR last "${n} - 1")
foreach(i RANGE ${last})
  string(JSON id GET "${json}" cases ${i} id)
  string(JSON status GET "${json}" cases ${i} status)
  if(NOT status STREQUAL "pass")
    message(FATAL_ERROR "${id} is ${status} when run from the package, expected pass:\n${out}")
  endif()
endforeach()

# The installed baseline is one `ipcheck report diff` reads: no regression in these cases.
run(diff 0 "${ipcheck}" report diff "${prefix}/share/ipcheck/baselines/ref-${VERSION}.json" "${out_dir}/results.json")
expect_text("ipcheck report diff against the installed baseline" "${diff}" "0 regressions")

# The bench programs `ipcheck bench` starts are found in lib/ipcheck (a smoke run of two).
set(bench_dir "${SCRATCH}/bench-ref")
run(out 0 "${ipcheck}" bench --adapter ref --brief --parts ipc,harness --filter "mem_open_close/4KiB|two_role_case"
    --out "${bench_dir}")
expect_no_build_path("ipcheck bench's output" "${out}")
file(READ "${bench_dir}/results.json" bench)
string(JSON programs GET "${bench}" bench context programs)
expect_text("the bench section's programs" "${programs}" "ipcheck-bench-ipc" "ipcheck-bench-harness")

# Our Level Zero driver, installed in lib/ipcheck, through the system loader.
if(WITH_ZE)
  set(ze_dir "${SCRATCH}/run-ze")
  execute_process(COMMAND ${CMAKE_COMMAND} -E env "ZE_ENABLE_ALT_DRIVERS=${prefix}/lib/ipcheck/libze_ipcheck.so.1"
                          "${ipcheck}" run --adapter ze --filter memory.roundtrip.page --exact --out "${ze_dir}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "ipcheck run --adapter ze with the installed libze_ipcheck exited ${rc}:\n${out}")
  endif()
  file(READ "${ze_dir}/results.json" json)
  string(JSON status GET "${json}" cases 0 status)
  string(JSON driver GET "${json}" run driver name)
  if(NOT status STREQUAL "pass")
    message(FATAL_ERROR "ze: memory.roundtrip.page is ${status} with the installed driver:\n${out}")
  endif()
  message(STATUS "ze through the installed libze_ipcheck: ${driver}: pass")
endif()
message(STATUS "the package's ipcheck ran from ${prefix}: ${want_n} ref cases pass, bench programs found")
