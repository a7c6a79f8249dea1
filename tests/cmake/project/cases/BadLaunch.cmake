kt_add_tuned_kernel(fixture_app NAME scale TEMPLATE scale.cu.tmpl SHAPES n=1024 LAUNCH graphs)
