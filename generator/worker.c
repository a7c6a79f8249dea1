/* worker.c - `kt worker`: one GPU context that fills, checks and times variants of the problems
 * the tuner defines, answering the commands of worker.h on stdin.  The parent side, the pool
 * that drives workers, is pool.c. */
#define _DEFAULT_SOURCE /* getppid, and prctl's declaration on glibc */
#include "worker.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "cmd.h"
#include "gpu.h"
#include "measure.h"
#include "opt.h"
#include "proc.h"
#include "tmpl.h"

#include "worker_int.h"

enum { SET_ALIGN = 256 };                 /* each argument of a set starts at a multiple of this */
static const int MEMORY_SHARE = 4;        /* resident problems take at most 1/MEMORY_SHARE of the GPU's memory */
static const unsigned char POISON = 0xff; /* NaN in every float type, -1 in integers */
enum { MODULES_KEPT = 8 }; /* loaded cubins kept for the next eval: a packed one holds several variants */

/* The arithmetic-rate probes of the check module (kt_check_source), by kt_flops_unit: enough
 * blocks of enough warps on every SM that the pipe, not latency, sets the time (a few ms). */
typedef struct wk_probe {
	const char *kernel;
	int iters, threads, blocks_per_sm;
	double flops; /* per thread and iteration */
} wk_probe;

static const wk_probe wk_probes[KT_NFLOPS_UNITS] = {
	[KT_FLOPS_FMA] = {"kt_fma", 1 << 15, 256, 8, 2.0},                          /* one fused multiply-add */
	[KT_FLOPS_TENSOR] = {"kt_mma", 1 << 17, 256, 4, 2.0 * 16 * 8 * 16 / 32}, /* a warp's m16n8k16, per lane */
};

/* ---- problems ------------------------------------------------------------------------------ */

static int eval_int(const kt_expr *e, const kt_val *env, int64_t dflt, int64_t *out, kt_err *err)
{
	kt_val v;
	char msg[256];
	if (!e) {
		*out = dflt;
		return 0;
	}
	if (kt_expr_eval(e, env, &v, msg, sizeof msg))
		return kt_fail(err, "%s", msg);
	*out = v.type == KT_VINT ? v.i : (int64_t)v.f;
	return 0;
}

static int set_scalar(wk_arg *wa, const kt_val *env, kt_err *err)
{
	kt_val v;
	char msg[256];
	if (kt_expr_eval(wa->a->value, env, &v, msg, sizeof msg))
		return kt_fail(err, "argument '%s': %s", wa->a->name, msg);
	kt_elem_set(wa->a->type, wa->scalar, 0, kt_val_f(v));
	if (v.type == KT_VINT && wa->a->type == KT_I64) /* exact beyond 2^53 */
		memcpy(wa->scalar, &v.i, sizeof v.i);
	return 0;
}

static wk_prob *find_prob(const wk *w, const char *id)
{
	for (size_t i = 0; i < w->nprobs; i++)
		if (!strcmp(w->probs[i]->id, id))
			return w->probs[i];
	return NULL;
}

/* Frees p's device buffers (the context keeps the rest). */
static void release(wk *w, wk_prob *p)
{
	if (p->sets)
		w->ops->free(w->g, p->sets);
	p->sets = 0;
	for (int i = 0; p->args && i < p->t->nargs; i++) {
		wk_arg *wa = &p->args[i];
		if (wa->ref)
			w->ops->free(w->g, wa->ref);
		if (wa->pristine)
			w->ops->free(w->g, wa->pristine);
	}
	free(p->args);
	free(p->params);
	free(p->ptrs);
	p->args = NULL;
	p->params = NULL;
	p->ptrs = NULL;
	if (p->resident)
		w->resident_bytes -= p->bytes;
	p->resident = 0;
}

/* Evicts the least recently used resident problems (never keep) until need more bytes fit in the
 * share of memory that resident problems may take, or none is left to evict. */
static void make_room(wk *w, const wk_prob *keep, size_t need)
{
	size_t budget = (size_t)(w->info.lim.mem_bytes / MEMORY_SHARE);
	while (w->resident_bytes + need > budget) {
		wk_prob *lru = NULL;
		for (size_t i = 0; i < w->nprobs; i++)
			if (w->probs[i]->resident && w->probs[i] != keep && (!lru || w->probs[i]->used < lru->used))
				lru = w->probs[i];
		if (!lru)
			return;
		release(w, lru);
	}
}

/* Sizes p's arguments at its shape (an argument set, *extra for the reference's outputs and the
 * pristine inout inputs) and chooses how many sets the timed launches use.
 *
 * Cold L2 (the default): a timed launch must meet its arguments in DRAM, as a first touch.  The
 * timed launches rotate through the sets 1..T (set 0 is the check's, which a check leaves in the
 * L2), T = ceil(L2_FACTOR * L2 / set), so that between two touches of any line of a set the
 * launches move L2_FACTOR times the L2's size (the set itself and the others of a turn), and each
 * comes after a flush (worker_time.c), which puts the L2 in the state that calls back to back on
 * data not in it leave: an L2 of others' lines, as many of them dirty as the launch makes.  A flush
 * by writing alone would leave an L2 of dirty lines, which the timed launch writes back: up to an
 * L2 of traffic that is not the kernel's; by reading alone, the kernel's own outputs unwritten in
 * the L2 when its timing stops, under its DRAM floor.  The rotation alone left the L2 behind only
 * for lines of one cache priority (the flush says why); it still spreads the samples over where
 * the arguments lie.  Where MAX_SETS or the memory share cannot hold it (sets of some kB) the flush
 * alone keeps them cold.  A set too large for two in the memory share is timed in set 0 alone: it
 * spans the L2 by itself.
 *
 * Warm L2: one set, set 0, which the launch before (or the reset of its inout arguments) left in
 * the L2: the kernel's inputs as the kernel that made them left them. */
