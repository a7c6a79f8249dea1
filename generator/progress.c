/* progress.c - the tuning progress line (see progress.h). */
#include "progress.h"

#include <string.h>
#include <unistd.h>

#include "proc.h"

static const double TTY_INTERVAL_S = 0.2;   /* redraws at most this often */
static const double PLAIN_INTERVAL_S = 10.0; /* plain lines at most this often */

void kt_progress_init(kt_progress *p, FILE *f, const char *label)
{
	memset(p, 0, sizeof *p);
	p->f = f;
	p->tty = f && isatty(fileno(f));
	snprintf(p->label, sizeof p->label, "%s", label);
	p->start = p->last = kt_now();
}

/* The best time so far; none passed "yet" while the problem is tuned, none at all once it is done. */
static void put_best(FILE *f, double best_us, double floor_us, int done)
{
	if (best_us <= 0) {
		fputs(done ? ", none passed" : ", none passed yet", f);
		return;
	}
	fprintf(f, ", best %.2f us", best_us);
	if (floor_us > 0)
		fprintf(f, " (%.0f%% of floor)", 100.0 * floor_us / best_us);
}

void kt_progress_update(kt_progress *p, size_t done, size_t planned, const size_t *counts, double best_us,
			double floor_us, size_t problems, size_t problems_done)
{
	double now = kt_now();
	if (!p || !p->f || now - p->last < (p->tty ? TTY_INTERVAL_S : PLAIN_INTERVAL_S))
		return;
	p->last = now;
	char failed[160];
	kt_failures_format(counts, failed, sizeof failed);
	if (p->tty)
		fputs("\r\033[K", p->f);
	fprintf(p->f, "kt: tuning %s: ", p->label);
	if (problems > 1)
		fprintf(p->f, "%zu/%zu done, ", problems_done, problems);
	fprintf(p->f, "%zu evaluated (%.0f/s), %s", done, now > p->start ? (double)done / (now - p->start) : 0.0, failed);
	if (problems <= 1)
		put_best(p->f, best_us, floor_us, 0);
	if (problems <= 1 && done > 0 && planned > done)
		fprintf(p->f, ", at most %.0f s left", (now - p->start) / (double)done * (double)(planned - done));
	if (!p->tty)
		fputc('\n', p->f);
	p->drawn = p->tty;
	fflush(p->f);
}

void kt_progress_clear(kt_progress *p)
{
	if (p && p->f && p->drawn) {
		fputs("\r\033[K", p->f);
		fflush(p->f);
	}
	if (p)
		p->drawn = 0;
}

void kt_progress_done(kt_progress *p, size_t done, const size_t *counts, double best_us, double floor_us,
		      const char *stop)
{
	if (!p || !p->f)
		return;
	kt_progress_clear(p);
	char failed[160];
	kt_failures_format(counts, failed, sizeof failed);
	fprintf(p->f, "kt: tuned %s: %zu evaluated, %s", p->label, done, failed);
	put_best(p->f, best_us, floor_us, 1);
	fprintf(p->f, ", %.1f s", kt_now() - p->start);
	if (stop && *stop)
		fprintf(p->f, "; stopped: %s", stop);
	fputc('\n', p->f);
	fflush(p->f);
}
