/* cmd_farm.c - `kt farm`: tuning farmed out through Slurm (see farm.h, docs/farm.md).
 *
 *   submit   submits a list of misses as one job array (again: only a job's failed tasks)
 *   run      what each array task runs on its GPU node
 *   status   a job's tasks as Slurm tells them: pending, running, done, failed
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "cmd_env.h"
#include "farm.h"
#include "opt.h"

static int fail(kt_err *err) { return kt_opt_fail("farm", NULL, err); }

/* Parses a subcommand's options: -1 to go on, else the exit status (--help, a bad option). */
static int parse(const kt_opt *opts, int argc, char **argv, const char **pos, int maxpos, int *npos,
		 const char *usage, const char *about)
{
	return kt_opt_begin("farm", opts, argc, argv, pos, maxpos, npos, usage, about);
}

/* ---- submit ---- */

/* The failed tasks of job jobid (malloc'ed; *n of them); -1 with err when Slurm cannot tell. */
/* The failed tasks of job jobid, which must be a job of the list at path with ntasks tasks
 * (malloc'ed; *n of them); -1 with err when Slurm cannot tell, or the job farmed another list. */
static int failed_tasks(const kt_slurm *s, const char *jobid, const char *path, int ntasks, int **ids, size_t *n,
			kt_buf *summary, kt_err *err)
{
	kt_farm_job job;
	if (kt_farm_status(s, jobid, &job, err) != 0)
		return -1;
	char *mine = realpath(path, NULL), *its = job.list ? realpath(job.list, NULL) : NULL;
	int rc = its && mine && strcmp(its, mine) ? kt_fail(err, "job %s farmed %s, not %s", jobid, job.list, path) : 0;
	*ids = kt_xcalloc(job.n + 1, sizeof **ids);
	*n = 0;
	for (size_t i = 0; rc == 0 && i < job.n; i++) {
		if (job.tasks[i].id >= ntasks)
			rc = kt_fail(err, "job %s has a task %d, but %s has tasks 0 to %d: a job of another list?", jobid,
				     job.tasks[i].id, path, ntasks - 1);
		else if (job.tasks[i].state == KT_FARM_FAILED)
			(*ids)[(*n)++] = job.tasks[i].id;
	}
	kt_farm_job_summary(&job, summary);
	kt_farm_job_free(&job);
	free(mine);
	free(its);
	return rc;
}

static int cmd_submit(int argc, char **argv)
{
	const char *spec = NULL, *only = NULL, *kt = NULL;
	const kt_opt opts[] = {
		{"farm", KT_OPT_STR, &spec, "SPEC", "the Slurm settings (else $KT_FARM, else the list's; docs/farm.md)"},
		{"only-failed", KT_OPT_STR, &only, "JOBID", "submit only the tasks of this earlier job that failed"},
		{"kt", KT_OPT_STR, &kt, "PATH", "the kt tool the tasks run (default: this one; the nodes must see it)"},
		{0}};
	const char *pos[1];
	int npos, rc = parse(opts, argc, argv, pos, 1, &npos, "kt farm submit LIST [--farm SPEC] [--only-failed JOBID]",
			     "Submits the misses of LIST (written by a configure with KT_FARM) to Slurm as one\n"
			     "job array: sbatch --array with --gres=gpu:1 and the settings of SPEC; each task runs\n"
			     "kt farm run on its share.  With --only-failed, only the tasks of that job which\n"
			     "failed (kt farm status says which) are submitted again.");
	if (rc >= 0)
		return rc;
	kt_err err = {0};
	if (npos != 1)
		return kt_fail(&err, "expected one list of misses (misses-*.json in the farm directory)"), fail(&err);
	kt_farm_list l;
	if (kt_farm_list_read(pos[0], &l, &err) != 0)
		return fail(&err);
	const char *env = kt_env("KT_FARM");
	char *self = kt ? realpath(kt, NULL) : kt_farm_self(&err), jobid[KT_FARM_JOBID];
	if (kt && !self)
		kt_fail(&err, "--kt %s: %s", kt, strerror(errno));
	kt_slurm slurm = kt_slurm_commands(kt_env_tmpdir());
	kt_farm_opts o = {.spec = spec ? spec : env && !kt_env_false_value(env) ? env : NULL, .kt = self, .slurm = &slurm};
	int *ids = NULL;
	size_t n = 0;
	kt_buf summary = {0};
	rc = o.kt ? 0 : -1;
	if (rc == 0 && only)
		rc = failed_tasks(&slurm, only, pos[0], l.tasks, &ids, &n, &summary, &err);
	if (rc == 0 && only && !n)
		printf("job %s has no failed task (%s): nothing submitted\n", only, summary.data);
	else if (rc == 0 && (rc = kt_farm_submit(&o, pos[0], &l, only ? ids : NULL, n, jobid, &err)) == 0)
		printf("submitted %s as job %s (%zu task%s): kt farm status %s follows it\n", pos[0], jobid,
		       only ? n : (size_t)l.tasks, (only ? n : (size_t)l.tasks) == 1 ? "" : "s", jobid);
	kt_buf_free(&summary);
	free(ids);
	free(self);
	kt_farm_list_free(&l);
	return rc == 0 ? KT_EXIT_OK : fail(&err);
}

/* ---- run ---- */

static void print_note(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "%s\n", msg);
}

/* The settings of the tuning that come from the task's environment, as kt generate reads them. */
typedef struct run_env {
	kt_agent_cfg agent;
	kt_llm_config llm;
	char llm_why[2048];
} run_env;

