# What the export_c checks share (check_export_c.cmake, check_export_c_ur.cmake): export a
# finding and build it (export_ok: the program's text in `text`), look for a line in it, and
# expect an export refused with its reason (export_refused: exit 2, nothing written).
# Needs IPCHECK, OUT and CC set by the including script.

function(export_ok name finding)
  execute_process(COMMAND "${IPCHECK}" fuzz --export-c "${finding}" -o "${OUT}/${name}.c" ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "export of ${finding} failed (exit ${rc}): ${out}${err}")
  endif()
  execute_process(COMMAND "${CC}" -std=c11 -Wall -Wextra -Werror -o "${OUT}/${name}" "${OUT}/${name}.c" -ldl
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${OUT}/${name}.c does not compile:\n${out}${err}")
  endif()
  file(READ "${OUT}/${name}.c" text)
  set(text "${text}" PARENT_SCOPE)
endfunction()

function(expect_in text what)
  string(FIND "${text}" "${what}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the exported program lacks '${what}'")
  endif()
endfunction()

function(export_refused finding reason)
  execute_process(COMMAND "${IPCHECK}" fuzz --export-c "${finding}" -o "${OUT}/refused.c" ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 2 OR NOT "${out}${err}" MATCHES "${reason}")
    message(FATAL_ERROR "export of ${finding} should be refused (exit 2, '${reason}'); got exit ${rc}: ${out}${err}")
  endif()
  if(EXISTS "${OUT}/refused.c")
    message(FATAL_ERROR "a refused export wrote ${OUT}/refused.c")
  endif()
endfunction()
