/* result.c - names of evaluation outcomes and release of tuning results (see result.h). */
#include "result.h"

#include <stdlib.h>
#include <string.h>

const char *const kt_status_names[KT_NSTATUS] = {
	[KT_OK] = "ok",
	[KT_COMPILE_FAILED] = "compile-failed",
	[KT_OVER_LIMITS] = "over-limits",
	[KT_CHECK_FAILED] = "check-failed",
	[KT_FAULTED] = "faulted",
	[KT_TIMED_OUT] = "timed-out",
};

int kt_status_named(const char *name)
{
	for (int i = 0; name && i < KT_NSTATUS; i++)
		if (!strcmp(name, kt_status_names[i]))
			return i;
	return -1;
}

void kt_tune_result_free(kt_tune_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nevals; i++) {
		free(r->evals[i].cfg);
		free(r->evals[i].msg);
	}
	free(r->evals);
	r->evals = NULL;
	r->nevals = 0;
	r->best = -1;
}
