# Compiles TEMPLATE at each configuration of CONFIGS (P=V,... entries separated by '|') for
# each element type of TYPES (C++ spellings separated by '|') with nvcc for ARCH (e.g. 90a), as
# kt would compile a variant, without a GPU: every value of every parameter should appear in
# some configuration, so that each one is known to build for its target.
# -DNVCC=nvcc -DTEMPLATE=file -DCONFIGS=a|b -DTYPES=t|u -DARCH=90a -DWORK=dir
if(NOT NVCC)
  message("SKIP: no nvcc")
  return()
endif()
get_filename_component(dir ${TEMPLATE} DIRECTORY)
string(REPLACE "|" ";" configs "${CONFIGS}")
string(REPLACE "|" ";" types "${TYPES}")
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(n 0)
foreach(c IN LISTS configs)
  string(REPLACE "," ";" assigns "${c}")
  set(defs "")
  foreach(a IN LISTS assigns)
    list(APPEND defs -D${a})
  endforeach()
  foreach(t IN LISTS types)
    math(EXPR n "${n} + 1")
    execute_process(
      COMMAND ${NVCC} -cubin -gencode=arch=compute_${ARCH},code=sm_${ARCH} -O3 -I${dir} ${defs} -DT=${t}
              -x cu ${TEMPLATE} -o ${WORK}/${n}.cubin
      RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "${c} (T=${t}) does not compile for sm_${ARCH}:\n${out}${err}")
    endif()
    message("compiled: ${c} T=${t}")
  endforeach()
endforeach()
