/* search.c - search strategies over a feasible space (see search.h and docs/search.md). */
#include "search.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* bestfirst: the sampled start is this share of the budget, within these bounds. */
#define START_SHARE 32     /* budget / START_SHARE (16 until 2026-11-27) */
#define START_MIN 4
#define START_MAX 32
/* A gain beats the best by more than the measured noise, and at least by this share. */
#define GAIN_FLOOR 0.005
/* With seeds, the start holds the default, the seeds and this many random points. */
#define SEEDED_RANDOM 2
/* After the start, every EXPLORE_EVERY-th proposal is a random restart point. */
#define EXPLORE_EVERY 8
/* At most this share of the budget is proposed per ask while results decide what comes next. */
#define BATCH_SHARE 16
#define BATCH_MIN 4
/* ... but at least as many as compile at once (kt_search_set_parallel), up to this share. */
#define PARALLEL_SHARE 8

enum { UNASKED, ASKED, TOLD_OK, TOLD_FAILED };

struct strategy;

/* One entry of bestfirst's frontier: an unevaluated neighbour and the time of its parent. */
struct cand {
	double key;
	size_t seq; /* insertion order: ties go to the earlier neighbour, so runs repeat */
	size_t idx;
};

struct kt_search {
	const struct strategy *st;
	const kt_tmpl *t;
	const kt_space *sp;
	size_t budget, asked, told;
	size_t parallel; /* configurations evaluated in the time of one (kt_search_set_parallel) */
	uint64_t rng;
	unsigned char *state; /* per space index: UNASKED, ASKED, TOLD_* */
	long best;
	double best_time;
	double noise;      /* relative: a gain must beat the best by more than this (kt_search_set_noise) */
	double gain_time;  /* the best when it last improved by more than the noise; < 0: none yet */
	size_t since_gain; /* results told since */

	size_t *seeds;   /* proposed first, in this order (kt_search_seed) */
	size_t nseeds, seedpos;

	size_t next;     /* exhaustive: the next index */
	size_t *perm;    /* random order, shuffled lazily (Fisher-Yates) */
	size_t permpos;

	/* bestfirst */
	uint16_t **order;  /* order[p][k]: value index of rank k (integers sorted by value) */
	uint16_t **rank;   /* rank[p][v]: the inverse */
	struct cand *heap; /* min-heap on (key, seq) */
	size_t nheap, capheap, seq;
	size_t start;      /* size of the sampled start */
	size_t proposed;   /* proposals after the start, for the exploration share */
	size_t *trail;     /* the indices in the order asked */
	size_t specpos;    /* trail[0..specpos) were considered for speculation */
	uint16_t *work;    /* one scratch configuration */
};

struct strategy {
	const char *name;
	const char *summary;
	void (*init)(kt_search *s);
	size_t (*ask)(kt_search *s, size_t *idx, size_t max);
	void (*tell)(kt_search *s, size_t idx, double time_us);
};

/* ---- shared pieces ---- */

