# tmp_dir.cmake - the tests' temporary directory DIR, one run at a time (KtTestTmp.cmake).
#
#   cmake -DMODE=start -DDIR=<dir> -P tmp_dir.cmake   a new, empty DIR for this run
#   cmake -DMODE=check -DDIR=<dir> -P tmp_dir.cmake   fails when DIR holds anything
#
# start removes what an earlier run left in DIR.  What cannot be removed (a file that a process of
# that run still holds open on NFS, a file system mounted there) is moved aside, to
# DIR.earlier-<random>, and removed by a later start when it can be: either way DIR starts empty,
# and check judges only what this run left.  check names each thing left: a work directory that a
# tuning run, a round or a refactoring did not remove, or a test's scratch files.
if(NOT MODE MATCHES "^(start|check)$" OR NOT DIR)
  message(FATAL_ERROR "usage: cmake -DMODE=start|check -DDIR=<dir> -P tmp_dir.cmake")
endif()

function(_kt_remove path)
  execute_process(COMMAND "${CMAKE_COMMAND}" -E rm -rf "${path}" ERROR_QUIET) # what stays is seen below
endfunction()

if(MODE STREQUAL "start")
  file(GLOB earlier LIST_DIRECTORIES true "${DIR}.earlier-*")
  foreach(path IN LISTS earlier)
    _kt_remove("${path}")
  endforeach()
  _kt_remove("${DIR}")
  if(EXISTS "${DIR}")
    string(RANDOM LENGTH 8 suffix)
    file(RENAME "${DIR}" "${DIR}.earlier-${suffix}" RESULT rc)
    if(NOT rc STREQUAL "0")
      message(FATAL_ERROR "cannot empty ${DIR}, nor move it aside: ${rc}")
    endif()
    message(STATUS "what an earlier run left in ${DIR} could not all be removed: moved to ${DIR}.earlier-${suffix}")
  endif()
  file(MAKE_DIRECTORY "${DIR}")
  message(STATUS "${DIR} is new and empty")
  return()
endif()

file(GLOB left LIST_DIRECTORIES true "${DIR}/*") # dot files too
if(left)
  list(JOIN left "\n  " names)
  message(FATAL_ERROR "this run's tests left these behind in ${DIR}:\n  ${names}\n"
    "(a test that failed in this run may have kept its files there on purpose: see its output)")
endif()
message(STATUS "nothing left in ${DIR}")
