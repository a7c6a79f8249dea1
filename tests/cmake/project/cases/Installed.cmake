# The good call, and a kernel from the templates that ship with kt (KT_TEMPLATES_DIR), called the
# way a project that uses an installed kt calls it (the .deb test).
include("${CMAKE_CURRENT_LIST_DIR}/Scale.cmake")
kt_add_tuned_kernel(fixture_kernels
  NAME rmsnorm
  TEMPLATE "${KT_TEMPLATES_DIR}/rmsnorm.cu.tmpl"
  TYPES T=half
  SHAPES "rows=16,hidden=4096")
