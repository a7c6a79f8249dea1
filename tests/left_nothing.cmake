# Fails when the tests' temporary directory (DIR) holds anything: a work directory that a tuning
# run, a round or a refactoring did not remove, or a test's own scratch files.
file(GLOB left LIST_DIRECTORIES true "${DIR}/*")
if(left)
  list(JOIN left "\n  " names)
  message(FATAL_ERROR "the tests left these behind in ${DIR}:\n  ${names}")
endif()
message(STATUS "nothing left in ${DIR}")
