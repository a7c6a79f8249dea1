/* slurm.c - Slurm's commands as child processes (see slurm.h). */
#include "slurm.h"

#include <stdlib.h>
#include <sys/wait.h>

#include "proc.h"

/* Runs argv with its stdout on our socket and its stderr in a file of a fresh work directory. */
static int run_commands(void *ctx, const char *const *argv, int *status, kt_buf *out, kt_buf *errout, kt_err *err)
{
	const char *tmpdir = ctx;
	char *dir = kt_temp_dir(tmpdir, "kt-slurm", err);
	if (!dir)
		return -1;
	char *log = kt_path_join(dir, "stderr");
	kt_proc p;
	int rc = kt_proc_spawn(&p, (char *const *)argv, 1, log, err);
	double deadline = kt_now() + KT_SLURM_TIMEOUT_S;
	kt_buf line = {0};
	while (rc == 0) {
		int r = kt_proc_readline(&p, &line, deadline - kt_now());
		if (r <= 0) {
			rc = r == 0 ? -1 : 0; /* 0: the time is up; -1: the end of its output */
			break;
		}
		kt_buf_add(out, line.data, line.len);
		kt_buf_putc(out, '\n');
	}
	int st = 0;
	if (rc == 0 && kt_proc_wait(&p, deadline - kt_now(), &st) != 1)
		rc = -1;
	if (rc != 0 && !err->cls)
		kt_fail(err, "%s did not finish within %.0f s (is the Slurm controller answering?)", argv[0],
			KT_SLURM_TIMEOUT_S);
	if (p.pid || p.fd >= 0)
		kt_proc_kill(&p);
	if (rc == 0)
		*status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	kt_buf text = {0};
	if (kt_read_file(log, &text, NULL) == 0)
		kt_buf_add(errout, text.data, text.len);
	kt_buf_free(&text);
	kt_buf_free(&line);
	kt_remove_tree(dir);
	free(log);
	free(dir);
	return rc;
}

kt_slurm kt_slurm_commands(const char *tmpdir) { return (kt_slurm){run_commands, (void *)tmpdir}; }