static int run_environment(kt_generate_opts *o, run_env *re, kt_err *err)
{
	long long pause = 0;
	o->backend = kt_env("KT_TEST_GPU_BACKEND"); /* tests: "fake" (test builds only) */
	o->tmpdir = kt_env_tmpdir();
	o->secret = kt_env_llm_key();
	if (kt_env_long("KT_TEST_STORE_PAUSE_MS", &pause, err) || kt_env_agent(&re->agent, err) ||
	    kt_env_tune_rounds(&o->rounds, err))
		return -1;
	o->store_pause_ms = (long)pause;
	o->planner = re->agent.mode;
	o->agent = re->agent;
	kt_err le = {0};
	if (re->agent.mode == KT_AGENT_LLM && kt_env_llm(&re->llm, &le) == 0)
		o->llm = &re->llm;
	else if (re->agent.mode == KT_AGENT_LLM)
		o->llm_why = (snprintf(re->llm_why, sizeof re->llm_why, "%s", le.msg), re->llm_why);
	return 0;
}

static int cmd_run(int argc, char **argv)
{
	long long task = -1;
	kt_generate_opts base = {.note = print_note};
	const kt_opt opts[] = {{"task", KT_OPT_INT, &task, "N", "the array task: its share is every miss i with i % tasks = N"},
			       {"quiet", KT_OPT_FLAG, &base.quiet, NULL, "no notes on stderr"},
			       {0}};
	const char *pos[1];
	int npos, rc = parse(opts, argc, argv, pos, 1, &npos, "kt farm run LIST --task N",
			     "What each array task of kt farm runs on its GPU node: tunes its share of the misses\n"
			     "of LIST as kt generate would, storing the records in the list's remote cache.  A\n"
			     "miss already in the cache is skipped; one whose key here is not the configure's is\n"
			     "not tuned.  Prints one line per miss; exits 1 when any of them failed.");
	if (rc >= 0)
		return rc;
	kt_err err = {0};
	if (npos != 1 || task < 0 || task > 1000000)
		return kt_fail(&err, "expected a list of misses and --task N (the array index)"), fail(&err);
	kt_farm_list l;
	run_env re;
	kt_buf report = {0};
	if (kt_farm_list_read(pos[0], &l, &err) != 0)
		return fail(&err);
	rc = run_environment(&base, &re, &err);
	int failed = rc == 0 ? kt_farm_run(&l, (int)task, &base, &report, &err) : -1;
	fputs(kt_buf_str(&report), stdout);
	fflush(stdout); /* the lines of the misses before the verdict, in a log of both */
	if (failed > 0)
		fprintf(stderr, "kt farm run: task %lld: %d miss%s failed: %s not in the cache\n", task, failed,
			failed == 1 ? "" : "es", failed == 1 ? "its record is" : "their records are");
	kt_buf_free(&report);
	kt_farm_list_free(&l);
	return failed < 0 ? fail(&err) : failed ? KT_EXIT_INPUT : KT_EXIT_OK;
}

/* ---- status ---- */

static int cmd_status(int argc, char **argv)
{
	const kt_opt opts[] = {{0}};
	const char *pos[1];
	int npos, rc = parse(opts, argc, argv, pos, 1, &npos, "kt farm status JOBID",
			     "Shows the tasks of a kt farm job as Slurm tells them (squeue, else sacct):\n"
			     "pending (and why), running, done, or failed (and how), and how to submit the\n"
			     "failed ones again.");
	if (rc >= 0)
		return rc;
	kt_err err = {0};
	if (npos != 1)
		return kt_fail(&err, "expected one job id (the one sbatch gave, which kt printed)"), fail(&err);
	kt_slurm slurm = kt_slurm_commands(kt_env_tmpdir());
	kt_farm_job job;
	if (kt_farm_status(&slurm, pos[0], &job, &err) != 0)
		return fail(&err);
	kt_buf sum = {0};
	kt_farm_job_summary(&job, &sum);
	printf("job %s (%s): %s\n", pos[0], job.source, sum.data);
	for (size_t i = 0; i < job.n; i++) {
		const kt_farm_task *t = &job.tasks[i];
		printf("  task %-4d %-8s %s%s%s%s\n", t->id, kt_farm_state_names[t->state], t->slurm, t->why[0] ? " (" : "",
		       t->why, t->why[0] ? ")" : "");
	}
	if (job.count[KT_FARM_FAILED]) {
		size_t stem = job.list ? strlen(job.list) - 5 : 0; /* without ".json" */
		if (job.list)
			printf("the failed tasks' output: %.*s-%s_<task>.log\n", (int)stem, job.list, pos[0]);
		printf("to submit them again: kt farm submit %s --only-failed %s\n", job.list ? job.list : "LIST", pos[0]);
	}
	kt_buf_free(&sum);
	kt_farm_job_free(&job);
	return KT_EXIT_OK;
}

/* ---- the subcommands ---- */

/* Sorted by name. */
static const kt_subcmd commands[] = {
	{"run", cmd_run, "tune one array task's share of a list of misses (what the job runs)"},
	{"status", cmd_status, "a job's tasks as Slurm tells them: pending, running, done, failed"},
	{"submit", cmd_submit, "submit a list of misses to Slurm as one job array"},
};

int kt_cmd_farm(int argc, char **argv)
{
	return kt_subcmd_run("kt farm",
			     "Farms tuning out to a Slurm cluster's GPUs: a configure with KT_FARM writes its misses\n"
			     "to a list and submits it; each array task tunes its share on a GPU node and stores the\n"
			     "records in the remote cache, where the next configure finds them (docs/farm.md).",
			     commands, sizeof commands / sizeof commands[0], argc, argv);
}
