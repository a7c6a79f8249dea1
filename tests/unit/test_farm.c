/* test_farm.c - the farm module through a fake Slurm: KT_FARM's settings, the list of misses,
 * what sbatch is asked, what squeue and sacct answer, and which misses a configure farms.  (A
 * task's own work, and a real cluster, are tested in tests/farm.) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "farm.h"

/* ---- a fake Slurm: scripted answers, a log of the commands ---- */

typedef struct answer {
	const char *cmd;          /* the command it answers */
	int status;
	const char *out, *errout;
	int cannot_run;           /* as if the command were not installed */
} answer;

typedef struct fake {
	answer a[8];
	int n, used[8];
	kt_buf log;               /* one line per command run: its argv */
} fake;

static int fake_run(void *ctx, const char *const *argv, int *status, kt_buf *out, kt_buf *errout, kt_err *err)
{
	fake *f = ctx;
	for (int i = 0; argv[i]; i++)
		kt_buf_printf(&f->log, "%s%s", i ? " " : "", argv[i]);
	kt_buf_putc(&f->log, '\n');
	for (int i = 0; i < f->n; i++) {
		if (f->used[i] || strcmp(f->a[i].cmd, argv[0]))
			continue;
		f->used[i] = 1;
		if (f->a[i].cannot_run)
			return kt_fail_internal(err, "cannot run %s: No such file or directory", argv[0]);
		*status = f->a[i].status;
		kt_buf_puts(out, f->a[i].out ? f->a[i].out : "");
		kt_buf_puts(errout, f->a[i].errout ? f->a[i].errout : "");
		return 0;
	}
	return kt_fail(err, "the fake Slurm has no answer for %s", argv[0]);
}

static void fake_answer(fake *f, answer a) { f->a[f->n++] = a; }

static void fake_reset(fake *f)
{
	kt_buf_free(&f->log);
	memset(f, 0, sizeof *f);
}

static char workdir[4096];

static char *in_work(const char *name)
{
	char *p = kt_path_join(workdir, name);
	return p;
}

/* ---- KT_FARM ---- */

static void spec_args(const char *text, const char *want, int tasks, int parallel)
{
	kt_farm_spec s;
	kt_err err = {0};
	CHECK_INT(kt_farm_spec_parse(text, &s, &err), 0);
	kt_buf got = {0};
	for (int i = 0; i < s.nargs; i++)
		kt_buf_printf(&got, "%s%s", i ? " " : "", s.args[i]);
	CHECK_STR(kt_buf_str(&got), want);
	CHECK_INT(s.tasks, tasks);
	CHECK_INT(s.parallel, parallel);
	CHECK(s.args[s.nargs] == NULL);
	kt_buf_free(&got);
	kt_farm_spec_free(&s);
}

static void spec_error(const char *text, const char *want)
{
	kt_farm_spec s;
	kt_err err = {0};
	CHECK_INT(kt_farm_spec_parse(text, &s, &err), -1);
	CHECK_STR(err.msg, want);
}

