# A full-space correctness sweep: kt tune evaluates every feasible configuration of TEMPLATE at
# SHAPE (exhaustive), each checked against the template's naive reference on fresh inputs.
# Fails when any configuration compiled but then disagreed, faulted or hung; skipped without a GPU.
# -DKT=kt -DTEMPLATE=file -DSHAPE=spec -DWORK=dir [-DTYPE=T=x] [-DARCH=90a]
set(type_args "")
if(DEFINED TYPE)
  set(type_args --type ${TYPE})
endif()
if(ARCH)
  list(APPEND type_args --arch ${ARCH})
endif()
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
execute_process(
  COMMAND ${KT} tune ${TEMPLATE} ${type_args} --shape ${SHAPE} --strategy exhaustive --quiet --top 3
          --workdir ${WORK} --timeout 20
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(err MATCHES "no CUDA driver|no CUDA device|no GPU")
  message("SKIP: no GPU here")
  return()
endif()
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "kt tune failed (exit ${rc})")
endif()
string(REGEX MATCH "status:[^\n]*" status "${out}")
if(NOT status MATCHES " ok [0-9]+")
  message(FATAL_ERROR "no configuration passed: ${status}")
endif()
foreach(bad check-failed faulted timed-out compile-failed)
  if(status MATCHES " ${bad} [0-9]+")
    message(FATAL_ERROR "some configurations are wrong (${status}); see above and ${WORK}")
  endif()
endforeach()
