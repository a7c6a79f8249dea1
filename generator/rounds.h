/* rounds.h - the closed loop of stage 2: tune a batch of problems, let a planner (planner.h: the
 * built-in one, or the LLM agent's, agent.h) propose changes to each problem's space, apply them
 * to the template's text, parse it and tune again, for a bounded number of rounds.  The best
 * configuration over all rounds wins (a later round must be strictly faster to win).
 *
 * A further round runs only for a problem whose planner has a reason: the changed template holds
 * configurations the last one could not express (new values or parameters), or its code was
 * revised.  Ruling failing regions out is no reason to tune again (what failed will not be
 * measured again anyway); each round's note says why it was the last.  A round's search starts
 * from what the earlier rounds measured (kt_tune_task.known): it evaluates only what is new.
 *
 * The problems of one round are tuned together (kt_tune_batch).  A round's template is written to
 * the work directory (tune options' workdir, else a temporary one) under the original's file
 * name, and compiled with -I<the original's directory>, so its local headers are found as before.
 *
 * The winning configuration's value indices refer to the winning round's template, which may
 * declare values the original does not (an extended range): a caller that stores it must store
 * values, not indices, and validate them against the template it emits with.
 *
 * Ownership: kt_rounds owns its rounds' texts, results, plans and parsed templates. */
#ifndef KT_ROUNDS_H
#define KT_ROUNDS_H

#include "planner.h"
#include "tune.h"

struct cJSON;

typedef struct kt_round {
	char *tmpl_text;        /* the template this round tuned (round 0: the original's text) */
	kt_tmpl *tmpl;          /* it, parsed; NULL in round 0 (the caller's template) */
	kt_tune_result result;
	char *plan;             /* the planner's proposals after this round (kt_plan_format), or NULL */
	char *note;             /* why the loop stopped or what the planner rejected, or NULL */
	char *transcript;       /* the LLM planner's transcript (JSON), or NULL */
} kt_round;

typedef struct kt_rounds {
	int n;
	kt_round *v;
	int best;               /* the round whose result.best is the fastest; -1 when nothing passed */
	const kt_tmpl *t0;      /* the caller's template (round 0's), borrowed */
} kt_rounds;

/* One problem of a batch of rounds.  The caller fills the first part. */
typedef struct kt_rounds_task {
	kt_problem p;                 /* p.target: the GPU the planner plans for */
	const char *label;            /* progress label, or NULL */
	const uint16_t *seeds;        /* round 0's warm start (kt_tune_task.seeds) */
	size_t nseeds;
	kt_progress *progress;        /* may be NULL */

	kt_rounds out;                /* release with kt_rounds_free */
	int rc;                       /* -1 when round 0 could not be tuned (err says why) */
	kt_err err;
} kt_rounds_task;

/* Runs at most `rounds` rounds of tasks[0..n) (planner NULL or rounds 1: one round, no planner).
 * 0 when the batch ran (each task's rc says how it went; out filled also when nothing passed);
 * -1 with err when nothing could be tuned. */
int kt_rounds_run(kt_rounds_task *tasks, size_t n, const kt_tune_opts *o, const kt_planner *pl, int rounds,
		  kt_err *err);

/* The fastest passing evaluation of the best round, or NULL. */
const kt_eval *kt_rounds_best(const kt_rounds *r);

/* The fastest configuration over the rounds that the original template t can express (every
 * parameter of t is in that round's template with a value t declares), as value indices of t in
 * cfg.  Returns its round, or -1 when none passed.  When a faster one needs values or a template
 * that t does not have, note says so and what the planner proposed to get there. */
int kt_rounds_choose(const kt_rounds *r, const kt_tmpl *t, uint16_t *cfg, kt_buf *note);

/* The evaluations of every round as one result in t's value indices, for a cache record of t:
 * round `round`'s (kt_rounds_choose's) first, then those of the other rounds that t can express
 * and that are not there yet (a configuration measured twice keeps its first time); best at cfg;
 * the figures (roofline, search, versions) of that round.  Release with kt_tune_result_free. */
void kt_rounds_result(const kt_rounds *r, const kt_tmpl *t, int round, const uint16_t *cfg, kt_tune_result *out);

/* The history for a cache record (and `kt cache show`), as a JSON document appended to out:
 * {"best_round": k, "rounds": [{"round", "template" (the text, when it differs from the
 * original's), "evaluated", "ok", "best" (configuration) and "best_us", "plan", "note",
 * "transcript" (the model's, as JSON)}]}.  Holds no key: transcripts are redacted when made. */
void kt_rounds_json(const kt_rounds *r, kt_buf *out);

/* Stage 2 for `kt cache show`, from such a document (a record's "rounds"; NULL: nothing): the best
 * round, and per round what was evaluated, the best configuration, the plan and the note; lines
 * appended to out. */
void kt_rounds_text(const struct cJSON *history, kt_buf *out);

void kt_rounds_free(kt_rounds *r);

#endif
