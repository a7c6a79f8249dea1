/* test_opt.c - the option tables: every accepted spelling, every error, and the help text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "opt.h"

typedef struct vals {
	int flag;
	const char *str, *optval;
	kt_strlist list;
	long long num;
} vals;

static int parse(vals *v, const char **pos, int *npos, kt_err *err, int argc, char **argv)
{
	const kt_opt opts[] = {
		{"flag", KT_OPT_FLAG, &v->flag, NULL, "a flag"},
		{"str", KT_OPT_STR, &v->str, "S", "a string"},
		{"list", KT_OPT_LIST, &v->list, "L", "repeatable"},
		{"num", KT_OPT_INT, &v->num, "N", "a number"},
		{"retune", KT_OPT_OPTVAL, &v->optval, "PATTERN", "optional value"},
		{"s", KT_OPT_STR, &v->str, "S", "the same as --str"},
		{"f", KT_OPT_FLAG, &v->flag, NULL, "the same as --flag"},
		{0},
	};
	*v = (vals){.num = -7};
	return kt_opt_parse(opts, argc, argv, pos, 2, npos, err);
}

#define ARGV(...) (char *[]){"cmd", __VA_ARGS__}
#define ARGC(...) (int)(sizeof((char *[]){"cmd", __VA_ARGS__}) / sizeof(char *))
#define PARSE(...) parse(&v, pos, &npos, &err, ARGC(__VA_ARGS__), ARGV(__VA_ARGS__))

static void test_spellings(void)
{
	vals v;
	const char *pos[2];
	int npos;
	kt_err err = {0};
	CHECK_INT(PARSE("a", "--flag", "--str", "x", "--list=1", "--list", "2", "--num=42", "b"), 0);
	CHECK_INT(v.flag, 1);
	CHECK_STR(v.str, "x");
	CHECK_INT(v.list.n, 2);
	CHECK_STR(v.list.v[0], "1");
	CHECK_STR(v.list.v[1], "2");
	CHECK_INT(v.num, 42);
	CHECK_INT(npos, 2);
	CHECK_STR(pos[0], "a");
	CHECK_STR(pos[1], "b");
	CHECK(v.optval == NULL);
	kt_strlist_free(&v.list);

	CHECK_INT(PARSE("--retune"), 0);
	CHECK_STR(v.optval, "");
	CHECK_INT(PARSE("--retune=rms*", "--str=a=b"), 0);
	CHECK_STR(v.optval, "rms*");
	CHECK_STR(v.str, "a=b"); /* only the first '=' splits */
	CHECK_INT(PARSE("--", "--flag"), 0); /* after "--" everything is positional */
	CHECK_INT(v.flag, 0);
	CHECK_STR(pos[0], "--flag");
	CHECK_INT(PARSE("--str", "-"), 0); /* a value may start with '-' */
	CHECK_STR(v.str, "-");
	CHECK_INT(PARSE("x", "--help", "--bogus"), KT_OPT_HELP);
	CHECK_INT(PARSE("-h"), KT_OPT_HELP);
	CHECK_INT(PARSE("-s", "x", "-f", "a"), 0); /* one-letter options */
	CHECK_STR(v.str, "x");
	CHECK_INT(v.flag, 1);
	CHECK_STR(pos[0], "a");
	CHECK_INT(PARSE("-s", "-"), 0);
	CHECK_STR(v.str, "-");
}

