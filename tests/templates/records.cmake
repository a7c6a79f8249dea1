# The committed records of one library template, used as a machine without a GPU uses them:
# for every GPU that cache/ holds records of NAME for, and every element type its lines in
# SHAPES name, kt generate at those shapes from PROJECT_CACHE only (--gpu that GPU; a miss is an
# error, no tuning), then every generated source compiled for sm_90 (or the target the shapes'
# lines name, e.g. 90a).
# With -DBENCH=file (a benchmark built with the generated launcher, bench/gemm_side.cu), that
# file too compiles against the launcher of each element type.
# Skipped, saying why, when cache/ holds no record of NAME or no nvcc was found.
# -DKT=kt -DNAME=name -DTEMPLATE=file -DSHAPES=shapes.txt -DPROJECT_CACHE=dir -DNVCC=nvcc -DWORK=dir [-DBENCH=file]
file(GLOB_RECURSE records ${PROJECT_CACHE}/*.json)
set(gpus "")
foreach(r IN LISTS records)
  file(STRINGS ${r} hit REGEX "\"kernel\":[ \t]*\"${NAME}\"")
  if(hit)
    file(STRINGS ${r} name REGEX "\"gpu\\.name\":")
    string(REGEX REPLACE ".*\"gpu\\.name\":[ \t]*\"([^\"]*)\".*" "\\1" name "${name}")
    list(APPEND gpus "${name}")
  endif()
endforeach()
list(REMOVE_DUPLICATES gpus)
if(NOT gpus)
  message("SKIP: no committed record of ${NAME} in ${PROJECT_CACHE}")
  return()
endif()
if(NOT NVCC)
  message("SKIP: no nvcc found")
  return()
endif()

file(STRINGS ${SHAPES} lines REGEX "^${NAME} ")
set(types "")
set(arch 90)
foreach(line IN LISTS lines)
  string(REGEX MATCH "^${NAME} +([A-Za-z_]+=[a-z0-9_]+) +([^ ]+)( +([0-9]+[af]?))? *$" _m "${line}")
  list(APPEND types ${CMAKE_MATCH_1})
  list(APPEND "shapes_${CMAKE_MATCH_1}" --shape ${CMAKE_MATCH_2})
  if(CMAKE_MATCH_4)
    set(arch ${CMAKE_MATCH_4}) # one target per template
  endif()
endforeach()
list(REMOVE_DUPLICATES types)
if(arch MATCHES "[af]$")
  set(target -gencode=arch=compute_${arch},code=sm_${arch})
else()
  set(target -arch=sm_${arch})
endif()
file(REMOVE_RECURSE ${WORK})
set(ENV{KT_REMOTE_CACHE} "")
set(n 0)
foreach(g IN LISTS gpus)
  foreach(type IN LISTS types)
    math(EXPR n "${n} + 1")
    set(dir ${WORK}/${n})
    file(MAKE_DIRECTORY ${dir}/usercache)
    execute_process(
      COMMAND ${KT} generate --template ${TEMPLATE} --name ${NAME} --out ${dir}/gen --type ${type} ${shapes_${type}}
              --project-cache ${PROJECT_CACHE} --cache-dir ${dir}/usercache --gpu "${g}" --arch ${arch}
              --nvcc ${NVCC} --require-hit --no-tune --read-only
      RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    message("${g}, ${type}: ${out}${err}")
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "kt generate from the committed records of ${g} (${type}) failed (exit ${rc})")
    endif()
    file(GLOB sources ${dir}/gen/*.cu)
    if(NOT sources)
      message(FATAL_ERROR "kt generate wrote no sources")
    endif()
    foreach(src IN LISTS sources)
      get_filename_component(base ${src} NAME_WE)
      execute_process(COMMAND ${NVCC} ${target} -std=c++17 -c ${src} -I${dir}/gen -o ${dir}/${base}.o
        RESULT_VARIABLE rc ERROR_VARIABLE err)
      if(NOT rc EQUAL 0)
        message(FATAL_ERROR "${src} does not compile for sm_${arch}:\n${err}")
      endif()
    endforeach()
    list(LENGTH sources k)
    message("${g}, ${type}: ${k} generated sources of ${NAME} compile for sm_${arch}")
    if(BENCH AND NOT bench_${type})
      set(bench_${type} 1)
      execute_process(COMMAND ${NVCC} ${target} -std=c++17 -c ${BENCH} -I${dir}/gen -o ${dir}/bench.o
        RESULT_VARIABLE rc ERROR_VARIABLE err)
      if(NOT rc EQUAL 0)
        message(FATAL_ERROR "${BENCH} does not compile with the launcher of ${type}:\n${err}")
      endif()
      message("${type}: ${BENCH} compiles with the generated launcher")
    endif()
  endforeach()
endforeach()