static void test_spec(void)
{
	spec_args("ON", "--gres=gpu:1", KT_FARM_TASKS, 0);
	spec_args("yes", "--gres=gpu:1", KT_FARM_TASKS, 0);
	spec_args("constraint=h100", "--constraint=h100 --gres=gpu:1", KT_FARM_TASKS, 0);
	spec_args(" partition=gpu,gpu2\tconstraint=h100&ib gpu=a100 tasks=4 parallel=2 time=01:00:00 account=kt qos=low "
		  "cpus=8 mem=16G reservation=r1 ",
		  "--partition=gpu,gpu2 --constraint=h100&ib --time=01:00:00 --account=kt --qos=low --cpus-per-task=8 "
		  "--mem=16G --reservation=r1 --gres=gpu:a100:1",
		  4, 2);
	spec_error("", "KT_FARM is empty: give ON or settings such as constraint=h100 (docs/farm.md)");
	spec_error("h100", "KT_FARM 'h100': 'h100' is not KEY=VALUE (or the whole value ON)");
	spec_error("ON constraint=x", "KT_FARM 'ON constraint=x': 'ON' is not KEY=VALUE (or the whole value ON)");
	/* the known keys, as the message lists them: the table's order, which is sorted */
	spec_error("colour=blue", "KT_FARM 'colour=blue': unknown setting 'colour' (known: account, constraint, cpus, gpu, "
				  "mem, parallel, partition, qos, reservation, tasks, time)");
	spec_error("partition=", "KT_FARM 'partition=': 'partition=' has no value");
	spec_error("tasks=0", "KT_FARM 'tasks=0': 'tasks=0': expected a count from 1 to 1000000");
	spec_error("parallel=x", "KT_FARM 'parallel=x': 'parallel=x': expected a count from 1 to 1000000");
	spec_error("qos=a qos=b", "KT_FARM 'qos=a qos=b': 'qos' is given twice");
}

/* ---- the list ---- */

static const char *const types_b[] = {"T=half", "LSE=base2"};

static kt_farm_list list3(kt_farm_miss *m)
{
	m[0] = (kt_farm_miss){"a", KT_FARM_TEMPLATE, NULL, 0, "90", "nvcc", "-O3", NULL, "n=4096", "0123456789abcdef0123456789abcdef",
			      {NULL, NULL}};
	m[1] = (kt_farm_miss){"b", KT_FARM_TEMPLATE, types_b, 2, "90a", "/usr/local/cuda/bin/nvcc", NULL, NULL, "n=8192", NULL,
			      {"warm", NULL}};
	m[2] = m[0]; /* the same problem under another name: one task tunes it */
	m[2].name = "a_again";
	return (kt_farm_list){.gpu = "NVIDIA H100", .remote = "http://cache:8080/kt", .farm = "constraint=h100",
			      .budget = 50, .seconds = 30, .strategy = "random", .misses = m, .n = 3};
}

