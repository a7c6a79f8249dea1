/* progress.h - one line per kernel while tuning: evaluated of planned, failures, the best time
 * and its percent of the floor, the time left.  On a terminal the line updates in place; else
 * a plain line is printed now and then, and one at the end. */
#ifndef KT_PROGRESS_H
#define KT_PROGRESS_H

#include <stddef.h>
#include <stdio.h>

#include "result.h"

typedef struct kt_progress {
	FILE *f;          /* NULL: silent */
	int tty;
	char label[96];   /* "rmsnorm rows=4096,hidden=4096" */
	double start, last;
	int drawn;        /* a TTY line is on screen */
} kt_progress;

void kt_progress_init(kt_progress *p, FILE *f, const char *label);
/* The live line: evaluated of planned, failures by cause (counts per kt_status), the rate; for
 * one problem its best time (<= 0: none passed yet) against the floor (<= 0: none), for a batch
 * how many of its problems are done.  p may be NULL. */
void kt_progress_update(kt_progress *p, size_t done, size_t planned, const size_t *counts, double best_us,
			double floor_us, size_t problems, size_t problems_done);
/* Takes the live line off the terminal (before other lines are printed); p may be NULL. */
void kt_progress_clear(kt_progress *p);
/* The last line of one problem, with the elapsed time and why its search stopped (stop may be
 * NULL or ""). */
void kt_progress_done(kt_progress *p, size_t done, const size_t *counts, double best_us, double floor_us,
		      const char *stop);

#endif
