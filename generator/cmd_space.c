/* cmd_space.c - `kt space`: the feasible configurations of a template at one shape, as an
 * aligned table or a JSON array of objects. */
#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "json.h"
#include "opt.h"
#include "space.h"
#include "tmpl.h"

static const char usage[] = "kt space TEMPLATE [--shape SPEC] [--type T=x]... [--json] [--limit N]";
static const char about[] =
	"Lists the configurations that satisfy every constraint at the shape, in enumeration order.\n"
	"--shape is required when the template declares shape symbols.";

/* A parameter's value as text: the number, true/false, or the choice's name. */
static void value_text(const kt_param *p, int v, char *out, size_t n)
{
	if (p->type == KT_PCHOICE)
		snprintf(out, n, "%s", p->choices[v]);
	else if (p->type == KT_PBOOL)
		snprintf(out, n, "%s", p->vals[v] ? "true" : "false");
	else
		snprintf(out, n, "%lld", (long long)p->vals[v]);
}

static size_t shown(const kt_space *s, long long limit)
{
	return (unsigned long long)limit < s->count ? (size_t)limit : s->count;
}

static void print_table(const kt_tmpl *t, const kt_space *s, long long limit)
{
	size_t n = shown(s, limit);
	int *w = kt_xcalloc((size_t)t->nparams + 1, sizeof *w);
	char v[128];
	for (int j = 0; j < t->nparams; j++) {
		w[j] = (int)strlen(t->params[j].name);
		for (int k = 0; k < t->params[j].nvals; k++) {
			value_text(&t->params[j], k, v, sizeof v);
			if ((int)strlen(v) > w[j])
				w[j] = (int)strlen(v);
		}
	}
	for (int j = 0; j < t->nparams; j++)
		printf("%s%-*s", j ? "  " : "", j + 1 < t->nparams ? w[j] : 0, t->params[j].name);
	putchar('\n');
	for (size_t i = 0; i < n; i++) {
		const uint16_t *cfg = kt_space_cfg(s, i);
		for (int j = 0; j < t->nparams; j++) {
			value_text(&t->params[j], cfg[j], v, sizeof v);
			printf("%s%-*s", j ? "  " : "", j + 1 < t->nparams ? w[j] : 0, v);
		}
		putchar('\n');
	}
	printf("(%zu of %zu feasible configurations shown; %.0f combinations)\n", n, s->count, kt_space_combinations(t));
	free(w);
}

static void print_json(const kt_tmpl *t, const kt_space *s, long long limit)
{
	cJSON *arr = cJSON_CreateArray();
	for (size_t i = 0, n = shown(s, limit); i < n; i++) {
		const uint16_t *cfg = kt_space_cfg(s, i);
		cJSON *o = cJSON_CreateObject();
		for (int j = 0; j < t->nparams; j++) {
			const kt_param *p = &t->params[j];
			if (p->type == KT_PCHOICE)
				cJSON_AddStringToObject(o, p->name, p->choices[cfg[j]]);
			else if (p->type == KT_PBOOL)
				cJSON_AddBoolToObject(o, p->name, p->vals[cfg[j]] != 0);
			else
				cJSON_AddNumberToObject(o, p->name, (double)p->vals[cfg[j]]);
		}
		cJSON_AddItemToArray(arr, o);
	}
	char *text = kt_json_text(arr, 1);
	puts(text);
	free(text);
	cJSON_Delete(arr);
}

/* Parses the shape (or takes the empty one) and enumerates. */
static int list_space(const kt_tmpl *t, const char *spec, int json, long long limit, kt_err *err)
{
	int64_t shape[KT_MAX_SLOTS] = {0};
	kt_err e = {0};
	if (!spec && t->nshapes > 0)
		return kt_fail(err, "--shape is required: the template declares %d shape symbol%s", t->nshapes,
			       t->nshapes == 1 ? "" : "s");
	if (spec && kt_tmpl_parse_shape(t, spec, shape, &e) != 0)
		return kt_fail(err, "--shape '%s': %s", spec, e.msg);
	kt_space s;
	if (kt_space_enum(t, shape, &s, err) != 0)
		return -1;
	if (json)
		print_json(t, &s, limit);
	else
		print_table(t, &s, limit);
	kt_space_free(&s);
	return 0;
}

int kt_cmd_space(int argc, char **argv)
{
	kt_strlist types = {0};
	const char *arch = NULL;
	const char *shape = NULL;
	int json = 0;
	long long limit = LLONG_MAX;
	const kt_opt opts[] = {
		{"shape", KT_OPT_STR, &shape, "SPEC", "the shape, e.g. rows=4096,hidden=4096"},
		{"type", KT_OPT_LIST, &types, "T=x", "choose a type symbol or an option, e.g. T=bfloat16 or LSE=base2 (repeatable)"},
		{"arch", KT_OPT_STR, &arch, "CC", "the compile target the constraints see (sm, sm_a), e.g. 90 or 90a"},
		{"json", KT_OPT_FLAG, &json, NULL, "print a JSON array of {parameter: value} objects"},
		{"limit", KT_OPT_INT, &limit, "N", "show at most N configurations"},
		{0},
	};
	const char *pos[1];
	int npos, rc;
	kt_err err = {0};
	kt_buf diags = {0};
	kt_tmpl *t = NULL;
	if ((rc = kt_opt_begin("space", opts, argc, argv, pos, 1, &npos, usage, about)) >= 0)
		goto out;
	rc = 0;
	if (npos != 1)
		rc = kt_fail(&err, "no template given (usage: %s)", usage);
	if (rc == 0 && limit < 0)
		rc = kt_fail(&err, "--limit %lld: must not be negative", limit);
	if (rc == 0)
		rc = kt_arch_check(arch, &err);
	if (rc == 0) {
		kt_tmpl_opts to = {.types = types.v, .ntypes = types.n, .arch = arch};
		t = kt_tmpl_parse(pos[0], &to, &diags, &err);
		rc = t ? 0 : -1;
	}
	if (rc == 0)
		rc = list_space(t, shape, json, limit, &err);
	rc = rc == 0 ? KT_EXIT_OK : kt_opt_fail("space", &diags, &err);
out:
	kt_tmpl_free(t);
	kt_buf_free(&diags);
	kt_strlist_free(&types);
	return rc;
}
