/* main.c - the kt command: a table of subcommands. */
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "cmd_env.h"
#include "util.h"

struct subcommand {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

/* Sorted by name (a unit test keeps it so). */
static const struct subcommand commands[] = {
	{"cache", kt_cmd_cache, "inspect and maintain the tuning cache (stats, ls, show, explain, verify, gc, promote)"},
	{"check", kt_cmd_check, "validate a template; count its combinations and feasible configurations"},
	{"env", kt_cmd_env, "list the environment variables kt reads, their meaning and their values here"},
	{"farm", kt_cmd_farm, "farm tuning out to a Slurm cluster's GPUs: submit misses, run a task, follow a job"},
	{"generate", kt_cmd_generate, "emit the tuned variants, the launcher and the manifest for a kernel"},
	{"refactor", kt_cmd_refactor, "refactor a plain CUDA kernel into a template with an LLM (stage 1)"},
	{"report", kt_cmd_report, "write the cache's records as one self-contained HTML page with plots"},
	{"space", kt_cmd_space, "list the feasible configurations of a template at a shape"},
	{"tune", kt_cmd_tune, "compile, check and time configurations on this GPU; print the fastest"},
	{"worker", kt_cmd_worker, "test and time variants for `kt tune` (internal; speaks on stdin/stdout)"},
};

static void usage(FILE *f)
{
	fputs("usage: kt <command> [options]\n\ncommands:\n", f);
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fputs("\nkt <command> --help shows a command's options.\n", f);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return KT_EXIT_INPUT;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return KT_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("kt %s\n", KT_VERSION);
		return KT_EXIT_OK;
	}
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "kt: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return KT_EXIT_INPUT;
}
