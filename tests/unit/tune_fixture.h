/* tune_fixture.h - what the tuning loop's tests share (test_tune.c, test_tune_units.c): the
 * fake GPU's options, the fake compiler as the toolchain, templates written and parsed, a shape
 * tuned, and an evaluation found by its configuration. */
#ifndef KT_TUNE_FIXTURE_H
#define KT_TUNE_FIXTURE_H

#include <stdio.h>
#include <string.h>

#include "check.h"
#include "tune.h"

static inline kt_tmpl *parse(void)
{
	kt_buf diags = {0};
	kt_err err = {0};
	kt_tmpl *t = kt_tmpl_parse(KT_FAKE_DIR "/scale.cu.tmpl", NULL, &diags, &err);
	if (!t)
		fprintf(stderr, "%s\n%s\n", kt_buf_str(&diags), err.msg);
	kt_buf_free(&diags);
	return t;
}

/* The fake GPU's "scale" kernel (gpu_fake.h), one element a thread: the annotations that follow
 * a template's parameters, and its code, for the templates the tests write. */
#define SCALE_ANNOTATIONS                                             \
	"// @kt arg       out float[n] out\n"                         \
	"// @kt arg       x   float[n] in fill uniform(-2, 2)\n"      \
	"// @kt arg       n   int = n\n"                              \
	"// @kt grid      cdiv(n, BLOCK)\n"                           \
	"// @kt block     BLOCK\n"                                    \
	"// @kt bytes     8 * n\n"                                    \
	"// @kt tolerance 1e-6\n"
#define SCALE_CODE                                                    \
	"#ifndef BLOCK\n#define BLOCK 128\n#endif\n"                   \
	"__global__ void scale(float *out, const float *x, int n)\n"  \
	"{\n"                                                         \
	"\tint i = blockIdx.x * BLOCK + threadIdx.x;\n"               \
	"\tif (i < n)\n"                                              \
	"\t\tout[i] = 2.0f * x[i];\n"                                 \
	"}\n"

static kt_ceilings kept_ceilings;
static const kt_toolchain fake_tc = {KT_FAKE_DIR "/fake_nvcc.py", "", "", ""};

static inline kt_tune_opts fake_opts(const char *workdir)
{
	kt_tune_opts o = {0};
	o.backend = "fake";
	o.exe = KT_EXE;
	o.timeout_s = 1.0;
	o.jobs = 2;
	o.batch = 8;
	o.seed = 7;
	o.workdir = workdir;
	o.ceilings = &kept_ceilings;
	o.near_floor = -1;
	return o;
}

/* Writes a template's text src[0..len) to dir/name and parses it: NULL (a failed check, the
 * diagnostics on stderr) when it does not parse. */
static inline kt_tmpl *write_template(const char *dir, const char *name, const char *src, size_t len)
{
	char path[600];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	kt_buf diags = {0};
	kt_err err = {0};
	CHECK_INT(kt_write_atomic(path, src, len, &err), 0);
	kt_tmpl *t = kt_tmpl_parse(path, NULL, &diags, &err);
	CHECK(t != NULL);
	if (!t)
		fprintf(stderr, "%s\n%s\n", kt_buf_str(&diags), err.msg);
	kt_buf_free(&diags);
	return t;
}

static inline int tune(const kt_tmpl *t, const int64_t *shape, const kt_tune_opts *o, kt_tune_result *r, kt_err *err)
{
	kt_problem p = {.tmpl = t, .shape = shape, .target = NULL, .tc = &fake_tc};
	return kt_tune(&p, o, r, err);
}

static inline const kt_eval *find(const kt_tmpl *t, const kt_tune_result *r, const char *spec)
{
	uint16_t cfg[KT_MAX_SLOTS];
	kt_err err = {0};
	if (kt_tmpl_parse_config(t, spec, cfg, &err))
		return NULL;
	for (size_t i = 0; i < r->nevals; i++)
		if (!memcmp(r->evals[i].cfg, cfg, (size_t)t->nparams * sizeof *cfg))
			return &r->evals[i];
	return NULL;
}

static inline int status_of(const kt_tmpl *t, const kt_tune_result *r, const char *spec)
{
	const kt_eval *e = find(t, r, spec);
	return e ? (int)e->status : -1;
}

#endif
