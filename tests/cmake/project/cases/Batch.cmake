# Two kernels in two directories: one kt generate run for both, at the end of the configure; each
# kernel's sources go to its own target.
add_library(fixture_kernels STATIC)
kt_add_tuned_kernel(fixture_kernels NAME scale TEMPLATE scale.cu.tmpl SHAPES n=1024 n=65536)
target_sources(fixture_app PRIVATE scale_from_cxx.cpp)
target_link_libraries(fixture_app PRIVATE fixture_kernels)
add_subdirectory(batch_sub)
target_link_libraries(fixture_app PRIVATE sub_kernels)