static int plan_sets(wk *w, wk_prob *p, size_t *extra, kt_err *err)
{
	const kt_tmpl *t = p->t;
	p->stride = *extra = p->out_bytes = 0;
	p->args = kt_xcalloc((size_t)t->nargs + 1, sizeof *p->args);
	for (int i = 0; i < t->nargs; i++) {
		wk_arg *wa = &p->args[i];
		wa->a = &t->args[i];
		if (wa->a->role == KT_SCALAR) {
			if (set_scalar(wa, p->env, err))
				return -1;
			continue;
		}
		int64_t n = 0;
		if (eval_int(wa->a->extent, p->env, 1, &n, err))
			return -1;
		if (n < 0)
			return kt_fail(err, "argument '%s' has a negative extent (%lld)", wa->a->name, (long long)n);
		wa->n = (size_t)n;
		wa->bytes = wa->n * (size_t)kt_etypes[wa->a->type].size;
		wa->off = p->stride;
		p->stride += (wa->bytes + SET_ALIGN - 1) / SET_ALIGN * SET_ALIGN;
		*extra += wa->bytes * (size_t)((wa->a->role != KT_IN) + (wa->a->role == KT_INOUT));
		p->out_bytes += wa->a->role != KT_IN ? wa->bytes : 0;
	}
	p->nsets = 1;
	p->next = 0;
	if (!wk_cold(p) || !p->stride)
		return 0;
	double set = (double)p->stride, span = L2_FACTOR * (double)w->info.id.l2_bytes;
	double want = 1 + ceil(span / set), room = ((double)w->info.lim.mem_bytes / MEMORY_SHARE - (double)*extra) / set;
	double k = want < MAX_SETS ? want : MAX_SETS;
	k = k < room ? k : room;
	p->nsets = k < 1 ? 1 : (int)k;
	return 0;
}

/* Where argument i of set s lies. */
static kt_dptr arg_at(const wk_prob *p, int s, int i) { return p->sets + (size_t)s * p->stride + p->args[i].off; }

static int alloc_args(wk *w, wk_prob *p, kt_err *err)
{
	const kt_tmpl *t = p->t;
	size_t extra = 0;
	if (plan_sets(w, p, &extra, err))
		return -1;
	p->bytes = p->stride * (size_t)p->nsets + extra;
	make_room(w, p, p->bytes);
	p->resident = 1; /* counted from here, so that a failed allocation is released with the rest */
	w->resident_bytes += p->bytes;
	if (p->stride && w->ops->alloc(w->g, p->stride * (size_t)p->nsets, &p->sets, err))
		return -1;
	for (int i = 0; i < t->nargs; i++) {
		wk_arg *wa = &p->args[i];
		if (wa->a->role == KT_SCALAR)
			continue;
		if (wa->a->role != KT_IN && w->ops->alloc(w->g, wa->bytes, &wa->ref, err))
			return -1;
		if (wa->a->role == KT_INOUT && w->ops->alloc(w->g, wa->bytes, &wa->pristine, err))
			return -1;
	}
	size_t flush_bytes = (size_t)(L2_FACTOR * (double)w->info.id.l2_bytes);
	if (!w->scratch && wk_cold(p)) { /* every cold sample comes after a flush (worker_time.c) */
		w->scratch_bytes = flush_bytes;
		if (w->ops->alloc(w->g, w->scratch_bytes, &w->scratch, err))
			return -1;
	}
	size_t np = (size_t)p->nsets * (size_t)(t->nargs + 1);
	p->params = kt_xcalloc(np, sizeof *p->params);
	p->ptrs = kt_xcalloc(np, sizeof *p->ptrs);
	for (int s = 0; s < p->nsets; s++)
		for (int i = 0; i < t->nargs; i++) {
			size_t j = (size_t)s * (size_t)t->nargs + (size_t)i;
			if (p->args[i].a->role == KT_SCALAR) {
				p->params[j] = p->args[i].scalar;
			} else {
				p->ptrs[j] = arg_at(p, s, i);
				p->params[j] = &p->ptrs[j];
			}
		}
	return 0;
}

/* Fresh inputs in set 0 (kt_fill_<etype> on the device, seeded per argument), copied to the
 * other sets (doubling the copied sets each time) and, for inout arguments, kept pristine for
 * the resets. */
static int fill_inputs(wk *w, wk_prob *p, kt_err *err)
{
	for (int i = 0; i < p->t->nargs; i++) {
		wk_arg *wa = &p->args[i];
		if (wa->a->role == KT_SCALAR || wa->a->role == KT_OUT || !wa->n)
			continue;
		kt_dptr d = arg_at(p, 0, i);
		uint64_t n = wa->n, seed = w->seed ^ (0x51ed2701ULL * (uint64_t)(i + 1));
		int kind = (int)wa->a->fill.kind, is_float = kt_etypes[wa->a->type].is_float;
		double a = wa->a->fill.a, b = wa->a->fill.b, neginf = wa->a->fill.neginf;
		void *params[] = {&d, &n, &seed, &kind, &a, &b, &neginf, &is_float};
		int64_t blocks = (int64_t)((n + CHECK_BLOCK - 1) / CHECK_BLOCK), cap = (int64_t)w->info.id.sms * 32;
		int64_t grid[3] = {blocks < cap ? blocks : cap, 1, 1}, block[3] = {CHECK_BLOCK, 1, 1};
		if (w->ops->launch(w->g, w->fill_fn[wa->a->type], grid, block, 0, params, err))
			return -1;
		if (wa->a->role == KT_INOUT && w->ops->dtod(w->g, wa->pristine, d, wa->bytes, err))
			return -1;
	}
	for (int have = 1, n; have < p->nsets && p->stride; have += n) {
		n = have < p->nsets - have ? have : p->nsets - have;
		if (w->ops->dtod(w->g, p->sets + (size_t)have * p->stride, p->sets, (size_t)n * p->stride, err))
			return -1;
	}
	return w->ops->sync(w->g, err);
}

