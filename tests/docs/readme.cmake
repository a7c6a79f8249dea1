# readme.cmake: the README's two commands are the ones that work and that CI runs.
#
#   cmake -DROOT=<kt sources> [-DREADME=file] [-DCI=file] -P readme.cmake
#
# Checks, in the README's section "## Two commands": exactly two ```sh blocks of one line each;
# the first (the main job) starts with the dependency step `scripts/deps.sh build && ` and its
# other steps are the ones example_project/CMakeLists.txt documents; the second (the tests) starts
# with `scripts/deps.sh test && ` and ends with a ctest run.  Then .ci/run: its last command is the
# README's test command, character for character, and it runs nothing else (besides
# `set -euo pipefail` and a `cd`).  Last, scripts/deps.sh knows both modes (--list runs it).
# README and CI default to ROOT's; docs.readme_drift points them at altered copies.
cmake_minimum_required(VERSION 3.25)

if(NOT ROOT)
  message(FATAL_ERROR "readme.cmake: -DROOT=<kt sources> is required")
endif()
if(NOT README)
  set(README "${ROOT}/README.md")
endif()
if(NOT CI)
  set(CI "${ROOT}/.ci/run")
endif()

function(fail what)
  message(FATAL_ERROR "docs: ${what}")
endfunction()

# Sets <out> to the text of the section headed `## <title>` of <text>, up to the next `## `.
function(section text title out)
  string(FIND "${text}" "\n## ${title}\n" begin)
  if(begin EQUAL -1)
    fail("${README} has no section '## ${title}'")
  endif()
  string(SUBSTRING "${text}" ${begin} -1 rest)
  string(LENGTH "\n## ${title}\n" skip)
  string(SUBSTRING "${rest}" ${skip} -1 rest)
  string(FIND "${rest}" "\n## " end)
  string(SUBSTRING "${rest}" 0 ${end} rest)
  set(${out} "${rest}" PARENT_SCOPE)
endfunction()

# Sets <out> to the list of the one-line ```sh blocks of <text>; a block of more lines fails.
function(sh_blocks text out)
  set(blocks "")
  while(TRUE)
    string(FIND "${text}" "```sh\n" begin)
    if(begin EQUAL -1)
      break()
    endif()
    math(EXPR begin "${begin} + 6")
    string(SUBSTRING "${text}" ${begin} -1 text)
    string(FIND "${text}" "\n```" end)
    if(end EQUAL -1)
      fail("${README}: a ```sh block is not closed")
    endif()
    string(SUBSTRING "${text}" 0 ${end} block)
    if(block MATCHES "\n")
      fail("${README}: a command block holds more than one line:\n${block}")
    endif()
    list(APPEND blocks "${block}")
    string(SUBSTRING "${text}" ${end} -1 text)
    string(SUBSTRING "${text}" 4 -1 text)
  endwhile()
  set(${out} "${blocks}" PARENT_SCOPE)
endfunction()

function(expect_prefix command prefix what)
  string(FIND "${command}" "${prefix}" at)
  if(NOT at EQUAL 0)
    fail("the README's ${what} does not start with '${prefix}':\n  ${command}")
  endif()
endfunction()

file(READ "${README}" readme)
section("${readme}" "Two commands" two)
sh_blocks("${two}" commands)
list(LENGTH commands n)
if(NOT n EQUAL 2)
  fail("${README}: the section '## Two commands' holds ${n} ```sh blocks, not 2")
endif()
list(GET commands 0 main)
list(GET commands 1 tests)

# The main job: the dependency step, then what the example project says builds and runs it.
set(deps_build "scripts/deps.sh build && ")
expect_prefix("${main}" "${deps_build}" "main-job command")
string(LENGTH "${deps_build}" skip)
string(SUBSTRING "${main}" ${skip} -1 steps)
string(REPLACE " && " ";" steps "${steps}")
file(READ "${ROOT}/example_project/CMakeLists.txt" example)
foreach(step IN LISTS steps)
  string(FIND "${example}" "\n#   ${step}\n" at)
  if(at EQUAL -1)
    fail("the README's main-job step '${step}' is not among the commands that "
      "example_project/CMakeLists.txt documents (lines '#   <command>')")
  endif()
endforeach()

# The tests: the dependency step, then a build and a ctest run.
expect_prefix("${tests}" "scripts/deps.sh test && " "test command")
if(NOT tests MATCHES "&& ctest [^&]*$")
  fail("the README's test command does not end with a ctest run:\n  ${tests}")
endif()

# .ci/run: the test command as its last command, and nothing else that does something.
file(READ "${CI}" ci)
string(REGEX REPLACE "(^|\n)[ \t]*#[^\n]*" "\\1" ci "${ci}")
while(ci MATCHES "\n[ \t]*\n")
  string(REGEX REPLACE "\n[ \t]*\n" "\n" ci "${ci}")
endwhile()
string(REGEX REPLACE "^\n+|\n+$" "" ci "${ci}")
string(FIND "${ci}" "\n" last_nl REVERSE)
math(EXPR after "${last_nl} + 1")
string(SUBSTRING "${ci}" ${after} -1 ci_last)
if(NOT ci_last STREQUAL tests)
  fail("${CI} does not end with the README's test command:\n"
    "  README: ${tests}\n  ${CI}: ${ci_last}")
endif()
string(SUBSTRING "${ci}" 0 ${last_nl} ci_before)
string(REGEX REPLACE "set -euo pipefail\n?|cd [^\n]*\n?" "" ci_rest "${ci_before}")
if(NOT ci_rest STREQUAL "")
  fail("${CI} runs more than the README's test command:\n${ci_rest}")
endif()

# The dependency script knows the modes the commands name.
foreach(mode build test)
  execute_process(COMMAND "${ROOT}/scripts/deps.sh" --list ${mode}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0 OR out STREQUAL "")
    fail("scripts/deps.sh --list ${mode} failed (${rc}):\n${out}")
  endif()
endforeach()
message(STATUS "docs: the README's commands are the example project's and .ci/run's")
