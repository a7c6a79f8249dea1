kt_add_tuned_kernel(fixture_app NAME scale TEMPLATE scale.cu.tmpl SHAPES m=1024)