static void **set_params(const wk_prob *p, int s) { return p->params + (size_t)s * (size_t)p->t->nargs; }

int wk_events(wk *w, size_t n, kt_err *err)
{
	if (n <= w->nev)
		return 0;
	w->ev = kt_xrealloc(w->ev, n * sizeof *w->ev);
	for (; w->nev < n; w->nev++)
		if (w->ops->event_new(w->g, &w->ev[w->nev], err))
			return -1;
	return 0;
}

/* ---- kernels --------------------------------------------------------------------------------- */

static int read_module(wk *w, const char *cubin, void **mod, kt_err *err)
{
	kt_buf img = {0};
	int rc = kt_read_file(cubin, &img, err);
	if (rc == 0)
		rc = w->ops->load(w->g, img.data, img.len, mod, err);
	kt_buf_free(&img);
	return rc;
}

/* The module of cubin, loaded once while kept: the variants packed in one cubin are evaluated one
 * after the other, and a unit's cubin never changes while its tuner runs.  Release with
 * put_module.  Past MODULES_KEPT, the least recently used module not in use is unloaded. */
static int get_module(wk *w, const char *cubin, void **mod, kt_err *err)
{
	wk_module *m = NULL;
	for (size_t i = 0; i < w->nmods && !m; i++)
		if (!strcmp(w->mods[i].path, cubin))
			m = &w->mods[i];
	if (!m) {
		void *loaded;
		if (read_module(w, cubin, &loaded, err))
			return -1;
		for (size_t i = 0; i < w->nmods && w->nmods >= MODULES_KEPT; i++)
			if (!w->mods[i].refs && (!m || w->mods[i].used < m->used))
				m = &w->mods[i];
		if (m) {
			w->ops->unload(w->g, m->mod);
			free(m->path);
		} else {
			w->mods = kt_xrealloc(w->mods, (w->nmods + 1) * sizeof *w->mods);
			m = &w->mods[w->nmods++];
		}
		*m = (wk_module){.path = kt_xstrdup(cubin), .mod = loaded};
	}
	m->refs++;
	m->used = ++w->clock;
	*mod = m->mod;
	return 0;
}

static void put_module(wk *w, void *mod)
{
	for (size_t i = 0; i < w->nmods; i++)
		if (w->mods[i].mod == mod && w->mods[i].refs > 0)
			w->mods[i].refs--;
}

/* The reference's launch: ref_grid/ref_block/ref_smem at the shape. */
static int ref_launch(const wk_prob *p, kt_launch *l, kt_err *err)
{
	const kt_tmpl *t = p->t;
	memset(l, 0, sizeof *l);
	for (int d = 0; d < 3; d++)
		if (eval_int(t->ref_grid[d], p->env, 1, &l->grid[d], err) ||
		    eval_int(t->ref_block[d], p->env, 1, &l->block[d], err))
			return -1;
	return eval_int(t->ref_smem, p->env, 0, &l->smem, err);
}

static int load_kernel(wk *w, const char *cubin, const char *name, const char *config, wk_kernel *k, kt_err *err)
{
	const wk_prob *p = w->p;
	memset(k, 0, sizeof *k);
	if (!strcmp(config, "-")) {
		if (ref_launch(p, &k->l, err))
			return WK_ERROR;
	} else {
		uint16_t cfg[KT_MAX_SLOTS];
		kt_val env[KT_MAX_SLOTS];
		if (kt_tmpl_parse_config(p->t, config, cfg, err))
			return WK_ERROR;
		kt_tmpl_env(p->t, p->shape, cfg, env);
		if (kt_tmpl_launch(p->t, env, &k->l, err))
			return WK_ERROR;
	}
	if (get_module(w, cubin, &k->mod, err))
		return WK_ERROR;
	if (kt_gpu_function(w->g, k->mod, name, &k->fn, err))
		return WK_ERROR;
	if (k->l.smem > w->info.lim.smem_block && w->ops->set_dyn_smem(w->g, k->fn, k->l.smem, err))
		return WK_ERROR;
	return WK_OK;
}

static void unload_kernel(wk *w, wk_kernel *k)
{
	if (k->mod)
		put_module(w, k->mod);
	k->mod = NULL;
}

/* Inout arguments of set s back to their inputs. */
int wk_restore(wk *w, int s, kt_err *err)
{
	const wk_prob *p = w->p;
	for (int i = 0; i < p->t->nargs; i++)
		if (p->args[i].a->role == KT_INOUT && w->ops->dtod(w->g, arg_at(p, s, i), p->args[i].pristine, p->args[i].bytes, err))
			return -1;
	return 0;
}

int wk_launch(wk *w, const wk_kernel *k, int s, kt_err *err)
{
	return w->ops->launch(w->g, k->fn, k->l.grid, k->l.block, k->l.smem, set_params(w->p, s), err);
}

