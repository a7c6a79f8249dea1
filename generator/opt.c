/* opt.c - table-driven long options (see opt.h). */
#include "opt.h"

#include <stdlib.h>
#include <string.h>

static const kt_opt *find_opt(const kt_opt *opts, const char *name, size_t n)
{
	for (const kt_opt *o = opts; o->name; o++)
		if (strlen(o->name) == n && !strncmp(o->name, name, n))
			return o;
	return NULL;
}

/* Stores one value into o's destination. */
static int store(const kt_opt *o, const char *val, kt_err *err)
{
	switch (o->kind) {
	case KT_OPT_FLAG:
		*(int *)o->dst = 1;
		return 0;
	case KT_OPT_STR:
	case KT_OPT_OPTVAL:
		*(const char **)o->dst = val;
		return 0;
	case KT_OPT_LIST: {
		kt_strlist *l = o->dst;
		l->v = kt_xrealloc(l->v, (size_t)(l->n + 1) * sizeof *l->v);
		l->v[l->n++] = val;
		return 0;
	}
	case KT_OPT_INT: {
		int64_t v;
		if (kt_parse_i64(val, strlen(val), &v) != 0)
			return kt_fail(err, "--%s: expected an integer, got '%s'", o->name, val);
		*(long long *)o->dst = (long long)v;
		return 0;
	}
	}
	return kt_fail_internal(err, "--%s: unknown option kind", o->name);
}

/* Handles argv[*i], a "-L" of a one-letter option; may consume the next argument as the value. */
static int parse_letter(const kt_opt *opts, int argc, char **argv, int *i, kt_err *err)
{
	const char *a = argv[*i];
	const kt_opt *o = find_opt(opts, a + 1, strlen(a + 1));
	if (!o || strlen(a) != 2 || o->kind == KT_OPT_OPTVAL)
		return kt_fail(err, "unknown option '%s' (see %s --help)", a, argv[0]);
	if (o->kind == KT_OPT_FLAG)
		return store(o, NULL, err);
	if (*i + 1 >= argc)
		return kt_fail(err, "option '%s' needs a value (%s)", a, o->metavar ? o->metavar : "VALUE");
	return store(o, argv[++*i], err);
}

/* Handles argv[*i], a "--name[=value]"; may consume the next argument as the value. */
static int parse_long(const kt_opt *opts, int argc, char **argv, int *i, kt_err *err)
{
	const char *arg = argv[*i] + 2;
	const char *eq = strchr(arg, '=');
	size_t n = eq ? (size_t)(eq - arg) : strlen(arg);
	const kt_opt *o = n > 1 ? find_opt(opts, arg, n) : NULL;
	if (!o)
		return kt_fail(err, "unknown option '--%.*s' (see %s --help)", (int)n, arg, argv[0]);
	if (o->kind == KT_OPT_FLAG) {
		if (eq)
			return kt_fail(err, "option '--%s' takes no value", o->name);
		return store(o, NULL, err);
	}
	if (o->kind == KT_OPT_OPTVAL)
		return store(o, eq ? eq + 1 : "", err);
	if (eq)
		return store(o, eq + 1, err);
	if (*i + 1 >= argc)
		return kt_fail(err, "option '--%s' needs a value (%s)", o->name, o->metavar ? o->metavar : "VALUE");
	return store(o, argv[++*i], err);
}

int kt_opt_parse(const kt_opt *opts, int argc, char **argv, const char **pos, int maxpos, int *npos, kt_err *err)
{
	int np = 0, only_pos = 0;
	*npos = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!only_pos && (!strcmp(a, "--help") || !strcmp(a, "-h")))
			return KT_OPT_HELP;
		if (!only_pos && !strcmp(a, "--")) {
			only_pos = 1;
		} else if (!only_pos && a[0] == '-' && a[1] == '-') {
			if (parse_long(opts, argc, argv, &i, err) != 0)
				return -1;
		} else if (!only_pos && a[0] == '-' && a[1] != '\0') {
			if (parse_letter(opts, argc, argv, &i, err) != 0)
				return -1;
		} else {
			if (np == maxpos)
				return kt_fail(err, "unexpected argument '%s' (see %s --help)", a, argv[0]);
			pos[np++] = a;
		}
	}
	*npos = np;
	return 0;
}

void kt_opt_usage(FILE *f, const char *usage, const char *about, const kt_opt *opts)
{
	fprintf(f, "usage: %s\n\n%s\n\noptions:\n", usage, about);
	int width = 0;
	for (const kt_opt *o = opts; o->name; o++) {
		int w = (int)strlen(o->name) + (o->metavar ? (int)strlen(o->metavar) + 1 : 0) + (o->kind == KT_OPT_OPTVAL ? 2 : 0);
		if (w > width)
			width = w;
	}
	for (const kt_opt *o = opts; o->name; o++) {
		char left[128];
		if (o->kind == KT_OPT_OPTVAL)
			snprintf(left, sizeof left, "%s[=%s]", o->name, o->metavar ? o->metavar : "VALUE");
		else if (o->metavar)
			snprintf(left, sizeof left, "%s %s", o->name, o->metavar);
		else
			snprintf(left, sizeof left, "%s", o->name);
		fprintf(f, "  %s%-*s  %s\n", o->name[1] ? "--" : " -", width, left, o->help);
	}
	fprintf(f, "  --%-*s  %s\n", width, "help", "show this help");
}

void kt_strlist_free(kt_strlist *l)
{
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

int kt_opt_begin(const char *cmd, const kt_opt *opts, int argc, char **argv, const char **pos, int maxpos, int *npos,
		 const char *usage, const char *about)
{
	kt_err err = {0};
	int rc = kt_opt_parse(opts, argc, argv, pos, maxpos, npos, &err);
	if (rc == KT_OPT_HELP) {
		kt_opt_usage(stdout, usage, about, opts);
		return 0;
	}
	return rc == 0 ? -1 : kt_opt_fail(cmd, NULL, &err);
}

static void subcmd_usage(FILE *f, const char *prog, const char *about, const kt_subcmd *table, size_t n)
{
	int width = 0;
	for (size_t i = 0; i < n; i++)
		if ((int)strlen(table[i].name) > width)
			width = (int)strlen(table[i].name);
	fprintf(f, "usage: %s <command> [options]\n\n%s%scommands:\n", prog, about ? about : "", about ? "\n\n" : "");
	for (size_t i = 0; i < n; i++)
		fprintf(f, "  %-*s %s\n", width + 2, table[i].name, table[i].summary);
	fprintf(f, "\n%s <command> --help shows a command's options.\n", prog);
}

int kt_subcmd_run(const char *prog, const char *about, const kt_subcmd *table, size_t n, int argc, char **argv)
{
	if (argc < 2) {
		subcmd_usage(stderr, prog, about, table, n);
		return 1;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		subcmd_usage(stdout, prog, about, table, n);
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		if (!strcmp(argv[1], table[i].name))
			return table[i].run(argc - 1, argv + 1);
	fprintf(stderr, "%s: unknown command '%s'\n", prog, argv[1]);
	subcmd_usage(stderr, prog, about, table, n);
	return 1;
}

int kt_opt_fail(const char *cmd, const kt_buf *diags, const kt_err *err)
{
	fflush(stdout); /* what the command printed comes before its error where both go to one stream */
	if (diags && diags->len)
		fputs(diags->data, stderr);
	if (err->msg[0])
		fprintf(stderr, "kt %s: %s\n", cmd, err->msg);
	return err->cls == KT_E_INTERNAL ? 2 : 1;
}
