/* result.c - names of evaluation outcomes and release of tuning results (see result.h). */
#include "result.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const kt_status_names[KT_NSTATUS] = {
	[KT_OK] = "ok",
	[KT_COMPILE_FAILED] = "compile-failed",
	[KT_OVER_LIMITS] = "over-limits",
	[KT_CHECK_FAILED] = "check-failed",
	[KT_FAULTED] = "faulted",
	[KT_TIMED_OUT] = "timed-out",
	[KT_NOT_RUN] = "not-run",
};

const char *const kt_status_causes[KT_NSTATUS] = {
	[KT_OK] = "passed",
	[KT_COMPILE_FAILED] = "do not compile",
	[KT_OVER_LIMITS] = "exceed a limit",
	[KT_CHECK_FAILED] = "wrong result",
	[KT_FAULTED] = "launch error",
	[KT_TIMED_OUT] = "timeout",
	[KT_NOT_RUN] = "not run, like ones that hung",
};

size_t kt_failures_format(const size_t counts[KT_NSTATUS], char *out, size_t outsz)
{
	size_t failed = 0, len = 0;
	for (int s = 0; s < KT_NSTATUS; s++)
		failed += s != KT_OK ? counts[s] : 0;
	len += (size_t)snprintf(out, outsz, "%zu failed", failed);
	for (int s = 0, first = 1; failed && s < KT_NSTATUS; s++)
		if (s != KT_OK && counts[s] && len < outsz) {
			len += (size_t)snprintf(out + len, outsz - len, "%s%zu %s", first ? " (" : ", ", counts[s], kt_status_causes[s]);
			first = 0;
		}
	if (failed && len < outsz)
		snprintf(out + len, outsz - len, ")");
	return failed;
}

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
	free(r->retimed);
	r->evals = NULL;
	r->retimed = NULL;
	r->nevals = r->nretimed = 0;
	r->best = -1;
}

double kt_result_chosen_us(const kt_tune_result *r)
{
	if (r->best < 0 || (size_t)r->best >= r->nevals)
		return 0;
	for (size_t i = 0; i < r->nretimed; i++)
		if (r->retimed[i].eval == r->best && r->retimed[i].us > 0)
			return r->retimed[i].us;
	return r->evals[r->best].median_us;
}
