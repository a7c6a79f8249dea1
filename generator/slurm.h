/* slurm.h - Slurm's commands (sbatch, squeue, sacct) behind a seam.
 *
 * kt asks a Slurm cluster for nothing but what its commands print: farm.c builds their argv and
 * reads their output; this seam only runs them.  The real one spawns them as child processes
 * (proc.h: an argv, never a shell); tests give a fake that answers from a script.
 */
#ifndef KT_SLURM_H
#define KT_SLURM_H

#include "util.h"

#define KT_SLURM_TIMEOUT_S 60.0 /* a command that has not finished by then is killed */

typedef struct kt_slurm {
	/* Runs argv (argv[0]: the command, searched in PATH; NULL-terminated) to its end: 0 with its
	 * exit status (-1 when a signal ended it) in *status, its standard output appended to out and
	 * its standard error to errout; -1 with err naming the command when it cannot be started or
	 * does not finish within KT_SLURM_TIMEOUT_S. */
	int (*run)(void *ctx, const char *const *argv, int *status, kt_buf *out, kt_buf *errout, kt_err *err);
	void *ctx;
} kt_slurm;

/* The real commands, as child processes; their standard error passes through a file in a work
 * directory under tmpdir (NULL: /tmp), removed after.  tmpdir is borrowed. */
kt_slurm kt_slurm_commands(const char *tmpdir);

#endif
