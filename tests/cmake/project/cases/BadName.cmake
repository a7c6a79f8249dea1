kt_add_tuned_kernel(fixture_app NAME 2-scale TEMPLATE scale.cu.tmpl SHAPES n=1024)
