add_library(fixture_lib STATIC)
kt_add_tuned_kernel(fixture_app NAME scale TEMPLATE scale.cu.tmpl SHAPES n=1024)
kt_add_tuned_kernel(fixture_lib NAME scale TEMPLATE scale.cu.tmpl SHAPES n=2048)
