/* main.c - the kt command: a table of subcommands. */
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "cmd_env.h"
#include "opt.h"
#include "util.h"

/* Sorted by name (lint.tables keeps it so). */
static const kt_subcmd commands[] = {
	{"cache", kt_cmd_cache, "inspect and maintain the tuning cache (stats, ls, show, explain, verify, gc, promote)"},
	{"check", kt_cmd_check, "validate a template; count its combinations and feasible configurations"},
	{"env", kt_cmd_env, "list the environment variables kt reads, their meaning and their values here"},
	{"farm", kt_cmd_farm, "farm tuning out to a Slurm cluster's GPUs: submit misses, run a task, follow a job"},
	{"generate", kt_cmd_generate, "emit the tuned variants, the launcher and the manifest for a kernel"},
	{"nvrtc", kt_cmd_nvrtc, "compile a tuning unit with the toolkit's NVRTC, else nvcc (internal; ninja's compiler)"},
	{"refactor", kt_cmd_refactor, "refactor a plain CUDA kernel into a template with an LLM (stage 1)"},
	{"report", kt_cmd_report, "write the cache's records as one self-contained HTML page with plots"},
	{"space", kt_cmd_space, "list the feasible configurations of a template at a shape"},
	{"tune", kt_cmd_tune, "compile, check and time configurations on this GPU; print the fastest"},
	{"worker", kt_cmd_worker, "test and time variants for `kt tune` (internal; speaks on stdin/stdout)"},
};

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--version")) {
		printf("kt %s\n", KT_VERSION);
		return KT_EXIT_OK;
	}
	return kt_subcmd_run("kt", NULL, commands, sizeof commands / sizeof commands[0], argc, argv);
}
