# lint.clang: kt built by clang with warnings as errors, in WORK (removed after a pass), so that
# the tool builds clean with the other compiler a user may have (the suite's own build is gcc's on
# CI; clang warns where gcc does not, e.g. a printf format passed through a va_list wrapper).
#   cmake -DSRC=<kt source> -DWORK=<dir> -DCLANG=<clang or empty> -DGEN=<generator> -P clang.cmake
if(NOT CLANG)
  message("kt-test: skipped: no clang was found when kt was configured")
  return()
endif()
file(REMOVE_RECURSE "${WORK}")
execute_process(COMMAND "${CMAKE_COMMAND}" -S "${SRC}" -B "${WORK}" -G "${GEN}" "-DCMAKE_C_COMPILER=${CLANG}"
    -DCMAKE_C_FLAGS=-Werror -DKT_BUILD_TESTS=OFF
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc EQUAL 0)
  execute_process(COMMAND "${CMAKE_COMMAND}" --build "${WORK}" --target kt
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
endif()
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "kt does not build with ${CLANG} and -Werror (in ${WORK}):\n${out}")
endif()
file(REMOVE_RECURSE "${WORK}")
message("kt built with ${CLANG}, warnings as errors")
