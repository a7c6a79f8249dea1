/* cmd_check.c - `kt check`: validate a template; count combinations and, per shape, the
 * feasible configurations, and check that the default configuration fits every shape. */
#include <stdio.h>
#include <stdlib.h>

#include "cmd.h"
#include "opt.h"
#include "space.h"
#include "tmpl.h"

static const char usage[] = "kt check TEMPLATE [--shape SPEC]... [--type T=x]... [--config P=V,...]";
static const char about[] =
	"Parses the template and reports its parameters, constraints and number of combinations;\n"
	"for each --shape, the number of feasible configurations and whether the default fits\n"
	"(or the configuration given with --config, and which constraint it violates).\n"
	"Exit status 1 when the template is invalid, or when a shape has no feasible configuration\n"
	"or the default (the configuration) violates a constraint there (kt generate would refuse it).";

/* Checks one shape; prints its line.  cfg: the configuration to check, NULL for the default.
 * 0 when fine, -1 with err for a bad shape. */
static int check_shape(const kt_tmpl *t, const char *spec, const uint16_t *cfg, kt_err *err)
{
	int64_t shape[KT_MAX_SLOTS];
	kt_err e = {0};
	if (kt_tmpl_parse_shape(t, spec, shape, &e) != 0)
		return kt_fail(err, "--shape '%s': %s", spec, e.msg);
	long long n = kt_space_walk(t, shape, NULL, NULL, err);
	if (n < 0)
		return -1;
	uint16_t def[KT_MAX_SLOTS];
	kt_val env[KT_MAX_SLOTS];
	const char *what = cfg ? "configuration" : "default";
	if (!cfg)
		kt_tmpl_default_config(t, def);
	kt_tmpl_env(t, shape, cfg ? cfg : def, env);
	int r = kt_tmpl_violated(t, env);
	kt_buf sh = {0}, cf = {0};
	kt_tmpl_format_shape(t, shape, &sh);
	kt_tmpl_format_config(t, cfg ? cfg : def, &cf);
	printf("shape %s: %lld feasible configuration%s; %s (%s) %s\n", kt_buf_str(&sh), n, n == 1 ? "" : "s", what,
	       kt_buf_str(&cf), r < 0 ? "is feasible" : "violates a constraint");
	int rc = 0;
	if (r >= 0 && (cfg || n > 0)) /* a given configuration's reason is what was asked, even with none left */
		rc = kt_fail(err, "%s:%d:%d: the %s configuration violates '%s' at shape %s", t->path, t->req_loc[r].line,
			     t->req_loc[r].col, cfg ? "given" : "default", t->req_text[r], kt_buf_str(&sh));
	else if (n == 0)
		rc = kt_fail(err, "shape %s: no configuration satisfies the constraints", kt_buf_str(&sh));
	kt_buf_free(&sh);
	kt_buf_free(&cf);
	return rc;
}

static void print_summary(const kt_tmpl *t)
{
	char options[32] = ""; /* only templates that declare options say how many */
	if (t->noptions)
		snprintf(options, sizeof options, ", %d option%s", t->noptions, t->noptions == 1 ? "" : "s");
	printf("%s: kernel %s: %d shape symbol%s, %d parameter%s, %d type symbol%s%s, %d constraint%s, %.0f combinations\n",
	       t->path, t->kernel, t->nshapes, t->nshapes == 1 ? "" : "s", t->nparams, t->nparams == 1 ? "" : "s",
	       t->ntypes, t->ntypes == 1 ? "" : "s", options, t->nreq, t->nreq == 1 ? "" : "s", kt_space_combinations(t));
}

int kt_cmd_check(int argc, char **argv)
{
	kt_strlist shapes = {0}, types = {0};
	const char *arch = NULL, *config = NULL;
	const kt_opt opts[] = {
		{"shape", KT_OPT_LIST, &shapes, "SPEC", "a shape to check, e.g. rows=4096,hidden=4096 (repeatable)"},
		{"type", KT_OPT_LIST, &types, "T=x", "choose a type symbol or an option, e.g. T=bfloat16 or LSE=base2 (repeatable)"},
		{"arch", KT_OPT_STR, &arch, "CC", "the compile target the constraints see (sm, sm_a), e.g. 90 or 90a"},
		{"config", KT_OPT_STR, &config, "P=V,...", "check this configuration (every parameter given) instead of the default"},
		{0},
	};
	const char *pos[1];
	int npos, rc;
	kt_err err = {0};
	kt_buf diags = {0};
	kt_tmpl *t = NULL;
	if ((rc = kt_opt_begin("check", opts, argc, argv, pos, 1, &npos, usage, about)) >= 0)
		goto out;
	rc = 0;
	if (npos != 1)
		rc = kt_fail(&err, "no template given (usage: %s)", usage);
	if (rc == 0)
		rc = kt_arch_check(arch, &err);
	if (rc == 0) {
		kt_tmpl_opts to = {.types = types.v, .ntypes = types.n, .arch = arch};
		t = kt_tmpl_parse(pos[0], &to, &diags, &err);
		rc = t ? 0 : -1;
	}
	uint16_t cfg[KT_MAX_SLOTS];
	if (rc == 0 && config) {
		kt_err e = {0};
		if (kt_tmpl_parse_config(t, config, cfg, &e) != 0)
			rc = kt_fail(&err, "--config '%s': %s", config, e.msg);
	}
	if (rc == 0)
		print_summary(t);
	for (int i = 0; rc == 0 && i < shapes.n; i++)
		rc = check_shape(t, shapes.v[i], config ? cfg : NULL, &err);
	rc = rc == 0 ? KT_EXIT_OK : kt_opt_fail("check", &diags, &err);
out:
	kt_tmpl_free(t);
	kt_buf_free(&diags);
	kt_strlist_free(&shapes);
	kt_strlist_free(&types);
	return rc;
}
