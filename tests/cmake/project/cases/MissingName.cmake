kt_add_tuned_kernel(fixture_app TEMPLATE scale.cu.tmpl SHAPES n=1024)
