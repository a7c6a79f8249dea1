# tables.cmake - the tables that kt's help prints from are sorted by name: the subcommands of kt
# and of kt cache (kt_subcmd tables in generator/main.c and generator/cmd_cache.c).  Fails naming
# the table that is not.
#
#   cmake -DKT=<kt> -P tables.cmake
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/names.cmake)

set(problems "")
foreach(cmd "" "cache")
  separate_arguments(args UNIX_COMMAND "${cmd} --help")
  execute_process(COMMAND "${KT}" ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(STRIP "kt ${cmd}" what)
  if(NOT rc EQUAL 0)
    string(APPEND problems "  ${what} --help: exit status ${rc}: ${err}\n")
    continue()
  endif()
  lint_names(names "${out}" "^commands:$" "^  ([a-z-]+) ")
  list(LENGTH names n)
  set(sorted ${names})
  list(SORT sorted)
  list(JOIN names " " have)
  if(n LESS 3)
    string(APPEND problems "  ${what} --help: found only '${have}' under 'commands:'\n")
  elseif(NOT sorted STREQUAL names)
    string(APPEND problems "  ${what} --help: the commands are not sorted by name: ${have}\n")
  endif()
endforeach()
if(problems)
  message(FATAL_ERROR "a table is not sorted:\n${problems}")
endif()
