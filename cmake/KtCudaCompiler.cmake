# KtCudaCompiler.cmake: finds nvcc where the CUDA Toolkit installs it by default.
#
#   include(KtCudaCompiler)   # before project(... CUDA), enable_language(CUDA) or check_language(CUDA)
#
# NVIDIA's installers put the toolkit in /usr/local/cuda and leave PATH alone, and CMake looks for
# nvcc only in CMAKE_CUDA_COMPILER, $CUDACXX, PATH and $CUDA_PATH/bin.  Where none of them names
# one, this sets the cache variable CMAKE_CUDA_COMPILER to /usr/local/cuda/bin/nvcc when that
# exists, so that a fresh machine with the toolkit configures as it is.  A compiler named any of
# those ways is left alone.
include_guard(GLOBAL)

function(_kt_default_cuda_compiler)
  if(DEFINED CMAKE_CUDA_COMPILER OR DEFINED ENV{CUDACXX})
    return()
  endif()
  set(hints "")
  if(DEFINED ENV{CUDA_PATH})
    set(hints HINTS "$ENV{CUDA_PATH}/bin")
  endif()
  find_program(nvcc nvcc ${hints} NO_CACHE)
  set(default /usr/local/cuda/bin/nvcc)
  if(NOT nvcc AND EXISTS "${default}")
    set(CMAKE_CUDA_COMPILER "${default}" CACHE FILEPATH "CUDA compiler")
    message(STATUS "kt: nvcc is not on PATH; using ${default}")
  endif()
endfunction()
_kt_default_cuda_compiler()
