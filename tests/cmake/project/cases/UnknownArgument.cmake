kt_add_tuned_kernel(fixture_app NAME scale OUTPUTDIR there TEMPLATE scale.cu.tmpl SHAPES n=1024)
