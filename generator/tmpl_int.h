/* tmpl_int.h - what the template parser's files share: its limits, its parse state and the
 * functions one file gives another.  Private to tmpl.c (the directive table, diagnostics,
 * lexing inside a directive, names, pass 1: declarations, the scan of the source, the driver),
 * tmpl_expr.c (pass 2: the directives that hold expressions) and tmpl_check.c (the caller's
 * choices, the checks across directives, the scans of the code). */
#ifndef KT_TMPL_INT_H
#define KT_TMPL_INT_H

#include <stddef.h>

#include "tmpl.h"

#define MAX_ERRORS 50        /* diagnostics shown for one template */
#define MAX_ARGS 64          /* arguments of one kernel */
#define MAX_REQS 256         /* constraints of one template */
#define MAX_TYPES 16         /* type symbols of one template */
#define MAX_OPTIONS 16       /* options of one template */
#define MAX_VALUES 65535     /* values of one parameter (indices are uint16_t) */
#define MAX_DIMS 3           /* grid and block dimensions */
#define MAX_LISTED 16        /* values listed in a message */
#define DEFAULT_TOL 1e-3     /* atol and rtol without a tolerance directive */
#define NDIRS 16             /* directives in tmpl.c's table (checked there) */

typedef struct pctx pctx;
typedef struct dline {
	int dir;          /* index into dirs */
	size_t name_off;  /* where the directive name is */
	size_t pos, end;  /* its arguments: src[pos..end), blanks trimmed at the end */
} dline;

typedef struct diagent {
	size_t off;
	int seq;
	char *text;
} diagent;

typedef struct decl {
	const char *name;
	size_t off;
} decl;

struct pctx {
	kt_tmpl *t;
	kt_arena *a;
	const char *src;
	size_t len;
	const kt_tmpl_opts *opts;
	diagent *diags;
	int ndiags, nerrors;
	/* directives */
	dline *lines;
	int nlines, caplines;
	int seen[NDIRS];       /* 1 + index into lines of the first one, 0 when absent */
	/* declarations, in source order */
	decl names[KT_MAX_SLOTS + MAX_TYPES + MAX_OPTIONS];
	int nnames;
	size_t shape_off[KT_MAX_SLOTS];
	kt_param params[KT_MAX_SLOTS];
	kt_typesym types[MAX_TYPES];
	kt_option options[MAX_OPTIONS];
	const char *shapes[KT_MAX_SLOTS];
	int nshapes, nparams, ntypes, noptions;
	const char *slot_names[KT_MAX_SLOTS];
	kt_scope req_scope;    /* the scope of constraints: also the compile target (sm, sm_a) */
	int in_req;            /* parsing a constraint */
	int in_launch;         /* parsing the launch geometry (grid, block, smem): sms is known */
	/* pass 2 */
	kt_arg args[MAX_ARGS];
	int nargs;
	const kt_expr *req[MAX_REQS];
	const char *req_text[MAX_REQS];
	kt_loc req_loc[MAX_REQS];
	int nreq;
	size_t kernel_off, reference_off, type_off[MAX_TYPES], option_off[MAX_OPTIONS];
	int arg_errors; /* errors in arg directives */
	size_t *bols;   /* where each line begins */
	int nbols;
};

/* Names that cannot be declared: the functions and constants of the expression language. */
extern const char *const tp_reserved[];
extern const size_t tp_nreserved;

/* tmpl.c: diagnostics, lexing inside a directive, element types. */
void tp_error_at(pctx *pc, size_t off, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
kt_loc tp_loc_of(const pctx *pc, size_t off);
int tp_is_blank(char c);
int tp_is_id(char c);
size_t tp_skip_blanks(const pctx *pc, size_t pos, size_t end);
size_t tp_ident_len(const pctx *pc, size_t pos, size_t end);
int tp_word_is(const pctx *pc, size_t pos, size_t n, const char *w);
void tp_expected(pctx *pc, size_t pos, size_t end, const char *what);
int tp_take_ident(pctx *pc, size_t *pos, size_t end, size_t *start, size_t *n, const char *what);
int tp_take_word(const pctx *pc, size_t *pos, size_t end, const char *w);
int tp_take_char(const pctx *pc, size_t *pos, size_t end, char c);
int tp_expect_end(pctx *pc, size_t pos, size_t end, const char *what);
int tp_take_number(pctx *pc, size_t *pos, size_t end, double *v, const char *what);
int tp_split_commas(const pctx *pc, size_t pos, size_t end, size_t *starts, size_t *ends, int max);
size_t tp_find_keyword(const pctx *pc, size_t pos, size_t end, const char *w);
const char *tp_suggest(const char *name, size_t n, const char *const *cands, int ncands, char *buf, size_t bufsz);
int tp_find_etype(const char *s, size_t n);
void tp_unknown_etype(pctx *pc, size_t off, size_t n, int allow_syms);

/* tmpl.c: the directive named s[0..n), an index into its table; -1 when none is. */
int tp_find_dir(const char *s, size_t n);

/* tmpl_check.c: after pass 1, the caller's NAME=VALUE choices of types and options; after pass 2,
 * the checks across directives; once published, the code's local headers and the parameters
 * only the launch reads (kt_tmpl.includes, .launch_only). */
void tp_apply_choices(pctx *pc);
void tp_check_across(pctx *pc);
void tp_scan_code(pctx *pc);

/* tmpl_expr.c: pass 2, the directives that hold expressions, and the measurement settings. */
void tp_d_reference(pctx *pc, const dline *d);
void tp_d_require(pctx *pc, const dline *d);
void tp_d_arg(pctx *pc, const dline *d);
void tp_d_grid(pctx *pc, const dline *d);
void tp_d_block(pctx *pc, const dline *d);
void tp_d_smem(pctx *pc, const dline *d);
void tp_d_bytes(pctx *pc, const dline *d);
void tp_d_flops(pctx *pc, const dline *d);
void tp_d_tolerance(pctx *pc, const dline *d);
void tp_d_l2(pctx *pc, const dline *d);
void tp_d_launch(pctx *pc, const dline *d);

#endif
