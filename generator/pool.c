/* pool.c - the parent side of worker.h: a pool of `kt worker` processes, one per GPU, that
 * shares jobs among them, watches each with a deadline, and restarts a worker that faults, dies
 * or hangs, replaying the setup commands.  The worker itself is worker.c. */
#include "worker.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc.h"

typedef struct pw {
	kt_proc proc;
	int gpu, alive;
	kt_job *job;      /* in flight, or NULL */
	double deadline;
	size_t answered;  /* jobs this GPU's workers finished (answered, faulted or timed out) */
} pw;

struct kt_pool {
	kt_worker_opts o;
	int n;
	pw *w;
	char **setup;
	size_t nsetup;
	char *setup_reply; /* the last setup reply of the first worker */
	int restarts;
	kt_buf line;
};

static const double DEFAULT_TIMEOUT_S = 10.0, DEFAULT_START_TIMEOUT_S = 120.0;

void kt_job_clear(kt_job *j)
{
	free(j->reply);
	j->reply = NULL;
	j->status = KT_OK;
}

static double job_timeout(const kt_pool *p) { return p->o.timeout_s > 0 ? p->o.timeout_s : DEFAULT_TIMEOUT_S; }
static double start_timeout(const kt_pool *p)
{
	return p->o.start_timeout_s > 0 ? p->o.start_timeout_s : DEFAULT_START_TIMEOUT_S;
}

static void stop_worker(pw *w)
{
	kt_proc_kill(&w->proc);
	w->alive = 0;
}

/* Sends cmd and waits for one reply line; 0 when it starts with "ok". */
static int call(kt_pool *p, pw *w, const char *cmd, double timeout, kt_err *err)
{
	kt_buf msg = {0};
	kt_buf_printf(&msg, "%s\n", cmd);
	int rc = kt_proc_send(&w->proc, msg.data, msg.len, err);
	kt_buf_free(&msg);
	if (rc)
		return -1;
	int r = kt_proc_readline(&w->proc, &p->line, timeout);
	if (r <= 0)
		return kt_fail_internal(err, "worker on GPU %d %s after '%.60s'", w->gpu,
					r == 0 ? "did not answer in time" : "died", cmd);
	if (strncmp(kt_buf_str(&p->line), "ok", 2))
		return kt_fail_internal(err, "worker on GPU %d: '%.60s': %s", w->gpu, cmd, kt_buf_str(&p->line));
	return 0;
}

static int start_worker(kt_pool *p, pw *w, kt_err *err)
{
	const kt_worker_opts *o = &p->o;
	char gpu[16], seed[32];
	snprintf(gpu, sizeof gpu, "%d", w->gpu);
	snprintf(seed, sizeof seed, "%llu", (unsigned long long)o->seed);
	char parent[32];
	snprintf(parent, sizeof parent, "%ld", (long)getpid());
	const char *argv[] = {o->exe, "worker", "--backend", o->backend ? o->backend : "cuda", "--gpu", gpu,
			      "--seed", seed, "--parent", parent, NULL};
	int rc = kt_proc_spawn(&w->proc, (char *const *)argv, 1, o->log, err);
	if (rc)
		return -1;
	int r = kt_proc_readline(&w->proc, &p->line, start_timeout(p));
	if (r <= 0 || strncmp(kt_buf_str(&p->line), "ready", 5)) {
		const char *l = kt_buf_str(&p->line);
		kt_fail_internal(err, "the worker for GPU %d did not start: %s", w->gpu,
				 r == 0 ? "no answer in time" : r < 0 ? "it exited" : !strncmp(l, "error\t", 6) ? l + 6 : l);
		stop_worker(w);
		return -1;
	}
	w->alive = 1;
	for (size_t i = 0; i < p->nsetup; i++)
		if (call(p, w, p->setup[i], start_timeout(p), err)) {
			stop_worker(w);
			return -1;
		}
	return 0;
}

