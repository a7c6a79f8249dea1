/* problem.c - the tuning problem (see problem.h). */
#include "problem.h"

#include <string.h>

void kt_problem_label(const kt_problem *p, kt_buf *out)
{
	kt_buf_printf(out, "%s ", p->tmpl->kernel);
	kt_tmpl_format_shape(p->tmpl, p->shape, out);
}

const char **kt_toolchain_flag_words(const kt_toolchain *tc, char **words, int *n)
{
	*words = kt_xstrdup(tc && tc->flags ? tc->flags : "");
	const char **v = kt_xcalloc(strlen(*words) / 2 + 2, sizeof *v);
	*n = 0;
	for (char *save = NULL, *w = strtok_r(*words, " \t", &save); w; w = strtok_r(NULL, " \t", &save))
		v[(*n)++] = w;
	return v;
}
