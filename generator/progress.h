/* progress.h - one line per kernel while tuning: evaluated of planned, failures, the best time
 * and its percent of the floor, the time left.  On a terminal the line updates in place; else
 * a plain line is printed now and then, and one at the end. */
#ifndef KT_PROGRESS_H
#define KT_PROGRESS_H

#include <stddef.h>
#include <stdio.h>

typedef struct kt_progress {
	FILE *f;          /* NULL: silent */
	int tty;
	char label[96];   /* "rmsnorm rows=4096,hidden=4096" */
	double start, last;
	int drawn;        /* a TTY line is on screen */
} kt_progress;

void kt_progress_init(kt_progress *p, FILE *f, const char *label);
/* best_us <= 0: none passed yet; floor_us <= 0: no floor. */
void kt_progress_update(kt_progress *p, size_t done, size_t planned, size_t failed, double best_us, double floor_us);
/* The last line, with the elapsed time; ends the updating line. */
void kt_progress_done(kt_progress *p, size_t done, size_t failed, double best_us, double floor_us);

#endif
