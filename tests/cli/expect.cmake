# expect.cmake - runs one kt command line and checks its exit status and output.
#
#   cmake -DKT=<kt> -DARGS=<arguments separated by |> -DRC=<status> [-DERR=<regex>] [-DOUT=<regex>]
#         [-DNOT_ERR=<regex>] [-DMERGED=<regex>] [-DENV=<VAR=value separated by |>] -P expect.cmake
#
# ERR must match stderr, OUT stdout; NOT_ERR must not match stderr; MERGED the two in one pipe, in
# the order kt wrote them (a second run).  ENV is set for kt only.
string(REPLACE "|" ";" args "${ARGS}")
string(REPLACE "|" ";" env "${ENV}")
execute_process(COMMAND "${CMAKE_COMMAND}" -E env ${env} "${KT}" ${args}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(report "kt ${args}\n--- exit status ${rc}\n--- stdout\n${out}--- stderr\n${err}")
if(NOT rc STREQUAL "${RC}")
  message(FATAL_ERROR "want exit status ${RC}\n${report}")
endif()
if(DEFINED ERR AND NOT err MATCHES "${ERR}")
  message(FATAL_ERROR "stderr does not match '${ERR}'\n${report}")
endif()
if(DEFINED NOT_ERR AND err MATCHES "${NOT_ERR}")
  message(FATAL_ERROR "stderr matches '${NOT_ERR}'\n${report}")
endif()
if(DEFINED OUT AND NOT out MATCHES "${OUT}")
  message(FATAL_ERROR "stdout does not match '${OUT}'\n${report}")
endif()
if(DEFINED MERGED)
  execute_process(COMMAND "${CMAKE_COMMAND}" -E env ${env} "${KT}" ${args} OUTPUT_VARIABLE both ERROR_VARIABLE both)
  if(NOT both MATCHES "${MERGED}")
    message(FATAL_ERROR "stdout and stderr in one pipe do not match '${MERGED}':\n${both}")
  endif()
endif()