kt_pool *kt_pool_new(const kt_worker_opts *o, const int *gpus, int ngpus, kt_err *err)
{
	kt_pool *p = kt_xcalloc(1, sizeof *p);
	p->o = *o; /* the strings are copied: workers are restarted long after the caller's stack is gone */
	p->o.exe = kt_xstrdup(o->exe);
	p->o.backend = o->backend ? kt_xstrdup(o->backend) : NULL;
	p->o.log = o->log ? kt_xstrdup(o->log) : NULL;
	p->n = ngpus;
	p->w = kt_xcalloc((size_t)ngpus, sizeof *p->w);
	for (int i = 0; i < ngpus; i++) {
		p->w[i].gpu = gpus[i];
		p->w[i].proc.fd = -1;
		if (start_worker(p, &p->w[i], err)) {
			kt_pool_free(p);
			return NULL;
		}
	}
	return p;
}

int kt_pool_setup(kt_pool *p, const char *cmd, const char **reply, kt_err *err)
{
	return kt_pool_setup_replay(p, cmd, NULL, reply, err);
}

int kt_pool_setup_replay(kt_pool *p, const char *cmd, const char *replay, const char **reply, kt_err *err)
{
	for (int i = 0; i < p->n; i++) {
		if (!p->w[i].alive && start_worker(p, &p->w[i], err)) /* replays the commands before this one */
			return -1;
		if (call(p, &p->w[i], cmd, start_timeout(p), err)) {
			stop_worker(&p->w[i]);
			return -1;
		}
		if (i == 0) {
			free(p->setup_reply);
			const char *l = kt_buf_str(&p->line);
			p->setup_reply = kt_xstrdup(l[2] == '\t' ? l + 3 : "");
		}
	}
	p->setup = kt_xrealloc(p->setup, (p->nsetup + 1) * sizeof *p->setup);
	p->setup[p->nsetup++] = kt_xstrdup(replay ? replay : cmd);
	if (reply)
		*reply = p->setup_reply;
	return 0;
}

/* Records a reply line for w's job. */
static void finish_job(kt_pool *p, pw *w, const char *line)
{
	w->answered++;
	static const struct {
		const char *word;
		kt_status status;
	} words[] = {{"ok", KT_OK}, {"check-failed", KT_CHECK_FAILED}, {"faulted", KT_FAULTED}, {"error", KT_FAULTED}};
	kt_job *j = w->job;
	size_t n = strcspn(line, "\t");
	j->status = KT_FAULTED;
	for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
		if (strlen(words[i].word) == n && !strncmp(line, words[i].word, n))
			j->status = words[i].status;
	free(j->reply);
	j->reply = kt_xstrdup(line[n] ? line + n + 1 : "");
	if (!strncmp(line, "error", n) && n == 5) {
		kt_buf b = {0};
		kt_buf_printf(&b, "error: %s", j->reply);
		free(j->reply);
		j->reply = kt_buf_detach(&b);
	}
	if (!strncmp(line, "faulted", n) && n == 7) {
		stop_worker(w);
		p->restarts++;
	}
	w->job = NULL;
}

/* w died or hung with a job in flight. */
static void lose_worker(kt_pool *p, pw *w, kt_status status, const char *why)
{
	w->answered++;
	kt_job *j = w->job;
	int st = 0;
	char how[128] = "";
	if (status == KT_FAULTED && kt_proc_wait(&w->proc, 2.0, &st) == 1)
		kt_proc_describe(st, how, sizeof how);
	stop_worker(w);
	p->restarts++;
	j->status = status;
	free(j->reply);
	kt_buf b = {0};
	kt_buf_printf(&b, "%s%s%s", why, how[0] ? ": " : "", how);
	j->reply = kt_buf_detach(&b);
	w->job = NULL;
}

static int submit(kt_pool *p, pw *w, kt_job *j, kt_err *err)
{
	for (int attempt = 0; attempt < 2; attempt++) {
		if (!w->alive && start_worker(p, w, err))
			return -1;
		kt_buf msg = {0};
		kt_buf_printf(&msg, "%s\n", j->cmd);
		int rc = kt_proc_send(&w->proc, msg.data, msg.len, err);
		kt_buf_free(&msg);
		if (rc == 0) {
			w->job = j;
			w->deadline = kt_now() + (j->timeout_s > 0 ? j->timeout_s : job_timeout(p));
			return 0;
		}
		stop_worker(w);
	}
	return kt_fail_internal(err, "cannot talk to the worker on GPU %d", w->gpu);
}

