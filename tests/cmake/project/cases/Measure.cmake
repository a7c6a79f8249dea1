# L2 and LAUNCH: how a kernel's misses are timed, handed to kt generate; a kernel without them
# leaves it to the template (scale_plain).
kt_add_tuned_kernel(fixture_app NAME scale TEMPLATE scale.cu.tmpl SHAPES n=1024 L2 warm LAUNCH graph)
kt_add_tuned_kernel(fixture_app NAME scale_plain TEMPLATE scale.cu.tmpl SHAPES n=1024)
