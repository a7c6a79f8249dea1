/* opt.h - long options for the subcommands, from a table.
 *
 * A command declares its options as a kt_opt array ending with {0}; kt_opt_parse fills the
 * destinations and collects positional arguments.  The same table prints the --help text, so
 * the help never disagrees with the parser.  Accepted spellings: --name VALUE, --name=VALUE,
 * and for KT_OPT_OPTVAL only --name or --name=VALUE.  An option whose name is one letter is
 * spelt -L VALUE (or -L for a flag), never with "--"; a table may give it the destination of a
 * long option as well ("-o" and "--out").  "--" ends the options.
 */
#ifndef KT_OPT_H
#define KT_OPT_H

#include <stdio.h>

#include "util.h"

/* A repeatable option's values, in order.  The strings point into argv; free with kt_strlist_free. */
typedef struct kt_strlist {
	const char **v;
	int n;
} kt_strlist;

typedef enum kt_optkind {
	KT_OPT_FLAG,   /* int *: set to 1 */
	KT_OPT_STR,    /* const char **: the value (the last one given wins) */
	KT_OPT_LIST,   /* kt_strlist *: every value, repeatable */
	KT_OPT_INT,    /* long long *: a decimal integer */
	KT_OPT_OPTVAL, /* const char **: "" for --name, VALUE for --name=VALUE */
} kt_optkind;

typedef struct kt_opt {
	const char *name; /* without the leading "--" (or "-" for a one-letter name) */
	kt_optkind kind;
	void *dst;
	const char *metavar; /* shown in the help, e.g. "DIR"; NULL for flags */
	const char *help;    /* one line */
} kt_opt;

enum { KT_OPT_HELP = 1 }; /* kt_opt_parse's return when --help or -h was given */

/* Parses argv[1..argc) (argv[0] is the command's name).  Positional arguments go to pos[0..maxpos);
 * *npos receives their number.  Returns 0, KT_OPT_HELP, or -1 with a bad-input err naming the
 * offending argument. */
int kt_opt_parse(const kt_opt *opts, int argc, char **argv, const char **pos, int maxpos, int *npos, kt_err *err);

/* A command's opening: parses argv as kt_opt_parse does, prints the usage (kt_opt_usage) on stdout
 * for --help and a bad argument on stderr as kt_opt_fail(cmd) does.  Returns -1 when the command
 * goes on, else its exit status: 0 after --help, 1 after a bad argument. */
int kt_opt_begin(const char *cmd, const kt_opt *opts, int argc, char **argv, const char **pos, int maxpos, int *npos,
		 const char *usage, const char *about);

/* Prints "usage: <usage>\n\n<about>\n\noptions:\n" and one aligned line per option. */
void kt_opt_usage(FILE *f, const char *usage, const char *about, const kt_opt *opts);

void kt_strlist_free(kt_strlist *l);

/* A subcommand: its name, its function (given the arguments from its name on, returning the exit
 * status) and one line of help.  A table of them is sorted by name. */
typedef struct kt_subcmd {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
} kt_subcmd;

/* Runs the subcommand of table[0..n) that argv[1] names, with argv[1..argc), and returns its exit
 * status.  --help, -h and help print the usage ("usage: PROG <command> [options]", about when not
 * NULL, the table) on stdout and return 0; no name, or an unknown one, prints it on stderr and
 * returns 1. */
int kt_subcmd_run(const char *prog, const char *about, const kt_subcmd *table, size_t n, int argc, char **argv);

/* For a command that failed: prints diags as they are, then "kt <cmd>: <message>" (unless the
 * message is empty), on stderr.  Returns the exit status of err's class (1 bad input, 2 internal). */
int kt_opt_fail(const char *cmd, const kt_buf *diags, const kt_err *err);

#endif