static void test_errors(void)
{
	vals v;
	const char *pos[2];
	int npos;
	kt_err err = {0};
	CHECK_INT(PARSE("--bogus"), -1);
	CHECK_STR(err.msg, "unknown option '--bogus' (see cmd --help)");
	CHECK_INT(err.cls, KT_E_INPUT);
	CHECK_INT(PARSE("--bogus=1"), -1);
	CHECK_STR(err.msg, "unknown option '--bogus' (see cmd --help)");
	CHECK_INT(PARSE("-x"), -1);
	CHECK_STR(err.msg, "unknown option '-x' (see cmd --help)");
	CHECK_INT(PARSE("-s"), -1);
	CHECK_STR(err.msg, "option '-s' needs a value (S)");
	CHECK_INT(PARSE("-sx"), -1); /* no value glued to the letter */
	CHECK_STR(err.msg, "unknown option '-sx' (see cmd --help)");
	CHECK_INT(PARSE("--s", "x"), -1); /* a letter takes one dash */
	CHECK_STR(err.msg, "unknown option '--s' (see cmd --help)");
	CHECK_INT(PARSE("-retune"), -1);
	CHECK_STR(err.msg, "unknown option '-retune' (see cmd --help)");
	CHECK_INT(PARSE("--str"), -1);
	CHECK_STR(err.msg, "option '--str' needs a value (S)");
	CHECK_INT(PARSE("--flag=1"), -1);
	CHECK_STR(err.msg, "option '--flag' takes no value");
	CHECK_INT(PARSE("--num", "12x"), -1);
	CHECK_STR(err.msg, "--num: expected an integer, got '12x'");
	CHECK_INT(PARSE("a", "b", "c"), -1);
	CHECK_STR(err.msg, "unexpected argument 'c' (see cmd --help)");
	CHECK_INT(PARSE("--fla"), -1); /* no abbreviations */
	kt_strlist_free(&v.list);
}

static void test_usage(void)
{
	const kt_opt opts[] = {
		{"out", KT_OPT_STR, NULL, "DIR", "where"},
		{"retune", KT_OPT_OPTVAL, NULL, "PATTERN", "again"},
		{"quiet", KT_OPT_FLAG, NULL, NULL, "hush"},
		{"o", KT_OPT_STR, NULL, "DIR", "the same as --out"},
		{0},
	};
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	kt_opt_usage(f, "kt x [options]", "Does x.", opts);
	fclose(f);
	CHECK_STR(text, "usage: kt x [options]\n\nDoes x.\n\noptions:\n"
			"  --out DIR           where\n"
			"  --retune[=PATTERN]  again\n"
			"  --quiet             hush\n"
			"   -o DIR             the same as --out\n"
			"  --help              show this help\n");
	free(text);
}

static int sub_seen;
static int sub_run(int argc, char **argv)
{
	sub_seen = argc * 10 + (int)strlen(argv[0]);
	return 42;
}

/* kt_subcmd_run: the subcommand's status; the usage for --help (0) and for none or an unknown
 * one (1, on stderr). */
static void test_subcommand(void)
{
	const kt_subcmd cmds[] = {{"go", sub_run, "runs"}, {"stop", sub_run, "stops"}};
	CHECK_INT(kt_subcmd_run("kt x", "Does x.", cmds, 2, 3, (char *[]){"x", "stop", "now", NULL}), 42);
	CHECK_INT(sub_seen, 24); /* argv from the subcommand's name: "stop", "now" */
	CHECK_INT(kt_subcmd_run("kt x", "Does x.", cmds, 2, 2, (char *[]){"x", "frob", NULL}), 1);
	CHECK_INT(kt_subcmd_run("kt x", "Does x.", cmds, 2, 1, (char *[]){"x", NULL}), 1);
	fflush(stdout);
	FILE *keep = stdout, *f;
	char *text = NULL;
	size_t len = 0;
	stdout = f = open_memstream(&text, &len);
	int rc = kt_subcmd_run("kt x", "Does x.", cmds, 2, 2, (char *[]){"x", "--help", NULL});
	fclose(f);
	stdout = keep;
	CHECK_INT(rc, 0);
	CHECK_STR(text, "usage: kt x <command> [options]\n\nDoes x.\n\ncommands:\n  go     runs\n  stop   stops\n"
			"\nkt x <command> --help shows a command's options.\n");
	free(text);
}

int main(void)
{
	test_spellings();
	test_errors();
	test_usage();
	test_subcommand();
	return check_done();
}