/* One run on set 0 with poisoned outputs and reset inout buffers. */
static int run_once(wk *w, const wk_kernel *k, kt_err *err)
{
	const wk_prob *p = w->p;
	for (int i = 0; i < p->t->nargs; i++)
		if (p->args[i].a->role == KT_OUT && w->ops->memset8(w->g, arg_at(p, 0, i), POISON, p->args[i].bytes, err))
			return WK_FAULT;
	if (wk_restore(w, 0, err) || wk_launch(w, k, 0, err) || w->ops->sync(w->g, err))
		return WK_FAULT;
	return WK_OK;
}

/* Runs the reference (p->ref) once on set 0 and keeps its outputs as what every variant is
 * compared with.  *k stays loaded for the caller to time. */
static int run_reference(wk *w, wk_kernel *k, kt_err *err)
{
	const wk_prob *p = w->p;
	int rc = load_kernel(w, p->ref[0], p->ref[1], p->ref[2], k, err);
	if (rc == WK_OK)
		rc = run_once(w, k, err);
	for (int i = 0; rc == WK_OK && i < p->t->nargs; i++)
		if (p->args[i].a->role == KT_OUT || p->args[i].a->role == KT_INOUT)
			if (w->ops->dtod(w->g, p->args[i].ref, arg_at(p, 0, i), p->args[i].bytes, err))
				rc = WK_FAULT;
	return rc;
}

/* Makes the command's problem (w->p) resident: its buffers, its inputs and, once the reference
 * ran, the reference's outputs again. */
static int activate(wk *w, kt_err *err)
{
	wk_prob *p = w->p;
	p->used = ++w->clock;
	if (p->resident)
		return WK_OK;
	if (!w->check_mod)
		return kt_fail_internal(err, "problem %s used before `check` (no fill kernels)", p->id), WK_ERROR;
	if (alloc_args(w, p, err)) {
		release(w, p);
		return WK_ERROR;
	}
	if (fill_inputs(w, p, err))
		return WK_FAULT;
	if (!p->have_ref)
		return WK_OK;
	wk_kernel k;
	int rc = run_reference(w, &k, err);
	unload_kernel(w, &k);
	return rc;
}


/* Compares every out/inout argument of set 0 (or of the reference itself: self) with the
 * reference on the device.  WK_OK when all agree; 1 with msg set when some differ. */
static int compare(wk *w, int self, kt_buf *msg, kt_err *err)
{
	const wk_prob *p = w->p;
	int bad_args = 0;
	for (int i = 0; i < p->t->nargs; i++) {
		const wk_arg *wa = &p->args[i];
		if (wa->a->role == KT_IN || wa->a->role == KT_SCALAR || !wa->n)
			continue;
		void *fn = w->check_fn[wa->a->type];
		if (!fn)
			return kt_fail_internal(err, "no check kernel for %s (was `check` sent?)", kt_etypes[wa->a->type].name), WK_ERROR;
		uint64_t res[2] = {0, UINT64_MAX}, n = wa->n;
		kt_dptr out = self ? wa->ref : arg_at(p, 0, i), ref = wa->ref;
		double atol = p->t->atol, rtol = p->t->rtol;
		void *params[] = {&out, &ref, &n, &atol, &rtol, &w->res};
		int64_t blocks = (int64_t)((n + CHECK_BLOCK - 1) / CHECK_BLOCK), cap = (int64_t)w->info.id.sms * 16;
		int64_t grid[3] = {blocks < cap ? blocks : cap, 1, 1}, block[3] = {CHECK_BLOCK, 1, 1};
		if (w->ops->htod(w->g, w->res, res, sizeof res, err) ||
		    w->ops->launch(w->g, fn, grid, block, 0, params, err) || w->ops->sync(w->g, err) ||
		    w->ops->dtoh(w->g, res, w->res, sizeof res, err))
			return WK_FAULT;
		if (!res[0])
			continue;
		size_t es = (size_t)kt_etypes[wa->a->type].size;
		unsigned char got[8], want[8];
		if (w->ops->dtoh(w->g, got, out + res[1] * es, es, err) ||
		    w->ops->dtoh(w->g, want, wa->ref + res[1] * es, es, err))
			return WK_FAULT;
		if (bad_args++)
			kt_buf_puts(msg, "; ");
		if (self)
			kt_buf_printf(msg, "the reference left %llu of %zu elements of '%s' NaN (unwritten?), first at [%llu]",
				      (unsigned long long)res[0], wa->n, wa->a->name, (unsigned long long)res[1]);
		else
			kt_buf_printf(msg, "'%s': %llu of %zu elements differ from the reference beyond %g + %g*|ref|; first at [%llu]: got %.6g, want %.6g",
				      wa->a->name, (unsigned long long)res[0], wa->n, atol, rtol, (unsigned long long)res[1],
				      kt_elem_get(wa->a->type, got, 0), kt_elem_get(wa->a->type, want, 0));
	}
	return bad_args ? 1 : WK_OK;
}

/* ---- commands ------------------------------------------------------------------------------ */

typedef struct wk_cmd {
	const char *name;
	int nfields;    /* fields after the name; -1: any */
	int problem;    /* the first field names a problem, made resident before run */
	int (*run)(wk *w, char **f, int nf, kt_buf *reply, kt_err *err);
} wk_cmd;

