# environment.cmake - the environment is read only at the edge, and documented once
# (generator/cmd_env.h).  Fails naming each place that breaks a rule:
#
#   - getenv() appears in generator/*.c only in cmd_*.c (through cmd_env.c) and in the test-only
#     fake GPU (gpu_fake.c: KT_FAKE_GPUS, KT_FAKE_LOG), apart from the exceptions below;
#   - every variable named in a kt_env*() call (and cmd_env.c's env_*() helpers) in generator/ is in
#     cmd_env.c's table, and only cmd_*.c call them;
#   - the table, and what `kt env` prints from it, are sorted by name, and `kt env` prints each
#     variable of the table once.
#
#   cmake -DSRC=<kt's source dir> -DKT=<kt> -P environment.cmake
cmake_minimum_required(VERSION 3.25)

foreach(var SRC KT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "usage: cmake -DSRC=<kt sources> -DKT=<kt> -P environment.cmake (${var} is missing)")
  endif()
endforeach()

# getenv() outside the edge, by file and variable, and why it may stay.
set(allowed_getenv
  "util.c:PATH" # finding nvcc by name as exec does, to stat and identify it: the OS's search path, not a kt setting
  "dispatch.c:KT_VERBOSE" # text of the generated launcher: the user's program reads it, not kt
)

set(problems "")
macro(problem msg)
  string(APPEND problems "  ${msg}\n")
endmacro()

include(${CMAKE_CURRENT_LIST_DIR}/names.cmake)

# The table: the names of the lines after "vars[] = {" in cmd_env.c.
file(READ "${SRC}/generator/cmd_env.c" env_text)
lint_names(table "${env_text}" "^static const env_var vars\\[\\] = {" "^[ \t]*{\"([A-Za-z0-9_]+)\",")
list(LENGTH table ntable)
if(ntable LESS 10)
  message(FATAL_ERROR "cmd_env.c: found only ${ntable} variables in the table 'vars[]': has its layout changed?")
endif()
set(sorted ${table})
list(SORT sorted)
if(NOT sorted STREQUAL table)
  list(JOIN table " " have)
  problem("cmd_env.c: the table is not sorted by name: ${have}")
endif()

file(GLOB sources RELATIVE "${SRC}/generator" "${SRC}/generator/*.c")
foreach(file IN LISTS sources)
  file(STRINGS "${SRC}/generator/${file}" lines)
  set(n 0)
  foreach(line IN LISTS lines)
    math(EXPR n "${n} + 1")
    if(line MATCHES "getenv\\(" AND NOT file MATCHES "^(cmd_.*|gpu_fake)[.]c$")
      set(name "")
      if(line MATCHES "getenv\\((\\\\)?\"([^\"\\\\]*)(\\\\)?\"\\)")
        set(name "${CMAKE_MATCH_2}")
      endif()
      if(NOT "${file}:${name}" IN_LIST allowed_getenv)
        problem("generator/${file}:${n}: getenv() outside cmd_*.c: read the variable in a command through kt_env() (cmd_env.h) and pass the setting on")
      endif()
    endif()
    if(line MATCHES "(kt_env[a-z_]*|env_(count|seconds|first))\\((.*)$")
      set(call "${CMAKE_MATCH_1}")
      set(args "${CMAKE_MATCH_3}")
      if(NOT file MATCHES "^cmd_.*[.]c$")
        problem("generator/${file}:${n}: ${call}() outside cmd_*.c: only the commands read the environment")
      endif()
      string(REGEX MATCHALL "\"[A-Z][A-Z0-9_]*\"" names "${args}")
      foreach(quoted IN LISTS names)
        string(REPLACE "\"" "" name "${quoted}")
        if(NOT name IN_LIST table)
          problem("generator/${file}:${n}: ${name} is read but not in cmd_env.c's table: add it there, with its meaning")
        endif()
      endforeach()
    endif()
  endforeach()
endforeach()

# `kt env`: the table's names, in order, once each.
execute_process(COMMAND "${CMAKE_COMMAND}" -E env "${KT}" env RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  problem("kt env: exit status ${rc}: ${err}")
endif()
lint_names(printed "${out}" "" "^([A-Za-z0-9_]+) ")
set(sorted ${printed})
list(SORT sorted)
list(JOIN printed " " have)
if(NOT sorted STREQUAL printed)
  problem("kt env: not sorted by name: ${have}")
endif()
if(NOT printed STREQUAL table)
  list(JOIN table " " want)
  problem("kt env does not print the table once, in order:\n    printed: ${have}\n    table:   ${want}")
endif()

if(problems)
  message(FATAL_ERROR "the environment is read outside the commands or not documented:\n${problems}")
endif()
message(STATUS "${ntable} variables in cmd_env.c's table, all sorted, and every one read in generator/ is there")
