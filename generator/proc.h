/* proc.h - child processes: spawned with an argv (posix_spawn, never a shell), talked to over a
 * socket pair on their stdin/stdout, waited for with a timeout, killed.
 *
 * Writing to a child that died fails with -1 instead of raising SIGPIPE (the channel is a
 * socket written with MSG_NOSIGNAL), so a crashed worker never takes the tuner down with it.
 */
#ifndef KT_PROC_H
#define KT_PROC_H

#include <sys/types.h>

#include "util.h"

typedef struct kt_proc {
	pid_t pid;  /* 0 when not running */
	int fd;     /* our end of the child's stdin/stdout; -1 when not talking to it */
	kt_buf in;  /* bytes read from the child, not yet taken as lines */
	int eof;
	int exited, status; /* reaped by kt_proc_wait, with this wait status (a later wait returns it) */
} kt_proc;

/* Starts argv[0] (searched in PATH when it has no '/').  talk: connect its stdin and stdout to
 * p->fd.  log: when not NULL, its stdout (unless talk) and stderr are appended to this file;
 * else they are inherited.  0, or -1 with err set. */
int kt_proc_spawn(kt_proc *p, char *const argv[], int talk, const char *log, kt_err *err);

/* Sends len bytes to the child.  -1 when it is gone. */
int kt_proc_send(kt_proc *p, const char *data, size_t len, kt_err *err);

/* Takes the next whole line (without its newline) into line.  Waits up to timeout_s seconds
 * (< 0: forever).  Returns 1 for a line, 0 on timeout, -1 when the child closed its end. */
int kt_proc_readline(kt_proc *p, kt_buf *line, double timeout_s);

/* Reads what is available without blocking (after poll said fd is readable).
 * Returns -1 once the child closed its end. */
int kt_proc_pump(kt_proc *p);
/* Takes one buffered line, if there is one (1), else 0. */
int kt_proc_take_line(kt_proc *p, kt_buf *line);

/* Waits for the child to exit, up to timeout_s (< 0: forever; 0: a probe).  1 when it exited
 * (*status holds the wait status; also on every later call), 0 on timeout, -1 on error. */
int kt_proc_wait(kt_proc *p, double timeout_s, int *status);

/* Kills the child (SIGKILL), reaps it and closes the channel.  Safe to call twice. */
void kt_proc_kill(kt_proc *p);

/* Describes a wait status: "exited with status 3", "killed by signal 9 (Killed)". */
void kt_proc_describe(int status, char *buf, size_t bufsz);

/* Seconds on a monotonic clock. */
double kt_now(void);

#endif
