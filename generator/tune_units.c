/* tune_units.c - the tuner's units (a variant of a template and toolchain, compiled once
 * whatever the shape), its compile groups (how the units of one template and toolchain are
 * compiled: nvcc or NVRTC, the prelude, the copy without the reference) and its compile batches
 * (ninja in two slots, reaped as they finish). */
#define _XOPEN_SOURCE 700 /* realpath */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit.h"
#include "tune_int.h"

/* ---- units -------------------------------------------------------------------------------------- */

static uint64_t name_hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

/* The unit called name, or -1. */
static long unit_find(const tuner *tu, const char *name)
{
	if (!tu->capindex)
		return -1;
	for (size_t i = name_hash(name) & (tu->capindex - 1);; i = (i + 1) & (tu->capindex - 1)) {
		long u = tu->index[i] - 1;
		if (u < 0 || !strcmp(tu->units[u].u.name, name))
			return u;
	}
}

void tu_index_put(tuner *tu, long u)
{
	size_t i = name_hash(tu->units[u].u.name) & (tu->capindex - 1);
	while (tu->index[i])
		i = (i + 1) & (tu->capindex - 1);
	tu->index[i] = u + 1;
}

long tu_unit_add(tuner *tu)
{
	if (2 * (tu->nunits + 1) > tu->capindex) { /* the table stays at most half full */
		free(tu->index);
		tu->capindex = tu->capindex ? 2 * tu->capindex : 256;
		tu->index = kt_xcalloc(tu->capindex, sizeof *tu->index);
		for (size_t u = 0; u < tu->nunits; u++)
			tu_index_put(tu, (long)u);
	}
	if (tu->nunits == tu->capunits) {
		tu->capunits = tu->capunits ? 2 * tu->capunits : 64;
		tu->units = kt_xrealloc(tu->units, tu->capunits * sizeof *tu->units);
	}
	memset(&tu->units[tu->nunits], 0, sizeof *tu->units);
	return (long)tu->nunits++;
}

/* 1 when cfg is template t's default configuration. */
static int is_default(const kt_tmpl *t, const uint16_t *cfg)
{
	for (int i = 0; i < t->nparams; i++)
		if (cfg[i] != t->params[i].def)
			return 0;
	return 1;
}

/* The dynamic shared memory of configuration cfg at task ta's shape (0 where its launch cannot
 * be computed: such a configuration is never compiled). */
static long dyn_smem(const task *ta, const uint16_t *cfg)
{
	kt_val env[KT_MAX_SLOTS];
	kt_launch l;
	kt_err e = {0};
	kt_tmpl_env(ta->t, ta->shape, cfg, env);
	return kt_tmpl_launch(ta->t, env, &l, &e) ? 0 : (long)l.smem;
}

/* The unit (kind UNIT_*) of configuration launch of task k's group: found, or made (U_NEW); the
 * configurations that differ only in parameters that the code does not read share one
 * (kt_tmpl_code_config), compiled as the one at those parameters' defaults.  Its
 * text includes the group's copy of the template without its reference kernel (group.noref)
 * unless it is the default's, which runs the reference: so nvcc compiles the reference once, not
 * in every unit.  UNIT_REF: a unit that holds the reference whatever its configuration (a task
 * whose default is infeasible runs its reference from another configuration's unit): never
 * packed.  UNIT_NVCC: compiled by nvcc, never NVRTC (group.ccn). */
long tu_unit_make(tuner *tu, int k, const uint16_t *launch, int kind)
{
	const task *ta = &tu->tasks[k];
	group *g = tu->groups[ta->group];
	uint16_t cfg[KT_MAX_SLOTS];
	kt_tmpl_code_config(ta->t, launch, cfg);
	int whole = !g->noref || is_default(ta->t, cfg), alone = kind == UNIT_REF && !whole;
	char sym[150], name[160];
	kt_emit_symbol(ta->t, ta->t->kernel, cfg, sym, sizeof sym);
	snprintf(name, sizeof name, "%s_g%d%s", sym, ta->group, alone ? "_ref" : kind == UNIT_NVCC ? "_nv" : "");
	long u = unit_find(tu, name);
	if (u >= 0)
		return u;
	u = tu_unit_add(tu);
	unitrec *ur = &tu->units[u];
	const char *from = whole || alone ? NULL : g->noref;
	ur->group = ta->group;
	ur->state = U_NEW;
	snprintf(ur->sym, sizeof ur->sym, "%s", sym);
	snprintf(ur->u.name, sizeof ur->u.name, "%s", name);
	snprintf(ur->u.entry, sizeof ur->u.entry, "%s_kernel", sym);
	ur->u.cc = kind == UNIT_NVCC ? &g->ccn : &g->cc;
	ur->u.dyn_smem = dyn_smem(ta, launch); /* the same for every launch: kt_tmpl_code_config */
	kt_emit_variant_from(ta->t, from, cfg, sym, &ur->u.src);
	if (g->cc.prelude && !alone)
		kt_emit_part_from(ta->t, from, cfg, sym, &ur->u.part);
	tu_index_put(tu, u);
	return u;
}