/* `problem ID TEMPLATE SHAPE [T=x]... [measure.NAME=VALUE]...`: defines (or redefines) a problem. */
static int cmd_problem(wk *w, char **f, int nf, kt_buf *reply, kt_err *err)
{
	if (nf < 3)
		return kt_fail_internal(err, "problem: ID TEMPLATE SHAPE [T=x]... [measure.NAME=VALUE]..."), WK_ERROR;
	kt_measure m = {{0}};
	const char *types[MAX_FIELDS];
	int ntypes = 0;
	for (int i = 3; i < nf; i++) {
		int r = kt_measure_field(&m, f[i], err);
		if (r < 0)
			return WK_ERROR;
		if (r == 0)
			types[ntypes++] = f[i];
	}
	kt_buf diags = {0};
	kt_tmpl_opts to = {.types = types, .ntypes = ntypes, .sms = w->info.id.sms};
	kt_tmpl *t = kt_tmpl_parse(f[1], &to, &diags, err);
	kt_buf_free(&diags);
	int64_t shape[KT_MAX_SLOTS];
	if (!t || kt_tmpl_parse_shape(t, f[2], shape, err)) {
		kt_tmpl_free(t);
		return WK_ERROR;
	}
	wk_prob *p = find_prob(w, f[0]);
	if (p) { /* redefined: it starts over */
		release(w, p);
		kt_tmpl_free(p->t);
		for (int i = 0; i < 3; i++)
			free(p->ref[i]);
	} else {
		w->probs = kt_xrealloc(w->probs, (w->nprobs + 1) * sizeof *w->probs);
		p = w->probs[w->nprobs++] = kt_xcalloc(1, sizeof *p);
		p->id = kt_xstrdup(f[0]);
	}
	*p = (wk_prob){.id = p->id, .t = t, .m = m};
	memcpy(p->shape, shape, sizeof shape);
	kt_tmpl_env(t, p->shape, NULL, p->env);
	kt_buf_puts(reply, "ok");
	return WK_OK;
}

static int cmd_check(wk *w, char **f, int nf, kt_buf *reply, kt_err *err)
{
	if (w->check_mod)
		w->ops->unload(w->g, w->check_mod);
	w->check_mod = NULL;
	if (read_module(w, f[0], &w->check_mod, err))
		return WK_ERROR;
	for (int i = 0; i < 2 * KT_NETYPES; i++) {
		char name[64];
		snprintf(name, sizeof name, "kt_%s_%s", i < KT_NETYPES ? "check" : "fill", kt_etypes[i % KT_NETYPES].name);
		if (w->ops->function(w->g, w->check_mod, name, i < KT_NETYPES ? &w->check_fn[i] : &w->fill_fn[i - KT_NETYPES]))
			return kt_fail_internal(err, "%s has no kernel %s", f[0], name), WK_ERROR;
	}
	for (int u = 0; u < KT_NFLOPS_UNITS; u++)
		if (w->ops->function(w->g, w->check_mod, wk_probes[u].kernel, &w->rate_fn[u]))
			return kt_fail_internal(err, "%s has no kernel %s", f[0], wk_probes[u].kernel), WK_ERROR;
	if (w->ops->function(w->g, w->check_mod, "kt_l2_flush", &w->flush_fn))
		return kt_fail_internal(err, "%s has no kernel kt_l2_flush", f[0]), WK_ERROR;
	if (w->ops->function(w->g, w->check_mod, "kt_spin", &w->spin_fn))
		w->spin_fn = NULL;
	kt_buf_puts(reply, "ok");
	return WK_OK;
}

/* `ref ID CUBIN KERNEL CONFIG|- [RACE_US|untimed]`: runs the reference and checks that it writes
 * every output; then times it, to the estimate only when slower than RACE_US (its time is for
 * the report), or not at all ("untimed": a replay on a restarted worker, or a reference whose
 * time nobody reads; the reply's times are then 0). */
static int cmd_ref(wk *w, char **f, int nf, kt_buf *reply, kt_err *err)
{
	if (nf != 4 && nf != 5)
		return kt_fail_internal(err, "ref: ID CUBIN KERNEL CONFIG [RACE_US|untimed]"), WK_ERROR;
	const int timed = nf == 4 || strcmp(f[4], "untimed");
	const double race_us = nf == 5 && timed ? atof(f[4]) : 0;
	wk_prob *p = w->p;
	for (int i = 0; i < 3; i++) {
		free(p->ref[i]);
		p->ref[i] = kt_xstrdup(f[1 + i]);
	}
	p->have_ref = 0;
	wk_kernel k;
	int rc = run_reference(w, &k, err);
	double med = 0, spread = 0;
	int raced;
	kt_buf msg = {0};
	int cmp = rc == WK_OK ? compare(w, 1, &msg, err) : rc;
	if (cmp == 1) {
		rc = WK_ERROR;
		kt_fail(err, "%s", kt_buf_str(&msg));
	} else {
		rc = cmp;
	}
	kt_buf_free(&msg);
	if (rc == WK_OK && timed)
		rc = wk_time_kernel(w, &k, race_us, &med, &spread, &raced, err);
	unload_kernel(w, &k);
	if (rc == WK_OK) {
		p->have_ref = 1;
		kt_buf_printf(reply, "ok\t%.4f\t%.4f", med, spread);
	}
	return rc;
}

