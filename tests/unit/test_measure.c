/* test_measure.c - the measurement settings: their words, how a command's and a template's
 * settings combine, the one rule for key (and worker) fields, reading a field back, and how a
 * record's settings read for people, also a record of the old worker that has none. */
#include <string.h>

#include "check.h"
#include "measure.h"

static void test_words(void)
{
	kt_measure m;
	kt_err err = {0};
	kt_measure_unset(&m);
	CHECK_INT(m.v[KT_MEASURE_L2], KT_MEASURE_UNSET);
	CHECK_INT(kt_measure_set(&m, KT_MEASURE_L2, "warm", &err), 0);
	CHECK_INT(m.v[KT_MEASURE_L2], KT_L2_WARM);
	CHECK_INT(kt_measure_set(&m, KT_MEASURE_LAUNCH, "graph", &err), 0);
	CHECK_INT(m.v[KT_MEASURE_LAUNCH], KT_LAUNCH_GRAPH);
	CHECK_INT(kt_measure_set(&m, KT_MEASURE_L2, "hot", &err), -1);
	CHECK_STR(err.msg, "unknown L2 state 'hot' (expected cold or warm)");
	CHECK_INT(err.cls, KT_E_INPUT);
	CHECK_INT(kt_measure_set(&m, KT_MEASURE_LAUNCH, "Graph", &err), -1); /* words are exact */
	CHECK_STR(err.msg, "unknown launch mode 'Graph' (expected stream or graph)");
	CHECK_INT(m.v[KT_MEASURE_L2], KT_L2_WARM); /* a failed set changes nothing */
	CHECK_INT(kt_measure_value(KT_MEASURE_L2, "coldest", 4), KT_L2_COLD);
	CHECK_INT(kt_measure_value(KT_MEASURE_L2, "col", 3), -1);
	/* the defaults come first, so a zeroed kt_measure is the defaults */
	for (int s = 0; s < KT_NMEASURE; s++)
		CHECK(kt_measure_infos[s].nvalues >= 2 && kt_measure_infos[s].values[0] != NULL);
	CHECK_STR(kt_measure_infos[KT_MEASURE_L2].values[0], "cold");
	CHECK_STR(kt_measure_infos[KT_MEASURE_LAUNCH].values[0], "stream");
}

/* The command's setting, else the template's, else the default. */
static void test_resolve(void)
{
	kt_measure given, tmpl, out;
	kt_measure_unset(&given);
	kt_measure_unset(&tmpl);
	kt_measure_resolve(&given, &tmpl, &out);
	CHECK(out.v[KT_MEASURE_L2] == KT_L2_COLD && out.v[KT_MEASURE_LAUNCH] == KT_LAUNCH_STREAM);
	tmpl.v[KT_MEASURE_L2] = KT_L2_WARM;
	tmpl.v[KT_MEASURE_LAUNCH] = KT_LAUNCH_GRAPH;
	kt_measure_resolve(&given, &tmpl, &out);
	CHECK(out.v[KT_MEASURE_L2] == KT_L2_WARM && out.v[KT_MEASURE_LAUNCH] == KT_LAUNCH_GRAPH);
	given.v[KT_MEASURE_L2] = KT_L2_COLD; /* given explicitly: it wins over the template */
	kt_measure_resolve(&given, &tmpl, &out);
	CHECK(out.v[KT_MEASURE_L2] == KT_L2_COLD && out.v[KT_MEASURE_LAUNCH] == KT_LAUNCH_GRAPH);
	kt_measure_resolve(NULL, NULL, &out);
	CHECK(out.v[KT_MEASURE_L2] == KT_L2_COLD && out.v[KT_MEASURE_LAUNCH] == KT_LAUNCH_STREAM);
}

/* A setting at its default is no field; the others are, in the settings' order. */
static void test_fields(void)
{
	kt_measure m = {{0}};
	kt_buf b = {0};
	kt_measure_fields(&m, '\n', &b);
	CHECK_INT(b.len, 0);
	m.v[KT_MEASURE_LAUNCH] = KT_LAUNCH_GRAPH;
	kt_measure_fields(&m, '\n', &b);
	CHECK_STR(kt_buf_str(&b), "measure.launch=graph\n");
	kt_buf_reset(&b);
	m.v[KT_MEASURE_L2] = KT_L2_WARM;
	kt_measure_fields(&m, '\t', &b);
	CHECK_STR(kt_buf_str(&b), "measure.l2=warm\tmeasure.launch=graph\t");
	kt_buf_free(&b);

	/* read back, as the worker reads its problem line */
	kt_measure r = {{0}};
	kt_err err = {0};
	CHECK_INT(kt_measure_field(&r, "measure.l2=warm", &err), 1);
	CHECK_INT(kt_measure_field(&r, "measure.launch=graph", &err), 1);
	CHECK(r.v[KT_MEASURE_L2] == KT_L2_WARM && r.v[KT_MEASURE_LAUNCH] == KT_LAUNCH_GRAPH);
	CHECK_INT(kt_measure_field(&r, "T=half", &err), 0); /* a type choice, not a setting */
	CHECK_INT(kt_measure_field(&r, "l2=warm", &err), 0);
	CHECK_INT(kt_measure_field(&r, "measure.l2=lukewarm", &err), -1);
	CHECK_STR(err.msg, "unknown L2 state 'lukewarm' (expected cold or warm)");
	CHECK_INT(kt_measure_field(&r, "measure.clock=boost", &err), -1);
	CHECK(strstr(err.msg, "'measure.clock=boost' is no measurement setting") != NULL);
	CHECK_INT(kt_measure_field(&r, "measure.l2", &err), -1);
}

static void test_describe(void)
{
	kt_measure m = {{0}};
	kt_buf b = {0};
	kt_measure_describe(&m, &b);
	CHECK_STR(kt_buf_str(&b), "cold L2, stream launches");
	kt_buf_reset(&b);
	m.v[KT_MEASURE_L2] = KT_L2_WARM;
	m.v[KT_MEASURE_LAUNCH] = KT_LAUNCH_GRAPH;
	kt_measure_describe(&m, &b);
	CHECK_STR(kt_buf_str(&b), "warm L2, CUDA-graph replays");
	kt_buf_reset(&b);
	kt_measure_unset(&m); /* a record of the old worker */
	kt_measure_describe(&m, &b);
	CHECK_STR(kt_buf_str(&b), "L2 as the old worker left it, stream launches");
	kt_buf_free(&b);
}

int main(void)
{
	test_words();
	test_resolve();
	test_fields();
	test_describe();
	return check_done();
}