long tu_unit_of(tuner *tu, int k, const uint16_t *cfg) { return tu_unit_make(tu, k, cfg, UNIT_PLAIN); }

/* ---- compile groups ---------------------------------------------------------------------------- */

void tu_group_free(group *g)
{
	kt_buf_free(&g->prelude);
	free(g->nvcc);
	for (int i = 0; i < g->ndeps; i++)
		free(g->deps[i]);
	free(g->deps);
	free(g->flagv);
	free(g->flagwords);
	free(g->noref);
	free((char *)g->rtc.lib);
}

/* Two toolchains that build the same way (NULL and "" alike), wherever they are kept: each
 * round of a problem holds its own copy, and problems whose round templates agree share them. */
static int same_str(const char *a, const char *b) { return !strcmp(a ? a : "", b ? b : ""); }
static int same_toolchain(const kt_toolchain *a, const kt_toolchain *b)
{
	if (a == b || !a || !b)
		return a == b;
	return same_str(a->nvcc, b->nvcc) && same_str(a->compiler, b->compiler) && same_str(a->arch, b->arch) &&
	       same_str(a->flags, b->flags);
}

/* The group of template t built with toolchain tc (made when new); -1 with err when its compiler
 * does not exist. */
int tu_group_of(tuner *tu, const kt_tmpl *t, const kt_toolchain *tc, kt_err *err)
{
	for (int i = 0; i < tu->ngroups; i++)
		if (tu->groups[i]->t == t && same_toolchain(tu->groups[i]->tc, tc))
			return i;
	const char *nvcc = tc && tc->nvcc && tc->nvcc[0] ? tc->nvcc : NULL;
	char *abs = nvcc && strchr(nvcc, '/') ? realpath(nvcc, NULL) : NULL;
	if (nvcc && strchr(nvcc, '/') && !abs)
		return kt_fail(err, "the compiler %s does not exist", nvcc);
	tu->groups = kt_xrealloc(tu->groups, (size_t)(tu->ngroups + 1) * sizeof *tu->groups);
	group *g = tu->groups[tu->ngroups] = kt_xcalloc(1, sizeof *g);
	g->t = t;
	g->tc = tc;
	g->nvcc = abs;
	g->deps = kt_xcalloc((size_t)t->nincludes + 1, sizeof *g->deps);
	for (int i = -1; i < t->nincludes; i++) {
		char *p = realpath(i < 0 ? t->path : t->includes[i], NULL);
		if (p)
			g->deps[g->ndeps++] = p;
	}
	int nflags = 0;
	g->flagv = (char **)kt_toolchain_flag_words(tc, &g->flagwords, &nflags);
	if (tc && tc->arch && tc->arch[0])
		snprintf(g->arch, sizeof g->arch, "%s", tc->arch);
	else
		kt_gpu_arch(&tu->info.id, g->arch, sizeof g->arch);
	const kt_tune_opts *o = tu->o;
	g->cc = (kt_compiler){abs ? abs : nvcc, o->ninja, g->arch, (const char *const *)g->flagv, nflags, o->jobs,
			      tu->workdir, (const char *const *)g->deps, g->ndeps, NULL, o->pack > 0 ? o->pack : KT_TUNE_PACK, NULL};
	g->rtc = (kt_nvrtc_use){o->nvrtc_kt ? o->nvrtc_kt : tu->exe,
				o->no_nvrtc    ? NULL
				: o->nvrtc_lib ? kt_xstrdup(o->nvrtc_lib)
					       : kt_nvrtc_library(g->cc.nvcc, (const char *const *)g->flagv, nflags, NULL),
				KT_NVRTC_UNKNOWN, 0};
	if ((g->cc.pack > 1 || g->rtc.lib) && kt_emit_prelude(t, &g->prelude) == 0)
		g->cc.prelude = kt_buf_str(&g->prelude);
	g->ccn = g->cc;
	if (g->rtc.lib && g->cc.prelude) /* NVRTC compiles parts: kernels without a launcher */
		g->cc.nvrtc = &g->rtc;
	kt_buf text = {0}, name = {0};
	kt_buf_printf(&name, "g%d_%s_noref.cuh", tu->ngroups, t->kernel);
	g->noref = kt_path_join(tu->workdir, kt_buf_str(&name));
	if (kt_emit_unreferenced(t, &text) || kt_write_atomic(g->noref, text.data, text.len, NULL)) {
		free(g->noref); /* the reference stays in every unit */
		g->noref = NULL;
	}
	kt_buf_free(&text);
	kt_buf_free(&name);
	return tu->ngroups++;
}

