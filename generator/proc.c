/* proc.c - child processes through posix_spawn and a socket pair. */
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

double kt_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int kt_proc_spawn(kt_proc *p, char *const argv[], int talk, const char *log, kt_err *err)
{
	int sv[2] = {-1, -1};
	memset(p, 0, sizeof *p);
	p->fd = -1;
	if (talk && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return kt_fail_internal(err, "socketpair: %s", strerror(errno));
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	if (talk) {
		posix_spawn_file_actions_adddup2(&fa, sv[1], 0);
		posix_spawn_file_actions_adddup2(&fa, sv[1], 1);
	}
	if (log) {
		posix_spawn_file_actions_addopen(&fa, 2, log, O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (!talk)
			posix_spawn_file_actions_adddup2(&fa, 2, 1);
	}
	int rc = posix_spawnp(&p->pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (talk)
		close(sv[1]);
	if (rc) {
		if (talk)
			close(sv[0]);
		p->pid = 0;
		return kt_fail_internal(err, "cannot run %s: %s", argv[0], strerror(rc));
	}
	p->fd = talk ? sv[0] : -1;
	return 0;
}

int kt_proc_send(kt_proc *p, const char *data, size_t len, kt_err *err)
{
	while (len) {
		ssize_t n = send(p->fd, data, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return kt_fail_internal(err, "the child process is gone (%s)", strerror(errno));
		data += n;
		len -= (size_t)n;
	}
	return 0;
}

int kt_proc_take_line(kt_proc *p, kt_buf *line)
{
	char *nl = p->in.len ? memchr(p->in.data, '\n', p->in.len) : NULL;
	if (!nl)
		return 0;
	size_t n = (size_t)(nl - p->in.data);
	kt_buf_reset(line);
	kt_buf_add(line, p->in.data, n);
	memmove(p->in.data, nl + 1, p->in.len - n - 1);
	p->in.len -= n + 1;
	p->in.data[p->in.len] = 0;
	return 1;
}

int kt_proc_pump(kt_proc *p)
{
	char chunk[4096];
	ssize_t n = read(p->fd, chunk, sizeof chunk);
	if (n > 0) {
		kt_buf_add(&p->in, chunk, (size_t)n);
		return 0;
	}
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	p->eof = 1;
	return -1;
}

int kt_proc_readline(kt_proc *p, kt_buf *line, double timeout_s)
{
	double deadline = kt_now() + timeout_s;
	for (;;) {
		if (kt_proc_take_line(p, line))
			return 1;
		if (p->eof || p->fd < 0)
			return -1;
		int ms = -1;
		if (timeout_s >= 0) {
			double left = deadline - kt_now();
			if (left <= 0)
				return 0;
			ms = (int)(left * 1000) + 1;
		}
		struct pollfd pfd = {p->fd, POLLIN, 0};
		int r = poll(&pfd, 1, ms);
		if (r < 0 && errno != EINTR)
			return -1;
		if (r > 0)
			kt_proc_pump(p);
	}
}

int kt_proc_wait(kt_proc *p, double timeout_s, int *status)
{
	double deadline = kt_now() + timeout_s;
	if (p->pid <= 0 && p->exited) { /* reaped by an earlier wait */
		*status = p->status;
		return 1;
	}
	if (p->pid <= 0)
		return -1;
	for (;;) {
		pid_t r = waitpid(p->pid, status, timeout_s < 0 ? 0 : WNOHANG);
		if (r == p->pid) {
			p->pid = 0;
			p->exited = 1;
			p->status = *status;
			return 1;
		}
		if (r < 0 && errno != EINTR)
			return -1;
		if (timeout_s >= 0 && kt_now() >= deadline)
			return 0;
		if (r == 0) {
			struct timespec ts = {0, 5 * 1000 * 1000};
			nanosleep(&ts, NULL);
		}
	}
}

void kt_proc_kill(kt_proc *p)
{
	if (p->pid > 0) {
		int st;
		kill(p->pid, SIGKILL);
		while (waitpid(p->pid, &st, 0) < 0 && errno == EINTR)
			;
		p->pid = 0;
	}
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	kt_buf_free(&p->in);
}

void kt_proc_describe(int status, char *buf, size_t bufsz)
{
	if (WIFEXITED(status))
		snprintf(buf, bufsz, "exited with status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, bufsz, "killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
	else
		snprintf(buf, bufsz, "stopped (status %#x)", status);
}
