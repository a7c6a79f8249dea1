# drift.cmake: readme.cmake fails, naming what differs, when the README and .ci/run drift apart.
#
#   cmake -DROOT=<kt sources> -DWORK=<scratch dir> -P drift.cmake
#
# Each case writes an altered copy of README.md or .ci/run into WORK and runs readme.cmake on it;
# the check must fail with the message that the case expects.
cmake_minimum_required(VERSION 3.25)

file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
file(READ "${ROOT}/README.md" readme)
file(READ "${ROOT}/.ci/run" ci)
set(test_command "cmake -S . -B build -G Ninja && cmake --build build && ctest --test-dir build --output-on-failure")
set(failed "")

# Runs readme.cmake with README=<readme text>, CI=<ci text>; the output must match <regex>.
function(expect_failure case readme_text ci_text regex)
  file(WRITE "${WORK}/${case}.md" "${readme_text}")
  file(WRITE "${WORK}/${case}.run" "${ci_text}")
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

# CI runs a narrower ctest than the README shows.
string(REPLACE "ctest --test-dir build" "ctest -L unit --test-dir build" alt "${ci}")
expect_failure(ci_narrower "${readme}" "${alt}" "does not end with the README's test command")
# CI skips the dependency step.
string(REPLACE "scripts/deps.sh test && " "" alt "${ci}")
expect_failure(ci_no_deps "${readme}" "${alt}" "does not end with the README's test command")
# CI runs something before the command.
string(REPLACE "scripts/deps.sh test && " "export PATH=/opt/cuda/bin:$PATH\nscripts/deps.sh test && " alt "${ci}")
expect_failure(ci_more "${readme}" "${alt}" "runs more than the README's test command: export PATH")
# The README's test command loses its dependency step (CI then differs too).
string(REPLACE "scripts/deps.sh test && ${test_command}" "${test_command}" alt "${readme}")
expect_failure(readme_no_deps "${alt}" "${ci}" "test command does not start with 'scripts/deps.sh test && '")
# The main job names a build directory that the example project does not document.
string(REPLACE "cmake --build build/example &&" "cmake --build build/ex &&" alt "${readme}")
expect_failure(main_step "${alt}" "${ci}" "main-job step 'cmake --build build/ex' is not among")
# A third command block in the section.
string(REPLACE "\n## Results\n" "\n```sh\nmake\n```\n\n## Results\n" alt "${readme}")
expect_failure(three_blocks "${alt}" "${ci}" "holds 3 ```sh blocks, not 2")
# A two-line command block.
string(REPLACE "scripts/deps.sh test && cmake -S" "scripts/deps.sh test &&\ncmake -S" alt "${readme}")
expect_failure(two_lines "${alt}" "${ci}" "a command block holds more than one line")

if(failed)
  message(FATAL_ERROR "drift: failed cases:${failed}")
endif()
message(STATUS "drift: every altered copy was caught")