static void test_list(void)
{
	kt_farm_miss m[3];
	kt_farm_list l = list3(m), r;
	kt_farm_spec spec;
	kt_err err = {0};
	char *dir = in_work("lists"), *path = NULL, *again = NULL;
	CHECK_INT(kt_farm_spec_parse("ON", &spec, &err), 0);
	CHECK_INT(kt_farm_list_write(&l, &spec, dir, &path, &err), 0);
	CHECK(path && strstr(path, "/lists/misses-") && strstr(path, ".json"));
	CHECK_INT(kt_farm_list_write(&l, &spec, dir, &again, &err), 0);
	CHECK_STR(again, path); /* the same misses: the same list */
	CHECK_INT(kt_farm_list_read(path, &r, &err), 0);
	CHECK_INT((long long)r.n, 2);
	CHECK_INT(r.tasks, 2);
	CHECK_STR(r.gpu, "NVIDIA H100");
	CHECK_STR(r.remote, "http://cache:8080/kt");
	CHECK_STR(r.farm, "constraint=h100");
	CHECK_STR(r.strategy, "random");
	CHECK_INT(r.budget, 50);
	CHECK(r.seconds == 30);
	CHECK_STR(r.misses[0].name, "a");
	CHECK_STR(r.misses[0].key, "0123456789abcdef0123456789abcdef");
	CHECK_STR(r.misses[0].nvcc, "nvcc"); /* a compiler without a directory is the node's */
	CHECK_STR(r.misses[0].flags, "-O3");
	CHECK_INT(r.misses[0].ntypes, 0);
	CHECK_STR(r.misses[1].name, "b");
	CHECK(r.misses[1].key == NULL && r.misses[1].flags == NULL);
	CHECK_INT(r.misses[1].ntypes, 2);
	CHECK_STR(r.misses[1].types[1], "LSE=base2");
	CHECK_STR(r.misses[1].arch, "90a");
	CHECK_STR(r.misses[1].shape, "n=8192");
	CHECK_STR(r.misses[1].measure[KT_MEASURE_L2], "warm"); /* the node's kt generate gets --l2 warm */
	CHECK(r.misses[1].measure[KT_MEASURE_LAUNCH] == NULL && r.misses[0].measure[KT_MEASURE_L2] == NULL);
	CHECK(r.misses[1].template_path[0] == '/');
	kt_farm_list_free(&r);
	kt_farm_spec_free(&spec);
	/* tasks=1: every miss in one task */
	CHECK_INT(kt_farm_spec_parse("tasks=1", &spec, &err), 0);
	free(again);
	CHECK_INT(kt_farm_list_write(&l, &spec, dir, &again, &err), 0);
	CHECK(strcmp(again, path) != 0);
	CHECK_INT(kt_farm_list_read(again, &r, &err), 0);
	CHECK_INT(r.tasks, 1);
	kt_farm_list_free(&r);
	kt_farm_spec_free(&spec);
	/* damaged lists name themselves */
	char *bad = in_work("bad.json");
	FILE *f = fopen(bad, "w");
	fputs("{\"kt_farm\": 1, \"remote\": \"http://x\", \"tasks\": 3, \"misses\": [{\"name\": \"a\", \"template\": \"/t\", "
	      "\"shape\": \"n=1\"}]}", f);
	fclose(f);
	CHECK_INT(kt_farm_list_read(bad, &r, &err), -1);
	CHECK(strstr(err.msg, "bad.json: the remote cache or the number of tasks") != NULL);
	f = fopen(bad, "w");
	fputs("{\"kt_farm\": 1, \"remote\": \"http://x\", \"tasks\": 1, \"misses\": [{\"name\": \"a\", \"shape\": \"n=1\"}]}", f);
	fclose(f);
	CHECK_INT(kt_farm_list_read(bad, &r, &err), -1);
	CHECK(strstr(err.msg, "bad.json: miss 0: expected an object with name, template and shape") != NULL);
	f = fopen(bad, "w");
	fputs("[1, 2]", f);
	fclose(f);
	CHECK_INT(kt_farm_list_read(bad, &r, &err), -1);
	CHECK(strstr(err.msg, "bad.json: not a list of misses of kt farm") != NULL);
	free(bad);
	free(path);
	free(again);
	free(dir);
}

/* ---- submitting ---- */

