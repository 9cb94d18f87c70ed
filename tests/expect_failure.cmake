# expect_failure.cmake - run CMD (a ;-list), and pass only if it exits with
# status RC and its output matches REGEX: a failing command that fails for
# the wrong reason (a crash, a usage error) does not count.  ATTEMPTS (default
# 1) runs it up to that many times and passes on the first expected failure:
# for a fault that only shows when threads overlap, which a loaded machine
# may not let them do in one short run.
if(NOT ATTEMPTS)
  set(ATTEMPTS 1)
endif()
foreach(attempt RANGE 1 ${ATTEMPTS})
  execute_process(COMMAND ${CMD} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message(STATUS "attempt ${attempt}: exit ${rc}\n${out}${err}")
  if(rc STREQUAL "${RC}" AND "${out}${err}" MATCHES "${REGEX}")
    return()
  endif()
endforeach()
if(NOT rc STREQUAL "${RC}")
  message(FATAL_ERROR "expected exit status ${RC}, got ${rc}")
endif()
message(FATAL_ERROR "output does not match '${REGEX}'")
