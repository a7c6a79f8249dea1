/* generate_int.h - what the parts of `kt generate` share: generate.c (reading, the cache, the
 * decision and the output, the tables) and generate_misses.c (tuning the misses here, or farming
 * them out).  Private to the generate module. */
#ifndef KT_GENERATE_INT_H
#define KT_GENERATE_INT_H

#include "cache.h"
#include "flags.h"
#include "generate.h"
#include "tmpl.h"
#include "tune.h"

/* One kernel (one kt_add_tuned_kernel call): its flags by class and the build's targets. */
typedef struct kern {
	const kt_generate_kernel *k;
	kt_flags flags;       /* --flags by class (flags.h) */
	kt_buf archs;         /* the build's targets, "80;90a": --arch's and those the arch flags name */
	int specific;         /* the template has configurations that need an architecture-specific target */
	int ngpus;            /* its GPU tables (units with a GPU) */
} kern;

/* One table of one kernel: the generic one (gpu NULL: every GPU, the template defaults unless
 * forced, and every configuration when no GPU is known) or a GPU model's. */
typedef struct gen {
	const kt_generate_kernel *k;
	const kt_generate_opts *o;
	kern *kn;
	const char *gpu;      /* the GPU model asked for (as the user named it); NULL: the generic table */
	char who[160];        /* "rmsnorm", or "rmsnorm for NVIDIA H200" when the kernel has several tables */
	int local;            /* its GPU is here: its misses are tuned */
	int primary;          /* its GPU is the one here, else --gpu's: the GPU that KT_RETUNE and KT_FARM mean */
	int farm;             /* its misses go to KT_FARM */
	char arch[16];        /* its target ("90", "90a"); "" for the generic table */
	kt_tmpl *t;           /* parsed for its target */
	int n;                /* shapes */
	int64_t *shapes;      /* n * t->nshapes */
	uint16_t *cfgs;       /* n * t->nparams: the chosen configurations */
	uint16_t *forced;     /* n * t->nparams: configurations forced with --config */
	int *is_forced;       /* per shape */
	int *decided;         /* per shape: a configuration is chosen */
	const char **origin;  /* per shape: "default", "cache:<tier>", "tuned", "forced", "transfer", "other-version" */
	char **key;           /* per shape: the cache key, or NULL */
	kt_tune_result *res;  /* per shape: the evaluations, tuned or from the record of a hit (else empty) */
	int noted_default;    /* the "using the template defaults" note was given */
	kt_cache *cache;      /* open when a GPU identity is known (keys can be made); else NULL */
	kt_target target;     /* the target GPU: the one here, else the one --gpu names (its identity from a record) */
	kt_toolchain tc;      /* the compiler (its identity a key field), the arch and flags as given */
	kt_measure measure;   /* how its misses are timed: --l2 and --launch, else the template's (measure.h) */
	kt_buf compiler;      /* the compiler's identity */
	kt_buf refactor;      /* the template's kt refactor provenance for its records (empty: none) */
	int refactor_read;
} gen;

/* The run: every kernel, its tables, the GPU here. */
typedef struct run {
	const kt_generate_opts *o;
	kern *kn;             /* per kernel */
	gen *g;               /* the generic table of each kernel, then the GPU tables, n in all */
	int n, nk;
	int here, tune;       /* a GPU is here; tuning a miss is allowed */
	kt_gpu_info info;
	struct known_gpu {    /* the identities of GPUs not here, from records (record_identity) */
		char name[128];
		kt_gpu_id id;
		int found;
	} *ids;
	int nids;
	kt_buf missing;       /* --require-hit: one line per shape that missed */
	int nmissing, nshapes;
} run;

static inline int64_t *shape_at(const gen *g, int i) { return g->shapes + (size_t)i * (size_t)g->t->nshapes; }
static inline uint16_t *cfg_at(uint16_t *base, const gen *g, int i) { return base + (size_t)i * (size_t)g->t->nparams; }
static inline kt_problem problem_at(const gen *g, int i)
{
	return (kt_problem){.tmpl = g->t, .shape = shape_at(g, i), .target = &g->target, .tc = &g->tc, .measure = g->measure};
}

/* KT_FARM: the misses go to Slurm instead of being tuned here (see farm_misses). */
static inline int farming(const kt_generate_opts *o) { return o->farm && !o->no_tune && !o->require_hit; }

/* Passes a note to the caller (the command prints it), unless quiet. */
void gen_note(const kt_generate_opts *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* generate_misses.c.  A GPU on this machine: its identity is the keys' whatever the options say;
 * whether a miss may be tuned. */
void gen_local_gpu(run *rn);
/* Tunes every miss of every table whose GPU is here, in one batch; 0, or -1 with err. */
int gen_tune_misses(run *rn, kt_err *err);
/* KT_FARM: submits the misses to Slurm; meanwhile each gets the closest record's choice. */
void gen_farm_misses(run *rn);

#endif
