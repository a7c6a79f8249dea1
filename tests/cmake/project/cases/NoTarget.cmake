kt_add_tuned_kernel(no_such_app NAME scale TEMPLATE scale.cu.tmpl SHAPES n=1024)