static uint64_t next_u64(kt_search *s) /* splitmix64 */
{
	uint64_t z = (s->rng += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static size_t uniform(kt_search *s, size_t n) /* in [0, n), n > 0 */
{
	return (size_t)(next_u64(s) % n);
}

static int budget_left(const kt_search *s)
{
	return s->asked < s->budget;
}

static void mark(kt_search *s, size_t i, size_t *idx, size_t *n)
{
	s->state[i] = ASKED;
	if (s->trail)
		s->trail[s->asked] = i;
	s->asked++;
	idx[(*n)++] = i;
}

/* The next unasked index in a random order, or SIZE_MAX when none is left. */
static size_t random_unasked(kt_search *s)
{
	size_t n = s->sp->count;
	if (!s->perm) {
		s->perm = kt_xmalloc((n ? n : 1) * sizeof *s->perm);
		for (size_t i = 0; i < n; i++)
			s->perm[i] = i;
	}
	while (s->permpos < n) {
		size_t j = s->permpos + uniform(s, n - s->permpos);
		size_t v = s->perm[j];
		s->perm[j] = s->perm[s->permpos];
		s->perm[s->permpos++] = v;
		if (s->state[v] == UNASKED)
			return v;
	}
	return SIZE_MAX;
}

/* The next seed not asked yet, or SIZE_MAX. */
static size_t next_seed(kt_search *s)
{
	while (s->seedpos < s->nseeds) {
		size_t i = s->seeds[s->seedpos++];
		if (s->state[i] == UNASKED)
			return i;
	}
	return SIZE_MAX;
}

/* Index of cfg in the space (which is sorted lexicographically), or SIZE_MAX. */
static size_t find_cfg(const kt_space *sp, const uint16_t *cfg)
{
	size_t lo = 0, hi = sp->count, np = (size_t)sp->nparams;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const uint16_t *c = kt_space_cfg(sp, mid);
		int cmp = 0;
		for (size_t p = 0; p < np && !cmp; p++)
			cmp = c[p] < cfg[p] ? -1 : c[p] > cfg[p];
		if (!cmp)
			return mid;
		if (cmp < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return SIZE_MAX;
}

/* ---- exhaustive ---- */

static void no_init(kt_search *s)
{
}

static size_t exhaustive_ask(kt_search *s, size_t *idx, size_t max)
{
	size_t n = 0, i;
	while (n < max && budget_left(s) && (i = next_seed(s)) != SIZE_MAX)
		mark(s, i, idx, &n);
	while (n < max && budget_left(s) && s->next < s->sp->count)
		if (s->state[s->next++] == UNASKED)
			mark(s, s->next - 1, idx, &n);
	return n;
}

static void ignore_tell(kt_search *s, size_t idx, double time_us)
{
}

/* ---- random ---- */

static size_t random_ask(kt_search *s, size_t *idx, size_t max)
{
	size_t n = 0, i;
	while (n < max && budget_left(s) && (i = next_seed(s)) != SIZE_MAX)
		mark(s, i, idx, &n);
	while (n < max && budget_left(s) && (i = random_unasked(s)) != SIZE_MAX)
		mark(s, i, idx, &n);
	return n;
}

/* ---- bestfirst ---- */

static int cand_less(const struct cand *a, const struct cand *b)
{
	return a->key < b->key || (a->key == b->key && a->seq < b->seq);
}

static void heap_push(kt_search *s, double key, size_t idx)
{
	if (s->nheap == s->capheap) {
		s->capheap = s->capheap ? 2 * s->capheap : 64;
		s->heap = kt_xrealloc(s->heap, s->capheap * sizeof *s->heap);
	}
	size_t i = s->nheap++;
	struct cand c = {key, s->seq++, idx};
	while (i > 0 && cand_less(&c, &s->heap[(i - 1) / 2])) {
		s->heap[i] = s->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	s->heap[i] = c;
}

static size_t heap_pop(kt_search *s)
{
	size_t top = s->heap[0].idx;
	struct cand last = s->heap[--s->nheap];
	size_t i = 0;
	for (;;) {
		size_t l = 2 * i + 1, m = i;
		const struct cand *best = &last;
		if (l < s->nheap && cand_less(&s->heap[l], best))
			m = l, best = &s->heap[l];
		if (l + 1 < s->nheap && cand_less(&s->heap[l + 1], best))
			m = l + 1;
		if (m == i)
			break;
		s->heap[i] = s->heap[m];
		i = m;
	}
	if (s->nheap)
		s->heap[i] = last;
	return top;
}

static int value_cmp(const int64_t *vals, uint16_t a, uint16_t b)
{
	return vals[a] < vals[b] ? -1 : vals[a] > vals[b];
}

/* Orders each integer parameter's values by value (declared lists need not be sorted). */
static void build_ranks(kt_search *s)
{
	int np = s->t->nparams;
	s->order = kt_xcalloc((size_t)np, sizeof *s->order);
	s->rank = kt_xcalloc((size_t)np, sizeof *s->rank);
	for (int p = 0; p < np; p++) {
		const kt_param *pa = &s->t->params[p];
		int nv = pa->nvals;
		uint16_t *o = kt_xmalloc((size_t)nv * sizeof *o), *r = kt_xmalloc((size_t)nv * sizeof *r);
		for (int k = 0; k < nv; k++)
			o[k] = (uint16_t)k;
		for (int k = 1; k < nv; k++) /* insertion sort: value lists are short */
			for (int j = k; j > 0 && value_cmp(pa->vals, o[j - 1], o[j]) > 0; j--) {
				uint16_t tmp = o[j];
				o[j] = o[j - 1];
				o[j - 1] = tmp;
			}
		for (int k = 0; k < nv; k++)
			r[o[k]] = (uint16_t)k;
		s->order[p] = o;
		s->rank[p] = r;
	}
}

static void push_if_unasked(kt_search *s, size_t j, double key)
{
	if (j != SIZE_MAX && s->state[j] == UNASKED)
		heap_push(s, key, j);
}

/* The feasible configuration nearest to c that has value v of parameter p, or SIZE_MAX: the
 * fewest and smallest moves of the other parameters (an integer counts the ranks it moves, any
 * other parameter 1), the earliest of equals. */
static size_t nearest_with(const kt_search *s, const uint16_t *c, int p, uint16_t v)
{
	int np = s->t->nparams;
	size_t best = SIZE_MAX;
	long bestd = LONG_MAX;
	for (size_t j = 0; j < s->sp->count; j++) {
		const uint16_t *o = kt_space_cfg(s->sp, j);
		if (o[p] != v)
			continue;
		long d = 0;
		for (int q = 0; q < np && d < bestd; q++)
			if (q != p && o[q] != c[q])
				d += s->t->params[q].type == KT_PINT ? labs((long)s->rank[q][o[q]] - (long)s->rank[q][c[q]]) : 1;
		if (d < bestd) {
			bestd = d;
			best = j;
		}
	}
	return best;
}

/* Neighbours of configuration i: one parameter moved.  An integer moves one step up or down its
 * sorted values (past values that are infeasible with the others, to the nearest feasible one);
 * a bool or a named choice takes each of its other values, with the other parameters moved as
 * little as makes it feasible when it is not as they are (a strategy that needs other tiles or
 * a target, e.g. gemm's MMA=wgmma, is then one step away rather than out of reach). */
static void push_neighbours(kt_search *s, size_t i, double key)
{
	int np = s->t->nparams;
	const uint16_t *c = kt_space_cfg(s->sp, i);
	for (int p = 0; p < np; p++) {
		const kt_param *pa = &s->t->params[p];
		memcpy(s->work, c, (size_t)np * sizeof *c);
		if (pa->type == KT_PINT) {
			int r = s->rank[p][c[p]];
			for (int d = -1; d <= 1; d += 2)
				for (int k = r + d; k >= 0 && k < pa->nvals; k += d) {
					s->work[p] = s->order[p][k];
					size_t j = find_cfg(s->sp, s->work);
					if (j != SIZE_MAX) {
						push_if_unasked(s, j, key);
						break;
					}
				}
		} else {
			for (int v = 0; v < pa->nvals; v++) {
				if (v == c[p])
					continue;
				s->work[p] = (uint16_t)v;
				size_t j = find_cfg(s->sp, s->work);
				push_if_unasked(s, j != SIZE_MAX ? j : nearest_with(s, c, p, (uint16_t)v), key);
			}
		}
	}
}

static void bestfirst_init(kt_search *s)
{
	build_ranks(s);
	s->trail = kt_xmalloc((s->budget + 1) * sizeof *s->trail);
	s->work = kt_xmalloc(((size_t)s->t->nparams + 1) * sizeof *s->work);
	size_t start = s->budget / START_SHARE;
	start = start < START_MIN ? START_MIN : start > START_MAX ? START_MAX : start;
	s->start = start;
}

/* The sampled start: the default configuration when it is feasible, the seeds, then random
 * points. */
static size_t next_start(kt_search *s)
{
	if (s->asked == 0 && s->t->nparams > 0) {
		for (int p = 0; p < s->t->nparams; p++)
			s->work[p] = (uint16_t)s->t->params[p].def;
		size_t d = find_cfg(s->sp, s->work);
		if (d != SIZE_MAX && s->state[d] == UNASKED)
			return d;
	}
	size_t i = next_seed(s);
	return i != SIZE_MAX ? i : random_unasked(s);
}

static size_t next_frontier(kt_search *s)
{
	while (s->nheap) {
		size_t j = heap_pop(s);
		if (s->state[j] == UNASKED)
			return j;
	}
	return SIZE_MAX;
}

/* With the frontier empty while results are in flight: puts the unasked neighbours of the oldest
 * configuration still in flight (the default first) on the frontier, behind every entry with a
 * measured parent.  1 when something was added. */
static int speculate(kt_search *s)
{
	while (s->specpos < s->asked) {
		size_t j = s->trail[s->specpos++];
		if (s->state[j] == ASKED) {
			size_t before = s->nheap;
			push_neighbours(s, j, HUGE_VAL);
			if (s->nheap > before)
				return 1;
		}
	}
	return 0;
}

static size_t bestfirst_ask(kt_search *s, size_t *idx, size_t max)
{
	size_t n = 0, i;
	while (n < max && budget_left(s) && s->asked < s->start) {
		if ((i = next_start(s)) == SIZE_MAX)
			return n;
		mark(s, i, idx, &n);
	}
	if (n)
		return n; /* let the start's results steer the rest */
	size_t cap = s->budget / BATCH_SHARE;
	cap = cap < BATCH_MIN ? BATCH_MIN : cap;
	size_t par = s->parallel < s->budget / PARALLEL_SHARE ? s->parallel : s->budget / PARALLEL_SHARE;
	cap = cap < par ? par : cap;
	while (n < max && n < cap && budget_left(s)) {
		int explore = ++s->proposed % EXPLORE_EVERY == 0;
		i = explore ? random_unasked(s) : next_frontier(s);
		if (i == SIZE_MAX && !explore && speculate(s))
			i = next_frontier(s);
		else if (i == SIZE_MAX && n)
			break; /* rather fewer than guesses: the results in flight will tell */
		if (i == SIZE_MAX)
			i = explore ? next_frontier(s) : random_unasked(s);
		if (i == SIZE_MAX)
			break;
		mark(s, i, idx, &n);
	}
	return n;
}

static void bestfirst_tell(kt_search *s, size_t idx, double time_us)
{
	if (time_us >= 0)
		push_neighbours(s, idx, time_us);
}

/* ---- the table ---- */

static const struct strategy strategies[] = {
	{"exhaustive", "every feasible configuration, in space order", no_init, exhaustive_ask, ignore_tell},
	{"random", "uniform sampling without replacement", no_init, random_ask, ignore_tell},
	{"bestfirst", "best-first search over the parameter lattice with random restarts", bestfirst_init,
	 bestfirst_ask, bestfirst_tell},
};
#define NSTRATEGIES (sizeof strategies / sizeof strategies[0])

static const struct {
	const char *alias, *name;
} aliases[] = {
	{"local", "bestfirst"},
};

const char *kt_search_strategy_name(int i)
{
	return i >= 0 && (size_t)i < NSTRATEGIES ? strategies[i].name : NULL;
}

const char *kt_search_strategy_summary(int i)
{
	return i >= 0 && (size_t)i < NSTRATEGIES ? strategies[i].summary : NULL;
}

static const struct strategy *lookup(const char *name, size_t count, size_t budget)
{
	if (!name || !strcmp(name, "auto"))
		name = count <= budget ? "exhaustive" : "bestfirst";
	for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
		if (!strcmp(name, aliases[i].alias))
			name = aliases[i].name;
	for (size_t i = 0; i < NSTRATEGIES; i++)
		if (!strcmp(name, strategies[i].name))
			return &strategies[i];
	return NULL;
}

kt_search *kt_search_new(const char *strategy, const kt_tmpl *t, const kt_space *space, long budget, uint64_t seed,
			 kt_err *err)
{
	size_t b = budget <= 0 || (unsigned long)budget > space->count ? space->count : (size_t)budget;
	const struct strategy *st = lookup(strategy, space->count, b);
	if (!st) {
		kt_buf names = {0};
		for (size_t i = 0; i < NSTRATEGIES; i++)
			kt_buf_printf(&names, "%s, ", strategies[i].name);
		kt_fail(err, "unknown search strategy '%s' (expected %sauto)", strategy, kt_buf_str(&names));
		kt_buf_free(&names);
		return NULL;
	}
	kt_search *s = kt_xcalloc(1, sizeof *s);
	s->st = st;
	s->t = t;
	s->sp = space;
	s->budget = b;
	s->rng = seed;
	s->best = -1;
	s->gain_time = -1;
	s->parallel = 1;
	s->state = kt_xcalloc(space->count ? space->count : 1, 1);
	st->init(s);
	return s;
}

void kt_search_set_parallel(kt_search *s, size_t n)
{
	s->parallel = n > 0 ? n : 1;
}

void kt_search_seed(kt_search *s, const size_t *idx, size_t n)
{
	s->seeds = kt_xrealloc(s->seeds, (s->nseeds + n + 1) * sizeof *s->seeds);
	for (size_t i = 0; i < n; i++)
		if (idx[i] < s->sp->count)
			s->seeds[s->nseeds++] = idx[i];
	if (s->st->init == bestfirst_init && s->nseeds > 0) { /* seeds stand in for random start points, but for a few */
		size_t want = 1 + s->nseeds + SEEDED_RANDOM;
		s->start = want > s->start ? s->start : want;
		s->start = s->start > 1 + s->nseeds ? s->start : 1 + s->nseeds;
	}
}

void kt_search_known(kt_search *s, size_t idx, double time_us)
{
	if (idx >= s->sp->count || s->state[idx] != UNASKED)
		return;
	s->state[idx] = ASKED; /* as if asked and told, without counting towards the budget */
	kt_search_tell(s, idx, time_us);
}

size_t kt_search_ask(kt_search *s, size_t *idx, size_t max)
{
	return max ? s->st->ask(s, idx, max) : 0;
}

void kt_search_tell(kt_search *s, size_t idx, double time_us)
{
	if (idx >= s->sp->count || s->state[idx] != ASKED)
		return; /* not asked, or told twice: nothing to learn */
	s->state[idx] = time_us >= 0 ? TOLD_OK : TOLD_FAILED;
	s->told++;
	double noise = s->noise > GAIN_FLOOR ? s->noise : GAIN_FLOOR;
	if (time_us >= 0 && (s->gain_time < 0 || time_us < s->gain_time * (1 - noise))) {
		s->gain_time = time_us;
		s->since_gain = 0;
	} else if (s->told > s->start || !kt_search_steered(s)) {
		s->since_gain++; /* the sampled start is not a search that stopped finding */
	}
	if (time_us >= 0 && (s->best < 0 || time_us < s->best_time)) {
		s->best = (long)idx;
		s->best_time = time_us;
	}
	s->st->tell(s, idx, time_us);
}

const char *kt_search_name(const kt_search *s)
{
	return s->st->name;
}

long kt_search_best(const kt_search *s, double *time_us)
{
	if (time_us)
		*time_us = s->best >= 0 ? s->best_time : -1;
	return s->best;
}

size_t kt_search_asked(const kt_search *s)
{
	return s->asked;
}

void kt_search_set_noise(kt_search *s, double rel)
{
	s->noise = rel > 0 ? rel : 0;
}

double kt_search_noise(const kt_search *s)
{
	return s->noise > GAIN_FLOOR ? s->noise : GAIN_FLOOR;
}

size_t kt_search_since_gain(const kt_search *s)
{
	return s->since_gain;
}

int kt_search_steered(const kt_search *s) { return s->st->init == bestfirst_init; }

int kt_search_converged(const kt_search *s, int patience)
{
	return patience > 0 && s->best >= 0 && s->since_gain >= (size_t)patience && kt_search_steered(s);
}

void kt_search_free(kt_search *s)
{
	if (!s)
		return;
	if (s->order)
		for (int p = 0; p < s->t->nparams; p++) {
			free(s->order[p]);
			free(s->rank[p]);
		}
	free(s->order);
	free(s->rank);
	free(s->heap);
	free(s->work);
	free(s->trail);
	free(s->perm);
	free(s->seeds);
	free(s->state);
	free(s);
}