/* ---- compiling ------------------------------------------------------------------------------------- */

static const kt_compiler *slot_cc(const tuner *tu, int s) { return s == CONFIRM ? &tu->confirmcc : &tu->batchcc; }

/* Starts compiling the fresh units in slot s. */
static int compile_in(tuner *tu, const idlist *l, int s, kt_err *err)
{
	const long *fresh = l->v;
	size_t n = l->n;
	kt_unit *u = kt_xcalloc(n + 1, sizeof *u);
	for (size_t i = 0; i < n; i++) {
		u[i] = tu->units[fresh[i]].u;
		tu->units[fresh[i]].slot = s;
	}
	int rc = kt_compile_start(slot_cc(tu, s), u, n, s, &tu->ninja[s], err);
	free(u); /* shallow copies: the units keep their buffers */
	free(tu->slot_units[s]); /* a batch that could not start left them */
	free(tu->slot_done[s]);
	tu->slot_units[s] = kt_xmalloc((n + 1) * sizeof *tu->slot_units[s]);
	memcpy(tu->slot_units[s], fresh, n * sizeof *fresh);
	tu->slot_n[s] = n;
	tu->slot_done[s] = kt_xcalloc(n + 1, 1);
	tu->busy[s] = rc == 0;
	tu->slot_t0[s] = kt_now();
	tu->st.batches += s != CONFIRM;
	return rc;
}

/* Starts compiling the fresh units in the next free slot. */
int tu_compile_start(tuner *tu, const idlist *l, kt_err *err)
{
	int s = tu->next_slot;
	tu->next_slot = (s + 1) % SLOTS;
	return compile_in(tu, l, s, err);
}

int tu_compile_confirm(tuner *tu, const idlist *l, kt_err *err) { return compile_in(tu, l, CONFIRM, err); }

/* The candidates waiting for units that are done: ready, or recorded as failed. */
static void release_waiting(tuner *tu)
{
	size_t keep = 0;
	for (size_t i = 0; i < tu->waiting.n; i++) {
		cand *c = &tu->waiting.v[i];
		if (tu->units[c->unit].state != U_DONE)
			tu->waiting.v[keep++] = *c;
		else if (tu_sort_out(tu, c))
			tu_list_add(&tu->ready, c);
		else
			tu_cand_free(c);
	}
	tu->waiting.n = keep;
}

/* Unit u of slot s is done: counted, and on the trace from its batch's start. */
static void count_compiled(tuner *tu, int s, const kt_unit *u)
{
	if (tu->o->trace) { /* the configuration from the variant's text (emit.c) */
		static const char tag[] = "// configuration: ";
		const char *cfg = strstr(kt_buf_str(&u->src), tag);
		int len = cfg ? (int)strcspn(cfg += sizeof tag - 1, "\n\"\\") : 0;
		char args[512];
		snprintf(args, sizeof args, "\"ok\":%d,\"nvrtc\":%d,\"packed\":%d,\"config\":\"%.*s\"", u->ok, u->by_nvrtc,
			 u->packed, len < 400 ? len : 400, cfg ? cfg : "");
		kt_trace_span(tu->o->trace, LANE_UNITS + s, u->name, tu->slot_t0[s], kt_now(), args);
	}
	tu->st.packed += u->packed;
	tu->st.by_nvrtc += u->by_nvrtc;
	tu->st.compiled++;
}