static void test_submit(void)
{
	kt_farm_miss m[3];
	kt_farm_list l = list3(m), r;
	kt_farm_spec spec;
	kt_err err = {0};
	fake f = {0};
	kt_slurm slurm = {fake_run, &f};
	char *dir = in_work("submit"), *path = NULL, jobid[KT_FARM_JOBID];
	CHECK_INT(kt_farm_spec_parse("ON", &spec, &err), 0);
	CHECK_INT(kt_farm_list_write(&l, &spec, dir, &path, &err), 0);
	CHECK_INT(kt_farm_list_read(path, &r, &err), 0);
	kt_farm_opts o = {.spec = NULL, .dir = dir, .kt = "/opt/kt's/bin/kt", .slurm = &slurm};
	fake_answer(&f, (answer){"sbatch", 0, "1234;cluster\n", NULL, 0});
	CHECK_INT(kt_farm_submit(&o, path, &r, NULL, 0, jobid, &err), 0);
	CHECK_STR(jobid, "1234");
	kt_buf want = {0}, script = {0};
	size_t stem = strlen(path) - 5;
	kt_buf_printf(&want,
		      "sbatch --parsable --job-name=kt-farm --array=0-1 --constraint=h100 --gres=gpu:1 --output=%.*s-%%A_%%a.log "
		      "--chdir=%s %.*s.sh\n",
		      (int)stem, path, dir, (int)stem, path);
	CHECK_STR(kt_buf_str(&f.log), kt_buf_str(&want)); /* the list's KT_FARM when none is given */
	kt_buf_reset(&want);
	kt_buf_printf(&want, "%.*s.sh", (int)stem, path);
	CHECK_INT(kt_read_file(want.data, &script, &err), 0);
	kt_buf_reset(&want);
	kt_buf_printf(&want, "exec '/opt/kt'\\''s/bin/kt' farm run '%s' --task \"$SLURM_ARRAY_TASK_ID\"\n", path);
	CHECK(strstr(kt_buf_str(&script), "#!/bin/sh\n") == script.data);
	CHECK(strstr(kt_buf_str(&script), want.data) != NULL);
	/* some tasks again, with settings of their own */
	fake_reset(&f);
	o.spec = "parallel=3 partition=p";
	fake_answer(&f, (answer){"sbatch", 0, "99\n", NULL, 0});
	int tasks[] = {1};
	CHECK_INT(kt_farm_submit(&o, path, &r, tasks, 1, jobid, &err), 0);
	CHECK_STR(jobid, "99");
	CHECK(strstr(kt_buf_str(&f.log), " --array=1%3 --partition=p --gres=gpu:1 ") != NULL);
	/* sbatch refuses; sbatch is not there; sbatch answers nonsense */
	fake_reset(&f);
	fake_answer(&f, (answer){"sbatch", 1, NULL, "sbatch: error: Batch job submission failed: Invalid partition name specified\n", 0});
	fake_answer(&f, (answer){"sbatch", 0, NULL, NULL, 1});
	fake_answer(&f, (answer){"sbatch", 0, "Submitted batch job 5\n", NULL, 0});
	CHECK_INT(kt_farm_submit(&o, path, &r, NULL, 0, jobid, &err), -1);
	CHECK_STR(err.msg, "sbatch failed (exit status 1): sbatch: error: Batch job submission failed: Invalid partition name specified");
	CHECK_INT(kt_farm_submit(&o, path, &r, NULL, 0, jobid, &err), -1);
	CHECK_STR(err.msg, "cannot run sbatch: No such file or directory (is Slurm's client installed here and its controller up? "
			   "docs/farm.md)");
	CHECK_INT(kt_farm_submit(&o, path, &r, NULL, 0, jobid, &err), -1);
	CHECK_STR(err.msg, "sbatch answered 'Submitted batch job 5' instead of a job id");
	o.spec = "bogus";
	CHECK_INT(kt_farm_submit(&o, path, &r, NULL, 0, jobid, &err), -1);
	CHECK(strstr(err.msg, "'bogus' is not KEY=VALUE") != NULL);
	fake_reset(&f);
	kt_buf_free(&want);
	kt_buf_free(&script);
	kt_farm_list_free(&r);
	kt_farm_spec_free(&spec);
	free(path);
	free(dir);
}

/* ---- following a job ---- */

static const char *task_line(const kt_farm_job *j, size_t i, kt_buf *b)
{
	kt_buf_reset(b);
	kt_buf_printf(b, "%d %s %s %s", j->tasks[i].id, kt_farm_state_names[j->tasks[i].state], j->tasks[i].slurm, j->tasks[i].why);
	return b->data;
}

