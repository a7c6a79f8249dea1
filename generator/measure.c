/* measure.c - the measurement settings, their words and the one rule for keys (see measure.h). */
#include "measure.h"

#include <string.h>

static const char *const l2_values[] = {"cold", "warm"};
static const char *const l2_words[] = {"cold L2", "warm L2"};
static const char *const launch_values[] = {"stream", "graph"};
static const char *const launch_words[] = {"stream launches", "CUDA-graph replays"};

const kt_measure_info kt_measure_infos[KT_NMEASURE] = {
	[KT_MEASURE_L2] = {"l2", "L2 state", l2_values, 2, l2_words, "L2 as the old worker left it"},
	[KT_MEASURE_LAUNCH] = {"launch", "launch mode", launch_values, 2, launch_words, "stream launches"},
};

static const char FIELD_PREFIX[] = "measure."; /* a key field's and a worker field's name: measure.l2 */

int kt_measure_value(kt_measure_setting s, const char *word, size_t n)
{
	const kt_measure_info *in = &kt_measure_infos[s];
	for (int i = 0; i < in->nvalues; i++)
		if (strlen(in->values[i]) == n && !memcmp(in->values[i], word, n))
			return i;
	return -1;
}

void kt_measure_values(kt_measure_setting s, kt_buf *out)
{
	const kt_measure_info *in = &kt_measure_infos[s];
	for (int i = 0; i < in->nvalues; i++)
		kt_buf_printf(out, "%s%s", i == 0 ? "" : i + 1 < in->nvalues ? ", " : " or ", in->values[i]);
}

int kt_measure_set(kt_measure *m, kt_measure_setting s, const char *word, kt_err *err)
{
	int v = kt_measure_value(s, word, strlen(word));
	if (v < 0) {
		kt_buf want = {0};
		kt_measure_values(s, &want);
		kt_fail(err, "unknown %s '%s' (expected %s)", kt_measure_infos[s].what, word, kt_buf_str(&want));
		kt_buf_free(&want);
		return -1;
	}
	m->v[s] = v;
	return 0;
}

void kt_measure_unset(kt_measure *m)
{
	for (int s = 0; s < KT_NMEASURE; s++)
		m->v[s] = KT_MEASURE_UNSET;
}

void kt_measure_resolve(const kt_measure *given, const kt_measure *tmpl, kt_measure *out)
{
	for (int s = 0; s < KT_NMEASURE; s++) {
		int v = given ? given->v[s] : KT_MEASURE_UNSET;
		if (v == KT_MEASURE_UNSET && tmpl)
			v = tmpl->v[s];
		out->v[s] = v == KT_MEASURE_UNSET ? 0 : v;
	}
}

void kt_measure_fields(const kt_measure *m, char sep, kt_buf *out)
{
	for (int s = 0; s < KT_NMEASURE; s++)
		if (m->v[s] > 0 && m->v[s] < kt_measure_infos[s].nvalues) /* the default (0) is no field */
			kt_buf_printf(out, "%s%s=%s%c", FIELD_PREFIX, kt_measure_infos[s].name,
				      kt_measure_infos[s].values[m->v[s]], sep);
}

int kt_measure_field(kt_measure *m, const char *text, kt_err *err)
{
	size_t np = sizeof FIELD_PREFIX - 1;
	if (strncmp(text, FIELD_PREFIX, np) != 0)
		return 0;
	const char *name = text + np, *eq = strchr(name, '=');
	for (int s = 0; eq && s < KT_NMEASURE; s++)
		if (strlen(kt_measure_infos[s].name) == (size_t)(eq - name) && !memcmp(name, kt_measure_infos[s].name, (size_t)(eq - name)))
			return kt_measure_set(m, (kt_measure_setting)s, eq + 1, err) ? -1 : 1;
	return kt_fail(err, "'%s' is no measurement setting (expected measure.l2=... or measure.launch=...)", text);
}

void kt_measure_describe(const kt_measure *m, kt_buf *out)
{
	for (int s = 0; s < KT_NMEASURE; s++) {
		const kt_measure_info *in = &kt_measure_infos[s];
		int v = m->v[s];
		kt_buf_printf(out, "%s%s", s ? ", " : "", v >= 0 && v < in->nvalues ? in->words[v] : in->unknown);
	}
}
