/* tmpl.h - an annotated kernel template (*.cu.tmpl), parsed.
 *
 * A template is CUDA source whose `// @kt` comment lines declare how to tune it.  The full
 * language is documented in docs/template-language.md; in short:
 *
 *   // @kt kernel    rmsnorm                                  the __global__ function to tune
 *   // @kt reference rmsnorm_naive grid rows block 256        optional naive kernel (same args)
 *   // @kt shape     rows hidden                              runtime shape symbols
 *   // @kt type      T in half, bfloat16                      element type, chosen at generation
 *   // @kt option    LSE in natural, base2                    named choice, fixed by the caller
 *   // @kt param     BLOCK in 64..1024 pow2 default 256       tuned parameter (int list/range,
 *   // @kt param     VEC in 1, 2, 4, 8 default 8                bool, or named choices)
 *   // @kt param     ALGO in twopass, onepass
 *   // @kt param     FAST bool default false
 *   // @kt require   hidden % (VEC * 2) == 0                  constraint
 *   // @kt arg       out T[rows*hidden] out                   pointer args: type[extent] role [fill]
 *   // @kt arg       x   T[rows*hidden] in fill normal(0, 1)
 *   // @kt arg       rows int = rows                          scalar args: type = value
 *   // @kt arg       eps float = 1e-6
 *   // @kt grid      rows                                     1 to 3 expressions
 *   // @kt block     BLOCK
 *   // @kt smem      BLOCK * 4                                dynamic shared memory, bytes
 *   // @kt bytes     2 * (2*rows*hidden + hidden)             minimal bytes moved (roofline)
 *   // @kt flops     4 * rows * hidden                        optional; fp32 FMA arithmetic, or
 *   // @kt flops     tensor 2 * M * N * K                     tensor-core (fp16/bf16 mma) arithmetic
 *   // @kt tolerance 1e-2 [RTOL]                              |out-ref| <= atol + rtol*|ref|
 *   // @kt l2        warm                                     time with the inputs in the L2
 *   // @kt launch    graph                                    time CUDA-graph replays (measure.h)
 *
 * Slots: shape symbols take slots 0..nshapes-1, parameters nshapes..nshapes+nparams-1, in
 * declaration order.  A configuration is one value index per parameter (uint16_t cfg[nparams]).
 *
 * Ownership: everything reachable from a kt_tmpl lives in its arena and is freed by
 * kt_tmpl_free.  A parsed template is immutable and may be shared by threads.
 */
#ifndef KT_TMPL_H
#define KT_TMPL_H

#include <stdint.h>

#include "expr.h"
#include "measure.h"
#include "util.h"

typedef struct kt_loc {
	int line, col; /* 1-based; 0 when not from the source */
} kt_loc;

/* Element types that arguments may have. */
typedef enum kt_etype { KT_HALF, KT_BF16, KT_F32, KT_F64, KT_I32, KT_I64, KT_U8, KT_NETYPES } kt_etype;

typedef struct kt_etype_info {
	const char *name; /* as written in templates: half, bfloat16, float, double, int, int64, uint8 */
	const char *cxx;  /* C++ spelling in generated CUDA code: __half, __nv_bfloat16, float, ... */
	const char *c;    /* C spelling in the generated header: __half_raw, __nv_bfloat16_raw, ... */
	int size;         /* bytes */
	int is_float;
} kt_etype_info;

extern const kt_etype_info kt_etypes[KT_NETYPES];

typedef enum kt_ptype { KT_PINT, KT_PBOOL, KT_PCHOICE } kt_ptype;

typedef struct kt_param {
	const char *name;
	kt_ptype type;
	int nvals;
	const int64_t *vals;       /* KT_PINT: the values; KT_PBOOL: 0, 1; KT_PCHOICE: 0..nvals-1 */
	const char *const *choices; /* KT_PCHOICE: the token of each value; else NULL */
	int def;                   /* index of the default value */
	int slot;
	kt_loc loc;
} kt_param;

/* `type T in half, bfloat16 [default half]`: chosen once per generation (not tuned). */
typedef struct kt_typesym {
	const char *name;
	int nopts;
	const kt_etype *opts;
	kt_etype chosen; /* the default, or what kt_tmpl_opts.types asked for */
	kt_loc loc;
} kt_typesym;

/* `option LSE in natural, base2 [default natural]`: a named choice fixed by the caller at
 * generation like a type symbol (not tuned), which reaches the code as macros like a choice
 * parameter (LSE, LSE_IS_natural, LSE_IS_base2) and is part of the cache key. */
