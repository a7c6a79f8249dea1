# after_failed_run.cmake - the tests' temporary directory is judged by the run it is in.
#
#   cmake -DCTEST=<ctest> -DPROJECT=<tests/tmp/project> -DWORK=<scratch dir> -P after_failed_run.cmake
#
# Configures the fixture project in WORK and runs its tests three times:
#   ctest -R worker   a partial run of a new tree: passes
#   ctest             leak.fails fails and leaves a directory in TMPDIR: tmp.left_nothing fails,
#                     naming that directory and nothing else
#   ctest -R worker   the partial run after the failed one: passes, tmp.left_nothing with it
# WORK is removed when all went as said.
file(REMOVE_RECURSE "${WORK}")
execute_process(COMMAND "${CMAKE_COMMAND}" -S "${PROJECT}" -B "${WORK}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cannot configure the fixture project:\n${out}")
endif()

# _kt_ctest(<name> <want: pass|fail> <ctest arguments>...): runs ctest in WORK; sets out.
function(_kt_ctest name want)
  execute_process(COMMAND "${CTEST}" --output-on-failure ${ARGN} WORKING_DIRECTORY "${WORK}"
    RESULT_VARIABLE rc OUTPUT_VARIABLE text ERROR_VARIABLE text)
  list(JOIN ARGN " " args)
  message(STATUS "${name}: ctest ${args}: exit status ${rc}")
  if((want STREQUAL "pass") AND NOT rc EQUAL 0 OR (want STREQUAL "fail") AND rc EQUAL 0)
    message(FATAL_ERROR "${name}: ctest ${args} should ${want}:\n${text}")
  endif()
  set(out "${text}" PARENT_SCOPE)
endfunction()

# _kt_expect(<name> <regex>): out matches regex.
function(_kt_expect name regex)
  if(NOT out MATCHES "${regex}")
    message(FATAL_ERROR "${name}: no match for '${regex}' in:\n${out}")
  endif()
endfunction()

_kt_ctest("partial run" pass -R worker)
_kt_expect("partial run" "tmp[.]left_nothing [.]+ +Passed")

_kt_ctest("failed run" fail)
_kt_expect("failed run" "leak[.]fails [.]+[*]+Failed")
_kt_expect("failed run" "tmp[.]left_nothing [.]+[*]+Failed")
_kt_expect("failed run" "left these behind in.*/scratch-leak-")
if(out MATCHES "scratch-tidy")
  message(FATAL_ERROR "failed run: a tidy test's scratch directory is named:\n${out}")
endif()

_kt_ctest("partial run after the failed one" pass -R worker)
_kt_expect("partial run after the failed one" "tmp[.]start [.]+ +Passed")
_kt_expect("partial run after the failed one" "tmp[.]left_nothing [.]+ +Passed")

file(REMOVE_RECURSE "${WORK}")
message(STATUS "the tests' temporary directory judged each run by itself")
