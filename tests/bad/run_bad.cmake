# run_bad.cmake - one case of the malformed-template suite.
#
#   cmake -DCHECKER=<program> [-DCHECKER_ARGS=check] -DDIR=<tests/bad> -DCASE=<NN-name> -P run_bad.cmake
#
# Runs `CHECKER [CHECKER_ARGS] NN-name.cu.tmpl` in DIR and requires exit status 1 and a stderr
# equal, byte for byte, to NN-name.expected (the diagnostics, then the "kt check:" summary).
foreach(v CHECKER DIR CASE)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "run_bad.cmake: -D${v}=... is required")
  endif()
endforeach()

file(READ "${DIR}/${CASE}.expected" expected)
execute_process(
  COMMAND "${CHECKER}" ${CHECKER_ARGS} "${CASE}.cu.tmpl"
  WORKING_DIRECTORY "${DIR}"
  RESULT_VARIABLE status
  OUTPUT_VARIABLE out
  ERROR_VARIABLE err)

# message() without a mode prints the text as it is (FATAL_ERROR would re-wrap its lines).
if(NOT status EQUAL 1)
  message("stdout:\n${out}\nstderr:\n${err}")
  message(FATAL_ERROR "${CASE}: exit status ${status}, expected 1 (an invalid template)")
endif()
if(NOT "${err}" STREQUAL "${expected}")
  message("--- got:\n${err}--- expected (${CASE}.expected):\n${expected}---")
  message(FATAL_ERROR "${CASE}: the diagnostics differ from ${CASE}.expected")
endif()