/* `eval ID CUBIN KERNEL CONFIG [RACE_US]`. */
static int cmd_eval(wk *w, char **f, int nf, kt_buf *reply, kt_err *err)
{
	if (nf != 4 && nf != 5)
		return kt_fail_internal(err, "eval: ID CUBIN KERNEL CONFIG [RACE_US]"), WK_ERROR;
	if (!w->p->have_ref)
		return kt_fail_internal(err, "eval before ref"), WK_ERROR;
	double race_us = nf == 5 ? atof(f[4]) : 0;
	wk_kernel k;
	int rc = load_kernel(w, f[1], f[2], f[3], &k, err);
	if (rc == WK_OK)
		rc = run_once(w, &k, err);
	kt_buf msg = {0};
	int cmp = rc == WK_OK ? compare(w, 0, &msg, err) : rc, raced = 0;
	double med = 0, spread = 0;
	if (cmp == 1)
		kt_buf_printf(reply, "check-failed\t%s", kt_buf_str(&msg));
	else if ((rc = cmp) == WK_OK && (rc = wk_time_kernel(w, &k, race_us, &med, &spread, &raced, err)) == WK_OK)
		kt_buf_printf(reply, "ok\t%.4f\t%.4f%s", med, spread, raced ? "\traced" : "");
	kt_buf_free(&msg);
	unload_kernel(w, &k);
	return rc;
}

/* `retime ID ROUNDS (CUBIN KERNEL CONFIG)...`: candidates timed interleaved, round by round, a
 * sample of each per round (in graph mode each its own graph, all of one size: the first
 * candidate's estimate on the stream sizes them).  Round r starts at rival r (A B C, B C A,
 * C A B, ...): the timed launches go through the cold L2's rotation of argument sets in turn,
 * and a fixed order would give a rival the same set in every round whenever the rivals are as
 * many as the sets (or a multiple): where its arguments lie in memory then told it from its
 * rivals (rmsnorm 2048 x 8192: one configuration 25.1 us on one set and 27.7 us on the other).
 * With a cold L2 each sample comes after a flush (worker_time.c), as in a sweep: here a set is
 * reused by another rival than the one that touched it last, and a rival that streams its inputs
 * evict-first would else meet the lines a normal rival left on its set, always the same rival in
 * the same place of the order (an H100, gemm_sm90 at 1 x 4096 x 4096: one rival 14.4 us, its twin
 * 19.0 us, both 18.1 to 18.5 us timed alone). */
static int cmd_retime(wk *w, char **f, int nf, kt_buf *reply, kt_err *err)
{
	int rounds = atoi(f[1]);
	size_t nk = (size_t)(nf - 2) / 3;
	if (rounds < 1 || nk < 1 || (nf - 2) % 3)
		return kt_fail_internal(err, "retime: ID ROUNDS (CUBIN KERNEL CONFIG)..."), WK_ERROR;
	wk_kernel *k = kt_xcalloc(nk, sizeof *k);
	wk_timer *tm = kt_xcalloc(nk, sizeof *tm);
	double *t = kt_xcalloc(nk * (size_t)rounds, sizeof *t), est[ESTIMATE_REPS] = {0}, med = 0, spread = 0;
	size_t n = nk * (size_t)rounds;
	int rc = wk_events(w, 2 * (n > ESTIMATE_REPS ? n : ESTIMATE_REPS), err) ? WK_FAULT : WK_OK;
	for (size_t c = 0; rc == WK_OK && c < nk; c++) {
		rc = load_kernel(w, f[2 + 3 * c], f[3 + 3 * c], f[4 + 3 * c], &k[c], err);
		tm[c] = (wk_timer){.k = &k[c], .per = 1};
	}
	for (size_t c = 0; rc == WK_OK && c < nk; c++) /* warm-up */
		for (int i = 0; rc == WK_OK && i < ESTIMATE_REPS; i++)
			rc = wk_sample(w, &tm[c], -1, err) ? WK_FAULT : WK_OK;
	if (rc == WK_OK && wk_graph_mode(w->p)) {
		rc = wk_time_samples(w, &tm[0], ESTIMATE_REPS, HOST_GUESS_US, est, NULL, err) ? WK_FAULT : WK_OK;
		wk_stats(est, ESTIMATE_REPS, &med, &spread);
		for (size_t c = 0; rc == WK_OK && c < nk; c++)
			rc = wk_timer_graph(w, &tm[c], med, err) ? WK_FAULT : WK_OK;
	}
	/* The host's cost of queueing a sample, from one more untimed turn of them: it sizes the
	 * hold.  (Measured on one sample and the wait for it, it was 40-170 us where queueing takes
	 * 3-4: the GPU spun for tens of milliseconds before every block.) */
	double t0 = kt_now(), host_us = 0;
	for (size_t c = 0; rc == WK_OK && c < nk; c++)
		rc = wk_sample(w, &tm[c], -1, err) ? WK_FAULT : WK_OK;
	host_us = (kt_now() - t0) * 1e6 / (double)nk;
	if (rc == WK_OK)
		rc = wk_hold(w, wk_hold_us(n, host_us), err) ? WK_FAULT : WK_OK;
	for (int r = 0; rc == WK_OK && r < rounds; r++)
		for (size_t j = 0; rc == WK_OK && j < nk; j++) { /* round r starts at rival r */
			size_t c = (j + (size_t)r) % nk;
			rc = wk_sample(w, &tm[c], (long)((size_t)r * nk + c), err) ? WK_FAULT : WK_OK;
		}
	if (rc == WK_OK && w->ops->sync(w->g, err))
		rc = WK_FAULT;
	for (int r = 0; rc == WK_OK && r < rounds; r++)
		for (size_t c = 0; rc == WK_OK && c < nk; c++) {
			double *v = &t[c * (size_t)rounds + (size_t)r];
			rc = wk_elapsed_us(w, (size_t)r * nk + c, v, err) ? WK_FAULT : WK_OK;
			*v /= tm[c].per;
		}
	if (rc == WK_OK) {
		kt_buf_puts(reply, "ok");
		for (size_t c = 0; c < nk; c++) {
			wk_stats(t + c * (size_t)rounds, (size_t)rounds, &med, &spread);
			kt_buf_printf(reply, "\t%.4f\t%.4f", med, spread);
		}
	}
	for (size_t c = 0; c < nk; c++) {
		if (wk_timer_end(w, &tm[c], rc == WK_OK ? err : NULL) && rc == WK_OK)
			rc = WK_FAULT;
		unload_kernel(w, &k[c]);
	}
	free(k);
	free(tm);
	free(t);
	return rc;
}