typedef struct kt_option {
	const char *name;
	int nchoices;
	const char *const *choices;
	int chosen; /* index of the default, or of what kt_tmpl_opts.types asked for */
	kt_loc loc;
} kt_option;

/* Which arithmetic a template's flops count, and so which measured rate bounds them: the fp32
 * FMA pipe (`flops EXPR` or `flops fma EXPR`) or dense fp16/bf16 tensor-core multiply-accumulate
 * with fp32 accumulation (`flops tensor EXPR`). */
typedef enum kt_flops_unit { KT_FLOPS_FMA, KT_FLOPS_TENSOR, KT_NFLOPS_UNITS } kt_flops_unit;

extern const char *const kt_flops_units[KT_NFLOPS_UNITS]; /* the words: "fma", "tensor" */

typedef enum kt_role { KT_IN, KT_OUT, KT_INOUT, KT_SCALAR } kt_role;

typedef enum kt_fillkind { KT_FILL_UNIFORM, KT_FILL_NORMAL, KT_FILL_INT, KT_FILL_CONST } kt_fillkind;

/* How an input is filled for testing: uniform(a,b) (the default, a=-1 b=1), normal(mean a,
 * std b), int(a,b) (integers in [a,b]), const(a); then a fraction `neginf` of elements is -inf. */
typedef struct kt_fill {
	kt_fillkind kind;
	double a, b;
	double neginf;
} kt_fill;

typedef struct kt_arg {
	const char *name;
	kt_role role;
	kt_etype type;          /* resolved, also when written as a type symbol */
	int typesym;            /* index into types when written as a type symbol, else -1 */
	const kt_expr *extent;  /* pointer args: element count, over shape symbols only */
	const kt_expr *value;   /* scalar args: the value used when tuning (over shape symbols) */
	int shape_slot;         /* scalar args whose value is exactly a shape symbol: its slot; else -1 */
	kt_fill fill;
	kt_loc loc;
} kt_arg;

typedef struct kt_tmpl {
	const char *path;       /* as given */
	const char *src;        /* the whole source, NUL-terminated */
	size_t srclen;
	const char *kernel;     /* name of the __global__ function to tune */
	kt_loc kernel_loc;
	const char *reference;  /* naive kernel, or NULL */
	const kt_expr *ref_grid[3], *ref_block[3], *ref_smem; /* its launch (shape symbols only) */

	int nshapes;
	const char *const *shapes;
	int nparams;
	const kt_param *params;
	int ntypes;
	const kt_typesym *types;
	int noptions;
	const kt_option *options;

	int nreq;
	const kt_expr *const *req;
	const char *const *req_text; /* each constraint as written, for messages */
	const kt_loc *req_loc;

	int nargs;
	const kt_arg *args;

	const kt_expr *grid[3], *block[3]; /* missing dimensions are NULL (= 1) */
	const kt_expr *smem, *bytes, *flops; /* NULL when not given */
	kt_flops_unit flops_unit;           /* what flops counts (KT_FLOPS_FMA without a unit word) */
	double atol, rtol;
	kt_measure measure;      /* `l2`, `launch`: how to time it (measure.h); KT_MEASURE_UNSET where not given */

	int nincludes;
	const char *const *includes; /* local headers from #include "..." (paths as resolved) */
	const unsigned char *launch_only; /* per parameter: 1 when only the launch reads it (kt_tmpl_code_config) */

	kt_scope scope; /* names of all slots, for kt_expr_* */
	/* The launch geometry's names (grid, block, smem): scope's slots and, after them, `sms`, the
	 * multiprocessor count of the GPU the kernel runs on (slot kt_tmpl_sms_slot). */
	kt_scope launch_scope;
	int sms; /* the value of `sms` in kt_tmpl_env: kt_tmpl_opts.sms, 0 when no GPU is known */
	/* The compile target as given (kt_tmpl_opts.arch: "90a"; "" when unknown), which
	 * constraints name as sm (e.g. 90; 0 when unknown) and sm_a (1 on an architecture-specific
	 * target such as 90a, else 0). */
	char arch[8];
	kt_arena *arena;
} kt_tmpl;