/* Job i is held back by the gate: it is done, not sent. */
static int held(const kt_pool_gate *g, kt_job *jobs, size_t i)
{
	char why[512];
	if (!g || !g->hold || !g->hold(g->ctx, i, why, sizeof why))
		return 0;
	kt_job_clear(&jobs[i]);
	jobs[i].status = KT_NOT_RUN;
	jobs[i].reply = kt_xstrdup(why);
	if (g->done)
		g->done(g->ctx, i, &jobs[i]);
	return 1;
}

static void told(const kt_pool_gate *g, const kt_job *jobs, const kt_job *j)
{
	if (g && g->done)
		g->done(g->ctx, (size_t)(j - jobs), j);
}

int kt_pool_run(kt_pool *p, kt_job *jobs, size_t n, kt_err *err) { return kt_pool_run_gated(p, jobs, n, NULL, err); }

int kt_pool_run_gated(kt_pool *p, kt_job *jobs, size_t n, const kt_pool_gate *gate, kt_err *err)
{
	size_t next = 0, done = 0;
	struct pollfd *pfd = kt_xcalloc((size_t)p->n, sizeof *pfd);
	int rc = 0;
	while (done < n && rc == 0) {
		for (int i = 0; i < p->n && next < n; i++) {
			if (p->w[i].job)
				continue;
			while (next < n && held(gate, jobs, next))
				next++, done++;
			if (next == n)
				break;
			kt_job_clear(&jobs[next]);
			if ((rc = submit(p, &p->w[i], &jobs[next], err)))
				break;
			next++;
		}
		if (rc || done == n)
			break;
		double now = kt_now(), first = now + 3600;
		for (int i = 0; i < p->n; i++) {
			pfd[i] = (struct pollfd){p->w[i].job ? p->w[i].proc.fd : -1, POLLIN, 0};
			if (p->w[i].job && p->w[i].deadline < first)
				first = p->w[i].deadline;
		}
		int ms = first > now ? (int)((first - now) * 1000) + 1 : 0;
		if (poll(pfd, (nfds_t)p->n, ms) < 0 && errno != EINTR) {
			rc = kt_fail_internal(err, "poll: %s", strerror(errno));
			break;
		}
		for (int i = 0; i < p->n; i++) {
			pw *w = &p->w[i];
			if (!w->job)
				continue;
			if (pfd[i].revents)
				kt_proc_pump(&w->proc);
			kt_job *j = w->job;
			if (kt_proc_take_line(&w->proc, &p->line)) {
				finish_job(p, w, kt_buf_str(&p->line));
			} else if (w->proc.eof) {
				lose_worker(p, w, KT_FAULTED, "the worker died");
			} else if (kt_now() > w->deadline) {
				char why[96];
				snprintf(why, sizeof why, "no answer within %.0f s: the worker was killed",
					 w->job->timeout_s > 0 ? w->job->timeout_s : job_timeout(p));
				lose_worker(p, w, KT_TIMED_OUT, why);
			} else {
				continue;
			}
			done++;
			told(gate, jobs, j);
		}
	}
	free(pfd);
	return rc;
}

int kt_pool_restarts(const kt_pool *p) { return p->restarts; }

int kt_pool_gpus(const kt_pool *p, int *gpus, size_t *jobs, int max)
{
	for (int i = 0; i < p->n && i < max; i++) {
		gpus[i] = p->w[i].gpu;
		jobs[i] = p->w[i].answered;
	}
	return p->n;
}

void kt_pool_free(kt_pool *p)
{
	if (!p)
		return;
	for (int i = 0; i < p->n; i++) {
		if (p->w[i].alive)
			kt_proc_send(&p->w[i].proc, "quit\n", 5, NULL);
		if (p->w[i].alive && kt_proc_wait(&p->w[i].proc, 2.0, &(int){0}) == 1)
			p->w[i].alive = 0;
		stop_worker(&p->w[i]);
	}
	for (size_t i = 0; i < p->nsetup; i++)
		free(p->setup[i]);
	free(p->setup);
	free(p->setup_reply);
	free(p->w);
	free((char *)p->o.exe);
	free((char *)p->o.backend);
	free((char *)p->o.log);
	kt_buf_free(&p->line);
	free(p);
}
