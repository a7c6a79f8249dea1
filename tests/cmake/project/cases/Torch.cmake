# A kernel of kt's library in a project built as a PyTorch extension is: its CUDA flags carry the
# -gencode flags that find_package(Torch) adds (the test passes them), CMAKE_CUDA_ARCHITECTURES
# is off.  The shapes are those of kt's committed NVIDIA H200 records.
set_target_properties(fixture_app PROPERTIES SOURCES torch_main.cu)
kt_add_tuned_kernel(fixture_app NAME rmsnorm TEMPLATE ${KT_TEMPLATES_DIR}/rmsnorm.cu.tmpl TYPES T=bfloat16
  SHAPES "rows=16,hidden=4096" "rows=2048,hidden=8192" PROJECT_CACHE ${KT_PROJECT_CACHE})
