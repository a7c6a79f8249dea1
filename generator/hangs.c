/* hangs.c - see hangs.h. */
#include "hangs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MIXED = 0xffff }; /* the timed-out configurations differ at this parameter */

struct kt_hangs {
	const kt_tmpl *t;
	int nhung;
	uint16_t *common;     /* per parameter: the value every timed-out configuration holds, or MIXED */
	unsigned char **ran;  /* per parameter and value: a configuration holding it ran to its end */
};

kt_hangs *kt_hangs_new(const kt_tmpl *t)
{
	kt_hangs *h = kt_xcalloc(1, sizeof *h);
	h->t = t;
	h->common = kt_xcalloc((size_t)t->nparams + 1, sizeof *h->common);
	h->ran = kt_xcalloc((size_t)t->nparams + 1, sizeof *h->ran);
	for (int p = 0; p < t->nparams; p++)
		h->ran[p] = kt_xcalloc((size_t)t->params[p].nvals + 1, 1);
	return h;
}

void kt_hangs_saw(kt_hangs *h, const uint16_t *cfg, kt_status st)
{
	if (!h)
		return;
	if (st == KT_TIMED_OUT) {
		for (int p = 0; p < h->t->nparams; p++)
			h->common[p] = h->nhung == 0 || h->common[p] == cfg[p] ? cfg[p] : MIXED;
		h->nhung++;
	} else if (st == KT_OK || st == KT_CHECK_FAILED || st == KT_FAULTED) {
		for (int p = 0; p < h->t->nparams; p++)
			h->ran[p][cfg[p]] = 1;
	}
}

/* Parameter p's pair is taken for the cause. */
static int cause(const kt_hangs *h, int p) { return h->common[p] != MIXED && !h->ran[p][h->common[p]]; }

int kt_hangs_hold(const kt_hangs *h, const uint16_t *cfg, char *why, size_t whysz)
{
	if (!h || h->nhung < KT_HANGS_MIN)
		return 0;
	int any = 0;
	for (int p = 0; p < h->t->nparams; p++) {
		if (!cause(h, p))
			continue;
		if (cfg[p] != h->common[p])
			return 0;
		any = 1;
	}
	if (!any)
		return 0;
	kt_buf b = {0}, v = {0};
	for (int p = 0; p < h->t->nparams; p++)
		if (cause(h, p)) {
			const kt_param *pa = &h->t->params[p];
			kt_buf_reset(&v);
			kt_tmpl_format_value(pa, cfg[p], &v);
			kt_buf_printf(&b, "%s%s=%s", b.len ? ", " : "", pa->name, kt_buf_str(&v));
		}
	snprintf(why, whysz, "the %d configurations that timed out at this shape all hold %s, which none that ran to its end "
			     "held", h->nhung, kt_buf_str(&b));
	kt_buf_free(&b);
	kt_buf_free(&v);
	return 1;
}

void kt_hangs_free(kt_hangs *h)
{
	if (!h)
		return;
	for (int p = 0; p < h->t->nparams; p++)
		free(h->ran[p]);
	free(h->ran);
	free(h->common);
	free(h);
}
