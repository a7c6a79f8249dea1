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

static void put_best(FILE *f, double best_us, double floor_us)
{
	if (best_us <= 0) {
		fputs(", none passed yet", f);
		return;
	}
	fprintf(f, ", best %.2f us", best_us);
	if (floor_us > 0)
		fprintf(f, " (%.0f%% of floor)", 100.0 * floor_us / best_us);
}

void kt_progress_update(kt_progress *p, size_t done, size_t planned, size_t failed, double best_us, double floor_us)
{
	double now = kt_now();
	if (!p->f || now - p->last < (p->tty ? TTY_INTERVAL_S : PLAIN_INTERVAL_S))
		return;
	p->last = now;
	if (p->tty)
		fputs("\r\033[K", p->f);
	fprintf(p->f, "kt: tuning %s: %zu/%zu evaluated, %zu failed", p->label, done, planned, failed);
	put_best(p->f, best_us, floor_us);
	if (done > 0 && planned > done)
		fprintf(p->f, ", about %.0f s left", (now - p->start) / (double)done * (double)(planned - done));
	if (!p->tty)
		fputc('\n', p->f);
	p->drawn = p->tty;
	fflush(p->f);
}

void kt_progress_done(kt_progress *p, size_t done, size_t failed, double best_us, double floor_us)
{
	if (!p->f)
		return;
	if (p->drawn)
		fputs("\r\033[K", p->f);
	fprintf(p->f, "kt: tuned %s: %zu evaluated, %zu failed", p->label, done, failed);
	put_best(p->f, best_us, floor_us);
	fprintf(p->f, ", %.1f s\n", kt_now() - p->start);
	p->drawn = 0;
	fflush(p->f);
}
