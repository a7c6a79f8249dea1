# gen_test.cmake - generated code compiles, links and dispatches (ctest label `gen`).
#
#   cmake -DKT=<kt> -DFIXTURES=<tests/fixtures> -DSRC=<tests/gen> -DWORK=<scratch dir> -DCC=<C compiler> -P gen_test.cmake
#
# Generates two kernels from the mini_rmsnorm fixture (half, and float through --type) at two
# shapes with two hand-picked configurations (--config), compiles every generated .cu with
# nvcc -arch=sm_90 -c, links a C caller and a C++ caller against them and runs them (without a
# GPU they check only what needs none).  Then links the dispatcher with recording stand-ins for
# the variants and checks which variant, grid, block and shared memory it picks per shape.
# Prints "SKIP: <reason>" (the test's SKIP_REGULAR_EXPRESSION) when nvcc is not found.
cmake_minimum_required(VERSION 3.25)

find_program(NVCC nvcc HINTS ENV CUDA_PATH ENV CUDAToolkit_ROOT PATH_SUFFIXES bin PATHS /usr/local/cuda/bin)
if(NOT NVCC)
  message("SKIP: nvcc not found in PATH, $CUDA_PATH, $CUDAToolkit_ROOT or /usr/local/cuda/bin")
  return()
endif()
get_filename_component(cuda_bin "${NVCC}" DIRECTORY)
set(cuda_include "${cuda_bin}/../include")

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${ARGN}\n${out}${err}")
  endif()
  set(run_out "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(out "${WORK}/generated")
set(configs --config 0:BLOCK=256,VEC=4,ALGO=atomic,CACHE=true --config 1:BLOCK=64,VEC=2,ALGO=tree,CACHE=false)
set(shapes --shape rows=64,hidden=4096 --shape rows=8,hidden=1024)
run("kt generate (half)" "${KT}" generate --template "${FIXTURES}/mini_rmsnorm.cu.tmpl" --name mini --out "${out}"
    ${shapes} ${configs} --quiet)
run("kt generate (float)" "${KT}" generate --template "${FIXTURES}/mini_rmsnorm.cu.tmpl" --name mini_f32 --out "${out}"
    --type T=float ${shapes} ${configs} --quiet)

include("${out}/kt_mini.cmake")
set(sources ${KT_GENERATED_SOURCES})
include("${out}/kt_mini_f32.cmake")
list(APPEND sources ${KT_GENERATED_SOURCES})
list(LENGTH sources n)
if(NOT n EQUAL 8)
  message(FATAL_ERROR "expected 2 x (dispatcher + 3 variants) sources, got ${n}: ${sources}")
endif()

set(objects)
foreach(src IN LISTS sources)
  get_filename_component(stem "${src}" NAME_WE)
  run("nvcc ${stem}.cu" "${NVCC}" -arch=sm_90 -Xcompiler=-Wall -c "${src}" -o "${WORK}/${stem}.o")
  list(APPEND objects "${WORK}/${stem}.o")
endforeach()

run("C caller compile" "${CC}" -std=c11 -Wall -Wextra -Wpedantic -Werror -I "${out}" -I "${cuda_include}"
    -c "${SRC}/caller.c" -o "${WORK}/caller_c.o")
run("C++ caller compile" "${NVCC}" -x c++ -std=c++17 -Xcompiler=-Wall,-Wextra,-Werror -I "${out}"
    -c "${SRC}/caller.cpp" -o "${WORK}/caller_cpp.o")
run("C caller link" "${NVCC}" -arch=sm_90 ${objects} "${WORK}/caller_c.o" -o "${WORK}/caller_c")
run("C++ caller link" "${NVCC}" -arch=sm_90 ${objects} "${WORK}/caller_cpp.o" -o "${WORK}/caller_cpp")
run("C caller" "${WORK}/caller_c")
message("${run_out}")
run("C++ caller" "${WORK}/caller_cpp")
message("${run_out}")

# The dispatch, with the variants replaced by stand-ins built from the dispatcher's declarations.
file(READ "${out}/kt_mini.cu" dispatcher)
string(REGEX MATCHALL "extern \"C\" cudaError_t kt_mini_[0-9a-f]+\\(dim3, dim3, size_t, cudaStream_t[^;]*\\)" decls "${dispatcher}")
set(fakes "#include <cuda_runtime.h>\n#include <cuda_fp16.h>\n")
string(APPEND fakes "extern \"C\" { const char *kt_called; unsigned kt_called_grid, kt_called_block; size_t kt_called_smem; }\n")
foreach(d IN LISTS decls)
  string(REGEX MATCH "kt_mini_[0-9a-f]+" sym "${d}")
  string(REPLACE "(dim3, dim3, size_t, cudaStream_t" "(dim3 g, dim3 b, size_t sm, cudaStream_t" d "${d}")
  string(APPEND fakes "${d}\n{\n\tkt_called = \"${sym}\";\n\tkt_called_grid = g.x;\n\tkt_called_block = b.x;\n"
         "\tkt_called_smem = sm;\n\treturn cudaSuccess;\n}\n")
endforeach()
list(LENGTH decls n)
if(NOT n EQUAL 3)
  message(FATAL_ERROR "expected 3 variant declarations in kt_mini.cu, found ${n}")
endif()
file(WRITE "${WORK}/fakes.cu" "${fakes}")
run("dispatch check build" "${NVCC}" -arch=sm_90 -I "${out}" "${out}/kt_mini.cu" "${WORK}/fakes.cu"
    "${SRC}/dispatch_check.cpp" -o "${WORK}/dispatch_check")
run("dispatch check" "${WORK}/dispatch_check")
set(got "${run_out}")

file(READ "${out}/kt_mini.json" manifest)
string(JSON v0 GET "${manifest}" shapes 0 variant)
string(JSON v1 GET "${manifest}" shapes 1 variant)
string(JSON vf GET "${manifest}" fallback variant)
set(want "64x4096 -> ${v0} grid=64 block=256 smem=16384 rc=0
8x1024 -> ${v1} grid=8 block=64 smem=0 rc=0
40x2050 -> ${v1} grid=40 block=64 smem=0 rc=0
8x1025 -> ${vf} grid=8 block=128 smem=0 rc=0
64x16384 -> ${v0} grid=64 block=256 smem=65536 rc=0
2x7 -> none grid=0 block=0 smem=0 rc=1
0x1024 -> none grid=0 block=0 smem=0 rc=0
")
if(NOT got STREQUAL want)
  message(FATAL_ERROR "dispatch differs:\n--- got\n${got}--- want\n${want}")
endif()
message("dispatch as expected:\n${got}")