static void test_status(void)
{
	fake f = {0};
	kt_slurm slurm = {fake_run, &f};
	kt_farm_job j;
	kt_err err = {0};
	kt_buf b = {0};
	/* squeue knows the job; the script beside a list names the list */
	char *listp = in_work("misses-0011223344556677.json");
	FILE *lf = fopen(listp, "w");
	fclose(lf);
	kt_buf sq = {0};
	kt_buf_printf(&sq, "77_3|FAILED|NonZeroExitCode|%.*s.sh\n77_0|COMPLETED|None|%.*s.sh\n77_1|RUNNING|None|x\n"
			   "77_2|PENDING|Resources|x\n78_0|RUNNING|None|x\n", (int)strlen(listp) - 5, listp, (int)strlen(listp) - 5, listp);
	fake_answer(&f, (answer){"squeue", 0, sq.data, NULL, 0});
	CHECK_INT(kt_farm_status(&slurm, "77", &j, &err), 0);
	CHECK_STR(j.source, "squeue");
	CHECK_INT((long long)j.n, 4);
	CHECK_STR(task_line(&j, 0, &b), "0 done COMPLETED ");
	CHECK_STR(task_line(&j, 1, &b), "1 running RUNNING ");
	CHECK_STR(task_line(&j, 2, &b), "2 pending PENDING Resources");
	CHECK_STR(task_line(&j, 3, &b), "3 failed FAILED NonZeroExitCode");
	CHECK_STR(j.list, listp);
	kt_buf_reset(&b);
	kt_farm_job_summary(&j, &b);
	CHECK_STR(b.data, "4 tasks: 1 pending, 1 running, 1 done, 1 failed");
	CHECK_STR(kt_buf_str(&f.log), "squeue --noheader --array --states=all --jobs=77 --format=%i|%T|%r|%o\n");
	kt_farm_job_free(&j);
	/* the controller forgot it: sacct, with a pending range and a cancelled task */
	fake_reset(&f);
	fake_answer(&f, (answer){"squeue", 1, NULL, "slurm_load_jobs error: Invalid job id specified\n", 0});
	fake_answer(&f, (answer){"sacct", 0, "77_0|COMPLETED|0:0\n77_[1-3%2]|PENDING|0:0\n77_4|CANCELLED by 0|0:15\n"
					     "77_[6-10:2,12]|PENDING|0:0\n", NULL, 0});
	CHECK_INT(kt_farm_status(&slurm, "77", &j, &err), 0);
	CHECK_STR(j.source, "sacct");
	CHECK_INT((long long)j.n, 9);
	CHECK_STR(task_line(&j, 3, &b), "3 pending PENDING ");
	CHECK_STR(task_line(&j, 4, &b), "4 failed CANCELLED exit code 0:15");
	CHECK_STR(task_line(&j, 7, &b), "10 pending PENDING ");
	CHECK_STR(task_line(&j, 8, &b), "12 pending PENDING ");
	CHECK(j.list == NULL);
	kt_farm_job_free(&j);
	/* nobody knows it */
	fake_reset(&f);
	fake_answer(&f, (answer){"squeue", 1, NULL, "slurm_load_jobs error: Invalid job id specified\n", 0});
	fake_answer(&f, (answer){"sacct", 1, NULL, "Slurm accounting storage is disabled\n", 0});
	CHECK_INT(kt_farm_status(&slurm, "77", &j, &err), -1);
	CHECK_STR(err.msg, "Slurm cannot tell about job 77: squeue: slurm_load_jobs error: Invalid job id specified; sacct: "
			   "Slurm accounting storage is disabled");
	fake_reset(&f);
	fake_answer(&f, (answer){"squeue", 0, NULL, NULL, 1});
	fake_answer(&f, (answer){"sacct", 0, NULL, NULL, 1});
	CHECK_INT(kt_farm_status(&slurm, "77", &j, &err), -1);
	CHECK(strstr(err.msg, "cannot run squeue: No such file or directory") != NULL);
	CHECK(strstr(err.msg, "cannot run sacct") != NULL);
	CHECK_INT(kt_farm_status(&slurm, "77_1", &j, &err), -1);
	CHECK_STR(err.msg, "job id '77_1': expected the number that sbatch printed");
	fake_reset(&f);
	kt_buf_free(&sq);
	kt_buf_free(&b);
	remove(listp);
	free(listp);
}

/* ---- the configure's side: only what is not in flight is farmed ---- */