static int cmd_bw(wk *w, char **f, int nf, kt_buf *reply, kt_err *err)
{
	size_t bytes = (size_t)strtoull(f[0], NULL, 10);
	kt_dptr a = 0, b = 0;
	enum { REPS = 5 };
	double t[REPS];
	int rc = wk_events(w, 2 * REPS, err) || w->ops->alloc(w->g, bytes, &a, err) || w->ops->alloc(w->g, bytes, &b, err) ||
		 w->ops->memset8(w->g, a, 1, bytes, err) || w->ops->dtod(w->g, b, a, bytes, err) ? WK_FAULT : WK_OK;
	for (size_t i = 0; rc == WK_OK && i < REPS; i++)
		if (w->ops->record(w->g, w->ev[2 * i], err) || w->ops->dtod(w->g, b, a, bytes, err) ||
		    w->ops->record(w->g, w->ev[2 * i + 1], err))
			rc = WK_FAULT;
	if (rc == WK_OK && w->ops->sync(w->g, err))
		rc = WK_FAULT;
	for (size_t i = 0; rc == WK_OK && i < REPS; i++)
		if (wk_elapsed_us(w, i, &t[i], err))
			rc = WK_FAULT;
	w->ops->free(w->g, a);
	w->ops->free(w->g, b);
	if (rc == WK_OK) {
		double med, spread;
		wk_stats(t, REPS, &med, &spread);
		kt_buf_printf(reply, "ok\t%.1f", 2.0 * (double)bytes / (med * 1e-6) / 1e9);
	}
	return rc;
}

/* `rate [UNIT]`: the best of a few timed launches of the probe kernel of a kt_flops_unit (fma
 * when none is given), in GFLOP/s; 0 when the probe says that it cannot run here. */
static int cmd_rate(wk *w, char **f, int nf, kt_buf *reply, kt_err *err)
{
	int u = nf == 0 ? KT_FLOPS_FMA : -1;
	for (int i = 0; nf == 1 && i < KT_NFLOPS_UNITS; i++)
		if (!strcmp(f[0], kt_flops_units[i]))
			u = i;
	if (u < 0)
		return kt_fail_internal(err, "rate: expected no field or one of fma, tensor"), WK_ERROR;
	if (!w->rate_fn[u])
		return kt_fail_internal(err, "rate before check"), WK_ERROR;
	enum { REPS = 3 };
	const wk_probe *pr = &wk_probes[u];
	int iters = pr->iters;
	kt_dptr out = w->res;
	void *params[] = {&out, &iters};
	int64_t grid[3] = {(int64_t)w->info.id.sms * pr->blocks_per_sm, 1, 1}, block[3] = {pr->threads, 1, 1};
	float mark = 0;
	double t[REPS];
	int rc = wk_events(w, 2 * REPS, err) || w->ops->memset8(w->g, w->res, 0, sizeof mark, err) ||
			 w->ops->launch(w->g, w->rate_fn[u], grid, block, 0, params, err)
		 ? WK_FAULT : WK_OK;
	for (size_t i = 0; rc == WK_OK && i < REPS; i++)
		if (w->ops->record(w->g, w->ev[2 * i], err) || w->ops->launch(w->g, w->rate_fn[u], grid, block, 0, params, err) ||
		    w->ops->record(w->g, w->ev[2 * i + 1], err))
			rc = WK_FAULT;
	if (rc == WK_OK && (w->ops->sync(w->g, err) || w->ops->dtoh(w->g, &mark, w->res, sizeof mark, err)))
		rc = WK_FAULT;
	for (size_t i = 0; rc == WK_OK && i < REPS; i++)
		if (wk_elapsed_us(w, i, &t[i], err))
			rc = WK_FAULT;
	if (rc == WK_OK) {
		double best = t[0], flops = pr->flops * iters * (double)(grid[0] * pr->threads);
		for (size_t i = 1; i < REPS; i++)
			best = t[i] < best ? t[i] : best;
		kt_buf_printf(reply, "ok\t%.1f", mark == -1.f || best <= 0 ? 0.0 : flops / (best * 1e-6) / 1e9);
	}
	return rc;
}

static const wk_cmd wk_cmds[] = {
	{"bw", 1, 0, cmd_bw},
	{"check", 1, 0, cmd_check},
	{"eval", -1, 1, cmd_eval},
	{"problem", -1, 0, cmd_problem},
	{"rate", -1, 0, cmd_rate},
	{"ref", -1, 1, cmd_ref},
	{"retime", -1, 1, cmd_retime},
};

/* Splits line at tabs in place. */
static int split(char *line, char **f, int max)
{
	int n = 0;
	for (char *p = line; n < max;) {
		f[n++] = p;
		p = strchr(p, '\t');
		if (!p)
			break;
		*p++ = 0;
	}
	return n;
}

