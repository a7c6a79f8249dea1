kt_add_tuned_kernel(fixture_app NAME scale TEMPLATE malformed.cu.tmpl SHAPES n=1024)