/* The units of slot s whose compile ended while the rest of its batch goes on: done (and counted,
 * even when the batch is ended before it finished: a tuning that needs nothing more kills it),
 * and their candidates ready to measure. */
static void take_early(tuner *tu, int s)
{
	size_t n = tu->slot_n[s];
	kt_unit *u = kt_xcalloc(n + 1, sizeof *u);
	for (size_t i = 0; i < n; i++)
		u[i] = tu->units[tu->slot_units[s][i]].u;
	int fresh = kt_compile_poll(slot_cc(tu, s), u, n, &tu->ninja[s], tu->slot_done[s]);
	for (size_t i = 0; i < n; i++) { /* what it read replaced the units' buffers */
		unitrec *ur = &tu->units[tu->slot_units[s][i]];
		ur->u = u[i];
		if (tu->slot_done[s][i] && ur->state != U_DONE) {
			ur->state = U_DONE;
			count_compiled(tu, s, &u[i]);
			tu->st.early++;
		}
	}
	free(u);
	if (fresh)
		release_waiting(tu);
}

/* Waits for slot s's compile, takes its results into the units, and moves the candidates
 * waiting for them to ready (or records their failure). */
int tu_compile_finish(tuner *tu, int s, kt_err *err)
{
	size_t n = tu->slot_n[s];
	kt_unit *u = kt_xcalloc(n + 1, sizeof *u);
	for (size_t i = 0; i < n; i++)
		u[i] = tu->units[tu->slot_units[s][i]].u;
	int rc = kt_compile_finish(slot_cc(tu, s), u, n, s, &tu->ninja[s], err);
	for (size_t i = 0; i < n; i++) {
		unitrec *ur = &tu->units[tu->slot_units[s][i]];
		ur->u = u[i];
		ur->state = U_DONE;
		if (!tu->slot_done[s][i])
			count_compiled(tu, s, &u[i]);
		if (u[i].unpackable) /* its template cannot share a translation unit: alone from now on */
			tu->groups[ur->group]->cc.prelude = tu->groups[ur->group]->ccn.prelude = NULL;
	}
	free(u);
	if (tu->o->trace) {
		char args[64];
		snprintf(args, sizeof args, "\"units\":%zu", n);
		kt_trace_span(tu->o->trace, LANE_BATCH + s, s == CONFIRM ? "rivals' nvcc variants" : "compile batch",
			      tu->slot_t0[s], kt_now(), args);
	}
	free(tu->slot_units[s]);
	tu->slot_units[s] = NULL;
	free(tu->slot_done[s]);
	tu->slot_done[s] = NULL;
	tu->busy[s] = 0;
	release_waiting(tu);
	return rc < 0 ? -1 : 0;
}

/* The oldest busy slot of the batches, else CONFIRM when it is busy, else -1. */
int tu_oldest_busy(const tuner *tu)
{
	for (int i = 0; i < SLOTS; i++) {
		int s = (tu->next_slot + i) % SLOTS;
		if (tu->busy[s])
			return s;
	}
	return tu->busy[CONFIRM] ? CONFIRM : -1;
}

/* Until a busy slot's ninja says something (an edge ended) or ends. */
static void wait_ninja(const tuner *tu)
{
	struct pollfd fds[NSLOTS];
	nfds_t n = 0;
	for (int s = 0; s < NSLOTS; s++)
		if (tu->busy[s]) {
			if (tu->ninja[s].eof || tu->ninja[s].in.len || tu->ninja[s].fd < 0)
				return; /* something to take already */
			fds[n++] = (struct pollfd){tu->ninja[s].fd, POLLIN, 0};
		}
	while (n && poll(fds, n, -1) < 0 && errno == EINTR)
		;
}

/* Takes what the compiles finished, without waiting; with wait, after something finished. */
int tu_reap(tuner *tu, int wait, kt_err *err)
{
	if (wait)
		wait_ninja(tu);
	for (int i = 0; i < NSLOTS; i++) {
		int s = i < SLOTS ? (tu->next_slot + i) % SLOTS : CONFIRM;
		if (!tu->busy[s])
			continue;
		take_early(tu, s);
		if (tu->ninja[s].eof && tu_compile_finish(tu, s, err))
			return -1;
	}
	return 0;
}
