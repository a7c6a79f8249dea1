# act.cmake - what a test of the fixture project does in its TMPDIR:
#   cmake -P act.cmake tidy   makes a scratch directory with a file in it and removes it
#   cmake -P act.cmake leak   makes one, leaves it behind and fails
set(action "${CMAKE_ARGV3}")
string(RANDOM LENGTH 6 id)
set(scratch "$ENV{TMPDIR}/scratch-${action}-${id}")
file(MAKE_DIRECTORY "${scratch}")
file(WRITE "${scratch}/unit.cu" "x")
if(action STREQUAL "tidy")
  file(REMOVE_RECURSE "${scratch}")
elseif(action STREQUAL "leak")
  message(FATAL_ERROR "failing on purpose, with ${scratch} left behind")
else()
  message(FATAL_ERROR "usage: cmake -P act.cmake tidy|leak")
endif()
