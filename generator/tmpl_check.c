/* tmpl_check.c - the template parser's steps around its passes (tmpl.c): the caller's choices of
 * types and options after pass 1, the checks across directives after pass 2, and what the parse
 * reads from the code itself (its local headers, the parameters it names).
 */
#include "tmpl_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cusrc.h"

/* ---- the caller's choices ---- */

/* A caller's choice "T=x" for type symbol k. */
static void choose_type(pctx *pc, int k, const char *o, const char *v)
{
	kt_typesym *ts = &pc->types[k];
	int e = tp_find_etype(v, strlen(v)), ok = 0;
	for (int j = 0; j < ts->nopts; j++)
		ok |= e >= 0 && ts->opts[j] == (kt_etype)e;
	if (!ok) {
		tp_error_at(pc, pc->type_off[k], "type choice '%s': '%s' is not one of the types listed for '%s'", o, v, ts->name);
		return;
	}
	ts->chosen = (kt_etype)e;
}

/* A caller's choice "LSE=x" for option k. */
static void choose_option(pctx *pc, int k, const char *o, const char *v)
{
	kt_option *op = &pc->options[k];
	for (int j = 0; j < op->nchoices; j++)
		if (!strcmp(op->choices[j], v)) {
			op->chosen = j;
			return;
		}
	char b[80];
	const char *near = tp_suggest(v, strlen(v), op->choices, op->nchoices, b, sizeof b);
	kt_buf all = {0};
	for (int j = 0; j < op->nchoices; j++)
		kt_buf_printf(&all, "%s%s", j ? ", " : "", op->choices[j]);
	if (*near)
		tp_error_at(pc, pc->option_off[k], "option choice '%s': '%s' is not one of the choices listed for '%s'%s", o, v,
			 op->name, near);
	else
		tp_error_at(pc, pc->option_off[k], "option choice '%s': '%s' is not one of the choices listed for '%s' (expected one of: %s)",
			 o, v, op->name, kt_buf_str(&all));
	kt_buf_free(&all);
}

/* Applies the caller's NAME=VALUE choices (`--type T=x`, `--type LSE=x`) to the type symbols (and
 * so to the arguments written with them) and to the options. */
void tp_apply_choices(pctx *pc)
{
	for (int i = 0; pc->opts && i < pc->opts->ntypes; i++) {
		const char *o = pc->opts->types[i], *eq = strchr(o, '=');
		size_t n = eq ? (size_t)(eq - o) : 0;
		int k = -1, m = -1;
		for (int j = 0; eq && j < pc->ntypes; j++)
			if (strlen(pc->types[j].name) == n && !memcmp(pc->types[j].name, o, n))
				k = j;
		for (int j = 0; eq && j < pc->noptions; j++)
			if (strlen(pc->options[j].name) == n && !memcmp(pc->options[j].name, o, n))
				m = j;
		if (k >= 0) {
			choose_type(pc, k, o, eq + 1);
		} else if (m >= 0) {
			choose_option(pc, m, o, eq + 1);
		} else {
			kt_buf names = {0};
			for (int j = 0; j < pc->ntypes; j++)
				kt_buf_printf(&names, "%s%s", j ? ", " : "", pc->types[j].name);
			for (int j = 0; j < pc->noptions; j++)
				kt_buf_printf(&names, "%s%s", pc->ntypes + j ? ", " : "", pc->options[j].name);
			tp_error_at(pc, 0, "choice '%s' names no type symbol or option of this template (expected NAME=VALUE with NAME one of: %s)",
				 o, names.len ? names.data : "none declared");
			kt_buf_free(&names);
		}
	}
}

/* ---- checks across directives ---- */

static void check_required(pctx *pc)
{
	static const struct {
		const char *dir, *why;
	} req[] = {
		{"kernel", "'// @kt kernel NAME' naming the __global__ function to tune"},
		{"grid", "'// @kt grid X[, Y[, Z]]' giving the launch grid"},
		{"block", "'// @kt block X[, Y[, Z]]' giving the block size"},
	};
	for (size_t i = 0; i < sizeof req / sizeof req[0]; i++)
		if (!pc->seen[tp_find_dir(req[i].dir, strlen(req[i].dir))])
			tp_error_at(pc, 0, "no '%s' directive (expected a line %s)", req[i].dir, req[i].why);
	if (!pc->seen[tp_find_dir("arg", 3)])
		tp_error_at(pc, 0, "no 'arg' directive (expected one line '// @kt arg ...' for each kernel argument)");
}

/* Every shape symbol must reach the kernel as a scalar argument, or the launcher cannot know it. */
static void check_shapes_passed(pctx *pc)
{
	if (pc->arg_errors || !pc->seen[tp_find_dir("arg", 3)])
		return; /* the missing argument may be the one in error */
	for (int s = 0; s < pc->nshapes; s++) {
		int passed = 0;
		for (int i = 0; i < pc->nargs; i++)
			passed |= pc->args[i].shape_slot == s;
		if (!passed)
			tp_error_at(pc, pc->shape_off[s],
				 "shape symbol '%s' is not passed to the kernel (expected a scalar argument like 'arg %s int = %s')",
				 pc->shapes[s], pc->shapes[s], pc->shapes[s]);
	}
}

static void check_globals(pctx *pc)
{
	kt_tmpl *t = pc->t;
	if (t->kernel && !kt_cusrc_has_global(pc->src, pc->len, t->kernel))
		tp_error_at(pc, pc->kernel_off, "kernel '%s' is not defined in this file (expected a __global__ function of that name)",
			 t->kernel);
	if (t->reference && !kt_cusrc_has_global(pc->src, pc->len, t->reference))
		tp_error_at(pc, pc->reference_off,
			 "reference kernel '%s' is not defined in this file (expected a __global__ function of that name)",
			 t->reference);
}

void tp_check_across(pctx *pc)
{
	check_required(pc);
	check_shapes_passed(pc);
	check_globals(pc);
}

/* ---- the code ---- */

static void find_includes(pctx *pc)
{
	const char **paths;
	pc->t->nincludes = kt_cusrc_includes(pc->a, pc->t->path, pc->src, pc->len, &paths);
	pc->t->includes = paths;
}

/* Which parameters only the launch reads (kt_tmpl.launch_only): neither the code nor its local
 * headers name them, nor the shared memory's expression.  A header that cannot be read names
 * every parameter. */
static void find_launch_only(pctx *pc)
{
	kt_tmpl *t = pc->t;
	unsigned char *lo = kt_arena_alloc(pc->a, (size_t)t->nparams + 1);
	uint64_t smem = t->smem ? kt_expr_deps(t->smem) : 0;
	for (int i = 0; i < t->nparams; i++)
		lo[i] = !(smem >> t->params[i].slot & 1) && !kt_cusrc_uses_macro(t->src, t->srclen, t->params[i].name);
	for (int h = 0; h < t->nincludes; h++) {
		kt_buf text = {0};
		int unread = kt_read_file(t->includes[h], &text, NULL) != 0;
		for (int i = 0; i < t->nparams; i++)
			lo[i] &= !unread && !kt_cusrc_uses_macro(text.data, text.len, t->params[i].name);
		kt_buf_free(&text);
	}
	t->launch_only = lo;
}

void tp_scan_code(pctx *pc)
{
	find_includes(pc);
	find_launch_only(pc);
}