static void reply_line(const char *s)
{
	fputs(s, stdout);
	fputc('\n', stdout);
	fflush(stdout);
}

/* Runs command c on fields f[0..nf): with a problem, made resident first. */
static int run_cmd(wk *w, const wk_cmd *c, char **f, int nf, kt_buf *reply, kt_err *err)
{
	if (c->nfields >= 0 && nf != c->nfields)
		return kt_fail_internal(err, "%s takes %d fields, got %d", c->name, c->nfields, nf), WK_ERROR;
	if (c->problem) {
		if (nf < 1 || !(w->p = find_prob(w, f[0])))
			return kt_fail_internal(err, "%s: no problem '%s' (send `problem` first)", c->name, nf ? f[0] : ""), WK_ERROR;
		int rc = activate(w, err);
		if (rc != WK_OK)
			return rc;
	}
	return c->run(w, f, nf, reply, err);
}

/* Answers one command; returns 1 when the worker must stop (a fault, or quit). */
static int serve(wk *w, char *line)
{
	char *f[MAX_FIELDS];
	int nf = split(line, f, MAX_FIELDS);
	if (!strcmp(f[0], "quit"))
		return 1;
	kt_buf reply = {0};
	kt_err err = {0};
	int rc = WK_ERROR, found = 0;
	for (size_t i = 0; i < sizeof wk_cmds / sizeof wk_cmds[0]; i++)
		if (!strcmp(f[0], wk_cmds[i].name)) {
			found = 1;
			rc = run_cmd(w, &wk_cmds[i], f + 1, nf - 1, &reply, &err);
		}
	if (!found)
		kt_fail_internal(&err, "unknown command '%s'", f[0]);
	if (rc == WK_FAULT || (rc == WK_ERROR && !reply.len)) {
		kt_buf_reset(&reply);
		for (char *p = err.msg; *p; p++)
			if (*p == '\n' || *p == '\t')
				*p = ' ';
		kt_buf_printf(&reply, "%s\t%s", rc == WK_FAULT ? "faulted" : "error", err.msg[0] ? err.msg : "failed");
	}
	reply_line(kt_buf_str(&reply));
	kt_buf_free(&reply);
	return rc == WK_FAULT;
}

/* A worker never outlives the tuner that started it: it is killed when its parent dies (on
 * Linux), and it exits when its input ends.  parent is the pid the tuner gave, 0 when none. */
static void die_with_parent(long long parent)
{
#ifdef __linux__
	prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
	if (parent > 0 && getppid() != (pid_t)parent) /* it died before the line above */
		_exit(KT_EXIT_INTERNAL);
}

static int worker_open(wk *w, const char *backend, int gpu, uint64_t seed, kt_err *err)
{
	if (kt_gpu_backend_check(backend, err))
		return -1;
	w->ops = kt_gpu_backend(backend);
	if (w->ops->info(gpu, &w->info, err))
		return -1;
	w->g = w->ops->open(gpu, err);
	if (!w->g)
		return -1;
	w->seed = seed;
	return w->ops->alloc(w->g, 2 * sizeof(uint64_t), &w->res, err);
}

static void worker_close(wk *w)
{
	/* The process ends after this: the driver releases the context and its memory. */
	for (size_t i = 0; i < w->nprobs; i++) {
		wk_prob *p = w->probs[i];
		free(p->args);
		free(p->params);
		free(p->ptrs);
		kt_tmpl_free(p->t);
		for (int r = 0; r < 3; r++)
			free(p->ref[r]);
		free(p->id);
		free(p);
	}
	free(w->probs);
	free(w->ev);
	for (size_t i = 0; i < w->nmods; i++)
		free(w->mods[i].path);
	free(w->mods);
}

static const char worker_usage[] = "kt worker [--gpu N] [--backend B] [--seed N] [--parent PID]";
static const char worker_about[] = "Tests and times variants for `kt tune`, answering commands on stdin (see worker.h).";

int kt_cmd_worker(int argc, char **argv)
{
	const char *backend = "cuda";
	long long gpu = 0, seed = 1, parent = 0;
	const kt_opt opts[] = {
		{"gpu", KT_OPT_INT, &gpu, "N", "device ordinal (default 0)"},
		{"backend", KT_OPT_STR, &backend, "B", "GPU backend: cuda (the default; test builds add fake)"},
		{"seed", KT_OPT_INT, &seed, "N", "seed of the test inputs (default 1)"},
		{"parent", KT_OPT_INT, &parent, "PID", "the tuner: the worker exits when it is gone"},
		{0},
	};
	int npos = 0, rc = kt_opt_begin("worker", opts, argc, argv, NULL, 0, &npos, worker_usage, worker_about);
	if (rc >= 0)
		return rc;
	kt_err err = {0};
	die_with_parent(parent);
	wk w = {0};
	rc = KT_EXIT_OK;
	if (worker_open(&w, backend, (int)gpu, (uint64_t)seed, &err)) {
		for (char *p = err.msg; *p; p++)
			if (*p == '\n' || *p == '\t')
				*p = ' ';
		printf("error\t%s\n", err.msg);
		fflush(stdout);
		rc = KT_EXIT_INTERNAL;
	} else {
		reply_line("ready");
		char *line = NULL;
		size_t cap = 0;
		ssize_t n;
		while ((n = getline(&line, &cap, stdin)) > 0) {
			while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
				line[--n] = 0;
			if (serve(&w, line))
				break;
		}
		free(line);
	}
	worker_close(&w);
	return rc;
}
