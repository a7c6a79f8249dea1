# The good call, on a library: its users see kt_scale.h through its PUBLIC include directories,
# from CUDA (main.cu) and from C++ (scale_from_cxx.cpp, compiled by the host compiler).
add_library(fixture_kernels STATIC)
kt_add_tuned_kernel(fixture_kernels NAME scale TEMPLATE scale.cu.tmpl SHAPES n=1024 n=65536)
target_sources(fixture_app PRIVATE scale_from_cxx.cpp)
target_link_libraries(fixture_app PRIVATE fixture_kernels)
