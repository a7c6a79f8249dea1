# The committed records of one library template, used as a machine without a GPU uses them:
# kt generate for NAME at every shape listed in SHAPES, from PROJECT_CACHE only (as for the GPU
# the records are of: "NVIDIA H200" where NAME has records of it, else the first one's; a miss is
# an error, no tuning), then every generated source compiled for sm_90 (or the target the shapes'
# lines name, e.g. 90a).
# Skipped, saying why, when cache/ holds no record of NAME or no nvcc was found.
# -DKT=kt -DNAME=name -DTEMPLATE=file -DSHAPES=shapes.txt -DPROJECT_CACHE=dir -DNVCC=nvcc -DWORK=dir
file(GLOB_RECURSE records ${PROJECT_CACHE}/*.json)
set(gpu "")
foreach(r IN LISTS records)
  file(STRINGS ${r} hit REGEX "\"kernel\":[ \t]*\"${NAME}\"")
  if(hit)
    file(STRINGS ${r} name REGEX "\"gpu\\.name\":")
    string(REGEX REPLACE ".*\"gpu\\.name\":[ \t]*\"([^\"]*)\".*" "\\1" name "${name}")
    if(NOT gpu OR name STREQUAL "NVIDIA H200")
      set(gpu "${name}")
    endif()
  endif()
endforeach()
if(NOT gpu)
  message("SKIP: no committed record of ${NAME} in ${PROJECT_CACHE}")
  return()
endif()
if(NOT NVCC)
  message("SKIP: no nvcc found")
  return()
endif()

file(STRINGS ${SHAPES} lines REGEX "^${NAME} ")
set(args "")
set(arch 90)
foreach(line IN LISTS lines)
  string(REGEX MATCH "^${NAME} +([A-Za-z_]+=[a-z0-9_]+) +([^ ]+)( +([0-9]+[af]?))? *$" _m "${line}")
  set(type ${CMAKE_MATCH_1})
  list(APPEND args --shape ${CMAKE_MATCH_2})
  if(CMAKE_MATCH_4)
    set(arch ${CMAKE_MATCH_4}) # one target per template
  endif()
endforeach()
if(arch MATCHES "[af]$")
  set(target -gencode=arch=compute_${arch},code=sm_${arch})
else()
  set(target -arch=sm_${arch})
endif()
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/usercache)
set(ENV{KT_REMOTE_CACHE} "")
execute_process(
  COMMAND ${KT} generate --template ${TEMPLATE} --name ${NAME} --out ${WORK}/gen --type ${type} ${args}
          --project-cache ${PROJECT_CACHE} --cache-dir ${WORK}/usercache --gpu "${gpu}" --arch ${arch}
          --nvcc ${NVCC} --require-hit --no-tune --read-only
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "kt generate from the committed records failed (exit ${rc})")
endif()
file(GLOB sources ${WORK}/gen/*.cu)
if(NOT sources)
  message(FATAL_ERROR "kt generate wrote no sources")
endif()
foreach(src IN LISTS sources)
  get_filename_component(base ${src} NAME_WE)
  execute_process(COMMAND ${NVCC} ${target} -std=c++17 -c ${src} -I${WORK}/gen -o ${WORK}/${base}.o
    RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${src} does not compile for sm_${arch}:\n${err}")
  endif()
endforeach()
list(LENGTH sources n)
message("${n} generated sources of ${NAME} compile for sm_${arch}")
