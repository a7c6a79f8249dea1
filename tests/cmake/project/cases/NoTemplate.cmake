kt_add_tuned_kernel(fixture_app NAME scale TEMPLATE no_such.cu.tmpl SHAPES n=1024)