static void test_misses(void)
{
	kt_farm_miss m[3];
	kt_farm_list l = list3(m);
	fake f = {0};
	kt_slurm slurm = {fake_run, &f};
	kt_err err = {0};
	kt_buf msg = {0};
	char *dir = in_work("configure");
	kt_farm_opts o = {.spec = "gpu=h100", .dir = dir, .kt = "/bin/kt", .slurm = &slurm};
	fake_answer(&f, (answer){"sbatch", 0, "55\n", NULL, 0});
	CHECK_INT(kt_farm_misses(&o, &l, &msg, &err), 0);
	CHECK(strstr(msg.data, "farmed 2 misses out to Slurm as job 55 (2 array tasks; the list: ") != NULL);
	CHECK(strstr(kt_buf_str(&f.log), "--gres=gpu:h100:1") != NULL);
	/* again while the job runs (now with keys known): nothing is submitted */
	fake_reset(&f);
	kt_buf_reset(&msg);
	m[1].key = "fedcba9876543210fedcba9876543210";
	fake_answer(&f, (answer){"squeue", 0, "55_0|RUNNING|None|x\n55_1|PENDING|Priority|x\n", NULL, 0});
	CHECK_INT(kt_farm_misses(&o, &l, &msg, &err), 0);
	CHECK_STR(msg.data, "3 misses are being farmed already, by job 55 (kt farm status)"); /* a_again too */
	CHECK(strstr(kt_buf_str(&f.log), "sbatch") == NULL);
	/* task 1 failed: its miss is farmed again; task 0's is still in flight */
	fake_reset(&f);
	kt_buf_reset(&msg);
	fake_answer(&f, (answer){"squeue", 0, "55_0|RUNNING|None|x\n55_1|FAILED|NonZeroExitCode|x\n", NULL, 0});
	fake_answer(&f, (answer){"sbatch", 0, "56\n", NULL, 0});
	CHECK_INT(kt_farm_misses(&o, &l, &msg, &err), 0);
	CHECK(strstr(msg.data, "farmed 1 miss out to Slurm as job 56 (1 array task;") != NULL);
	CHECK(strstr(msg.data, "; 2 misses are being farmed already, by job 55") != NULL);
	/* Slurm cannot tell about the earlier job: submitted again */
	fake_reset(&f);
	kt_buf_reset(&msg);
	fake_answer(&f, (answer){"squeue", 1, NULL, "slurm_load_jobs error: Invalid job id specified\n", 0});
	fake_answer(&f, (answer){"sacct", 1, NULL, "Slurm accounting storage is disabled\n", 0});
	fake_answer(&f, (answer){"squeue", 0, "56_0|RUNNING|None|x\n", NULL, 0});
	fake_answer(&f, (answer){"sbatch", 0, "57\n", NULL, 0});
	CHECK_INT(kt_farm_misses(&o, &l, &msg, &err), 0);
	CHECK(strstr(msg.data, "farmed 1 miss out to Slurm as job 57") != NULL);
	CHECK(strstr(msg.data, "; 1 miss is being farmed already, by job 56") != NULL);
	/* no remote: an error, before Slurm is asked anything */
	fake_reset(&f);
	l.remote = NULL;
	CHECK_INT(kt_farm_misses(&o, &l, &msg, &err), -1);
	CHECK(strstr(err.msg, "KT_FARM needs a remote cache that the nodes can reach (KT_REMOTE_CACHE)") != NULL);
	CHECK(f.log.len == 0);
	fake_reset(&f);
	kt_buf_free(&msg);
	free(dir);
}

int main(void)
{
	kt_err err = {0};
	char *dir = kt_temp_dir(getenv("TMPDIR"), "kt-test-farm", &err);
	if (!dir) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	snprintf(workdir, sizeof workdir, "%s", dir);
	test_spec();
	test_list();
	test_submit();
	test_status();
	test_misses();
	kt_remove_tree(dir);
	free(dir);
	return check_done();
}
