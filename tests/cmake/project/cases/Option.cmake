# A template's option through TYPES: the library's merge_attn_states with its log-sum-exps in
# natural log (the default) and in base 2 (LSE=base2), checked by option_app (option_main.cu).
kt_add_tuned_kernel(fixture_app NAME scale TEMPLATE scale.cu.tmpl SHAPES n=1024) # fixture_app's own
target_sources(fixture_app PRIVATE scale_from_cxx.cpp)
add_executable(option_app option_main.cu)
kt_add_tuned_kernel(option_app NAME mas_e TEMPLATE ${KT_TEMPLATES_DIR}/merge_attn_states.cu.tmpl
  TYPES T=bfloat16 SHAPES "tokens=64,heads=8,dim=128")
kt_add_tuned_kernel(option_app NAME mas_2 TEMPLATE ${KT_TEMPLATES_DIR}/merge_attn_states.cu.tmpl
  TYPES T=bfloat16 LSE=base2 SHAPES "tokens=64,heads=8,dim=128")
