# drift.cmake: readme.cmake fails, naming what differs, when the README and .ci/run drift apart.
#
#   cmake -DROOT=<kt sources> -DWORK=<scratch dir> -P drift.cmake
#
# Each case (a call of alter()) writes an altered copy of README.md or .ci/run into WORK and runs
# readme.cmake on it; the check must fail with the message that the case expects.
cmake_minimum_required(VERSION 3.25)

file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
file(READ "${ROOT}/README.md" readme)
file(READ "${ROOT}/.ci/run" ci)
set(test_command "cmake -S . -B build -G Ninja && cmake --build build && ctest --test-dir build --output-on-failure")
set(failed "")

# alter(<case> README|CI <from> <to> <regex>): readme.cmake, run on a copy of README.md or .ci/run
# in which <from> is replaced by <to>, must fail with a message that <regex> matches.
function(alter case which from to regex)
  set(md "${readme}")
  set(run "${ci}")
  set(altered run)
  if(which STREQUAL "README")
    set(altered md)
  endif()
  string(FIND "${${altered}}" "${from}" at)
  if(at EQUAL -1)
    message(NOTICE "drift: case ${case}: '${from}' is not in the ${which}")
    set(failed "${failed} ${case}" PARENT_SCOPE)
    return()
  endif()
  string(REPLACE "${from}" "${to}" ${altered} "${${altered}}")
  file(WRITE "${WORK}/${case}.md" "${md}")
  file(WRITE "${WORK}/${case}.run" "${run}")
  execute_process(COMMAND "${CMAKE_COMMAND}" "-DROOT=${ROOT}" "-DREADME=${WORK}/${case}.md"
      "-DCI=${WORK}/${case}.run" -P "${CMAKE_CURRENT_LIST_DIR}/readme.cmake"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  string(REGEX REPLACE "[ \n]+" " " flat "${out}")
  if(rc EQUAL 0)
    message(NOTICE "drift: case ${case}: the check passed; it must fail")
  elseif(NOT flat MATCHES "${regex}")
    message(NOTICE "drift: case ${case}: the output does not match\n  ${regex}\n${out}")
  else()
    message(STATUS "drift: case ${case}: ok")
    return()
  endif()
  set(failed "${failed} ${case}" PARENT_SCOPE)
endfunction()

# The unaltered pair passes (else every case below would fail for the wrong reason).
execute_process(COMMAND "${CMAKE_COMMAND}" "-DROOT=${ROOT}" -P "${CMAKE_CURRENT_LIST_DIR}/readme.cmake"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "drift: readme.cmake fails on the real README and .ci/run:\n${out}")
endif()
if(NOT readme MATCHES "scripts/deps.sh test && ${test_command}" OR NOT ci MATCHES "\n[^\n]*ctest")
  message(FATAL_ERROR "drift: the README's test command is not the one this test alters")
endif()

set(deps "scripts/deps.sh test && ")
# CI runs a narrower ctest than the README shows; CI skips the dependency step; CI runs more.
alter(ci_narrower CI "ctest --test-dir" "ctest -L unit --test-dir" "does not end with the README's test command")
alter(ci_no_deps CI "${deps}" "" "does not end with the README's test command")
alter(ci_more CI "${deps}" "export PATH=/opt/cuda/bin:$PATH\n${deps}" "runs more than the README's test command: export PATH")
# The README's test command loses its dependency step (CI then differs too).
alter(readme_no_deps README "${deps}${test_command}" "${test_command}" "test command does not start with '${deps}'")
# The main job names a build directory that the example project does not document.
alter(main_step README "cmake --build build/example &&" "cmake --build build/ex &&" "main-job step 'cmake --build build/ex' is not among")
# A third command block in the section; a command block of two lines.
alter(three_blocks README "\n## Results\n" "\n```sh\nmake\n```\n\n## Results\n" "holds 3 ```sh blocks, not 2")
alter(two_lines README "${deps}cmake -S" "${deps}\ncmake -S" "a command block holds more than one line")

if(failed)
  message(FATAL_ERROR "drift: failed cases:${failed}")
endif()
message(STATUS "drift: every altered copy was caught")