typedef struct kt_tmpl_opts {
	/* The caller's choices, "NAME=VALUE": for type symbols ("T=bfloat16") and options
	 * ("LSE=base2"); may be NULL. */
	const char *const *types;
	int ntypes;
	const char *arch;         /* the compile target, "90" or "90a" (kt_arch_parse); NULL: unknown */
	int sms;                  /* the multiprocessor count of the GPU the variants run on; 0: unknown */
} kt_tmpl_opts;

/* Parses a template file.  On errors returns NULL, appends every diagnostic to diags
 * ("file:line:col: error: ...\n<source line>\n<caret>\n") and sets err to a summary. */
kt_tmpl *kt_tmpl_parse(const char *path, const kt_tmpl_opts *opts, kt_buf *diags, kt_err *err);
/* Same, from text in memory; path is used in messages and to resolve local includes. */
kt_tmpl *kt_tmpl_parse_text(const char *path, const char *text, size_t len, const kt_tmpl_opts *opts,
			    kt_buf *diags, kt_err *err);
void kt_tmpl_free(kt_tmpl *t);

/* Parses "rows=4096,hidden=4096" (commas or spaces) into vals[nshapes].  Every symbol must be
 * given once; an unknown or missing symbol is an error that names it. */
int kt_tmpl_parse_shape(const kt_tmpl *t, const char *spec, int64_t *vals, kt_err *err);
/* Formats a shape as "rows=4096,hidden=4096". */
void kt_tmpl_format_shape(const kt_tmpl *t, const int64_t *vals, kt_buf *out);
/* The caller's choices t was parsed with, type symbols then options ("T=bfloat16", "LSE=base2"),
 * each appended to out and followed by sep (kt_tmpl_opts.types, for parsing it again). */
void kt_tmpl_format_choices(const kt_tmpl *t, char sep, kt_buf *out);
/* Formats value idx of parameter p as a configuration spells it: "256", "true", "onepass". */
void kt_tmpl_format_value(const kt_param *p, int idx, kt_buf *out);
/* Formats a configuration as "BLOCK=256,VEC=8,ALGO=onepass". */
void kt_tmpl_format_config(const kt_tmpl *t, const uint16_t *cfg, kt_buf *out);
/* Parses "BLOCK=256,VEC=8" into cfg; every parameter must be given with a declared value. */
int kt_tmpl_parse_config(const kt_tmpl *t, const char *spec, uint16_t *cfg, kt_err *err);
/* The default configuration. */
void kt_tmpl_default_config(const kt_tmpl *t, uint16_t *cfg);
/* The configuration whose code cfg compiles to, into code[nparams]: cfg with each parameter that
 * only the launch reads at its default.  Such a parameter (a grid size, say) is named by neither
 * the code nor its local headers (the `#ifndef NAME` and `#define NAME` that give it a default
 * aside: kt_cusrc_uses_macro), nor by the shared memory's expression; its values make one
 * variant launched in other ways, which the tuner compiles once.  Returns 1 when code differs
 * from cfg. */
int kt_tmpl_code_config(const kt_tmpl *t, const uint16_t *cfg, uint16_t *code);

/* The slot of `sms` (after the shape symbols and parameters). */
static inline int kt_tmpl_sms_slot(const kt_tmpl *t) { return t->nshapes + t->nparams; }
/* Fills env[KT_MAX_SLOTS] for a shape and a configuration (cfg may be NULL: shape only), and
 * `sms` with t->sms. */
void kt_tmpl_env(const kt_tmpl *t, const int64_t *shape, const uint16_t *cfg, kt_val *env);
/* Index of the first constraint that env violates (or fails to evaluate), -1 if none. */
int kt_tmpl_violated(const kt_tmpl *t, const kt_val *env);

/* 1 when some of t's configurations or code need an architecture-specific target (90a): a
 * constraint names sm_a, or the code tests __CUDA_ARCH_FEAT_SM90_ALL or its kin. */
int kt_tmpl_arch_specific(const kt_tmpl *t);

/* Launch geometry and roofline figures of one configuration at one shape. */
typedef struct kt_launch {
	int64_t grid[3], block[3], smem;
	double bytes, flops; /* 0 when the template gives none */
} kt_launch;
int kt_tmpl_launch(const kt_tmpl *t, const kt_val *env, kt_launch *out, kt_err *err);

/* The C argument list of the launcher, e.g. "__half* out, const __half* x, int rows".
 * c_header selects the C spellings of types (for the header seen by C code). */
void kt_tmpl_arglist(const kt_tmpl *t, int c_header, kt_buf *out);

#endif
