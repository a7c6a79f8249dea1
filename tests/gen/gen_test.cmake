# gen_test.cmake - generated code compiles, links and dispatches (ctest label `gen`).
#
#   cmake -DKT=<kt> -DFIXTURES=<tests/fixtures> -DSRC=<tests/gen> -DWORK=<scratch dir> -DCC=<C compiler> -P gen_test.cmake
#
# Generates two kernels from the mini_rmsnorm fixture (half, and float through --type) at two
# shapes with two hand-picked configurations (--config), compiles every generated .cu with
# nvcc -arch=sm_90 -c, links a C caller and a C++ caller against them and runs them (without a
# GPU they check only what needs none).  Then links the dispatcher with recording stand-ins for
# the variants and checks which variant, grid, block and shared memory it picks per shape.
# Then the same kernel with a table per GPU model: its variants compile for their GPUs' targets,
# and its launcher, linked with a stand-in CUDA runtime, picks each device's table.
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

# ---- GPU tables ---------------------------------------------------------------------------------
# The same kernel for three GPU models (no record names them: their identities are kt's table's),
# each with the hand-picked configurations: the two Hopper GPUs share their sm_90 variants, the
# A100 has its sm_80 ones.  Its launcher is linked with
# stand-ins for the variants and for the CUDA runtime (stub_cudart.cpp: devices described in
# KT_STUB_GPUS), and asked for its table on each device.
set(multi "${WORK}/multi")
set(gpus "NVIDIA H200,NVIDIA H100 80GB HBM3,NVIDIA A100-SXM4-80GB")
run("kt generate (GPU tables)" "${KT}" generate --template "${FIXTURES}/mini_rmsnorm.cu.tmpl" --name multi --out "${multi}"
    ${shapes} ${configs} --gpus "${gpus}" --cache-dir "${WORK}/cache" --arch 80,90 --quiet)
include("${multi}/kt_multi.cmake")
list(LENGTH KT_GENERATED_ARCH_SOURCES n)
if(NOT n EQUAL 6) # sm_90 and sm_80: the two configurations and the default fallback each
  message(FATAL_ERROR "expected 6 variants built for one GPU target each, got ${n}: ${KT_GENERATED_ARCH_SOURCES}")
endif()
foreach(src flag IN ZIP_LISTS KT_GENERATED_ARCH_SOURCES KT_GENERATED_ARCH_FLAGS)
  get_filename_component(stem "${src}" NAME_WE)
  run("nvcc ${stem}.cu (${flag})" "${NVCC}" ${flag} -c "${src}" -o "${WORK}/${stem}.o")
endforeach()
file(READ "${multi}/kt_multi.cu" dispatcher)
string(REGEX MATCHALL "extern \"C\" cudaError_t kt_multi_[0-9a-f]+(_sm[0-9]+a?)?\\(dim3, dim3, size_t, cudaStream_t[^;]*\\)" decls "${dispatcher}")
set(fakes "#include <cuda_runtime.h>\n#include <cuda_fp16.h>\nextern \"C\" { const char *kt_called; }\n")
foreach(d IN LISTS decls)
  string(REGEX MATCH "kt_multi_[0-9a-f]+(_sm[0-9]+a?)?" sym "${d}")
  string(APPEND fakes "${d}\n{\n\tkt_called = \"${sym}\";\n\treturn cudaSuccess;\n}\n")
endforeach()
file(WRITE "${WORK}/multi_fakes.cpp" "${fakes}")
run("table check build" "${NVCC}" -x c++ -cudart none -I "${multi}" "${multi}/kt_multi.cu" "${WORK}/multi_fakes.cpp"
    "${SRC}/stub_cudart.cpp" "${SRC}/table_check.cpp" -o "${WORK}/table_check")
# An H100 SXM (its model's table), an H100 PCIe (the nearest Hopper table in bandwidth and SMs:
# the H100's), an A100 40GB (the only Ampere table), a B200 (none of its capability: the defaults)
# and a device that cannot be queried.
set(ENV{KT_STUB_GPUS} "NVIDIA H100 80GB HBM3|9|0|132|2619000|5120;NVIDIA H100 PCIe|9|0|114|1593000|5120;NVIDIA A100-SXM4-40GB|8|0|108|1215000|5120;NVIDIA B200|10|0|148|3996000|8192;!")
set(ENV{KT_VERBOSE} 1)
execute_process(COMMAND "${WORK}/table_check" 5 RESULT_VARIABLE rc OUTPUT_VARIABLE got ERROR_VARIABLE verbose)
unset(ENV{KT_STUB_GPUS})
unset(ENV{KT_VERBOSE})
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "table check failed (${rc}):\n${got}${verbose}")
endif()
file(READ "${multi}/kt_multi.json" manifest_multi)
string(JSON s_h100 GET "${manifest_multi}" shapes 2 variant)
string(JSON g_h100 GET "${manifest_multi}" shapes 2 gpu)
string(JSON s_a100 GET "${manifest_multi}" shapes 4 variant)
string(JSON g_a100 GET "${manifest_multi}" shapes 4 gpu)
string(JSON s_def GET "${manifest_multi}" fallback variant)
if(NOT g_h100 STREQUAL "NVIDIA H100 80GB HBM3" OR NOT g_a100 STREQUAL "NVIDIA A100-SXM4-80GB")
  message(FATAL_ERROR "the manifest's shapes are not in the tables' order:\n${manifest_multi}")
endif()
set(want "")
foreach(line "device 0: NVIDIA H100 80GB HBM3 -> ${s_h100}" "device 1: NVIDIA H100 80GB HBM3 -> ${s_h100}"
             "device 2: NVIDIA A100-SXM4-80GB -> ${s_a100}" "device 3: (template defaults) -> ${s_def}"
             "device 4: (template defaults) -> ${s_def}")
  string(APPEND want "${line} rc=0 last=0\n${line} rc=0 last=0\n")
endforeach()
string(APPEND want "L40S: (template defaults)\nH100 NVL: NVIDIA H100 80GB HBM3\n")
if(NOT got STREQUAL want)
  message(FATAL_ERROR "table choice differs:\n--- got\n${got}--- want\n${want}")
endif()
# KT_VERBOSE=1: one line per device, at its first call, saying why.
foreach(line "device 0 (NVIDIA H100 80GB HBM3, compute capability 9.0, 132 SMs, 3352 GB/s): its model's table"
             "device 1 (NVIDIA H100 PCIe, compute capability 9.0, 114 SMs, 2039 GB/s): the nearest table of its compute capability"
             "device 3 (NVIDIA B200, compute capability 10.0, 148 SMs, 8184 GB/s): no table of its compute capability, the template defaults"
             "device 4 (?, compute capability 0.0, 0 SMs, 0 GB/s): the device could not be queried, the template defaults")
  string(FIND "${verbose}" "kt: kt_multi on ${line}" at)
  if(at LESS 0)
    message(FATAL_ERROR "KT_VERBOSE=1 did not say\n  kt: kt_multi on ${line}\nit said:\n${verbose}")
  endif()
endforeach()
string(REGEX MATCHALL "kt: kt_multi on device" lines "${verbose}")
list(LENGTH lines n)
if(NOT n EQUAL 5)
  message(FATAL_ERROR "KT_VERBOSE=1 should say one line per device, once:\n${verbose}")
endif()
message("table choice as expected:\n${got}")
