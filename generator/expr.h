/* expr.h - the expression language of templates.
 *
 * Grammar, loosest binding first (C precedence, C semantics):
 *   expr    := cond
 *   cond    := or ( '?' expr ':' cond )?
 *   or      := and ( '||' and )*
 *   and     := eq ( '&&' eq )*
 *   eq      := rel ( ('=='|'!=') rel )*
 *   rel     := add ( ('<'|'<='|'>'|'>=') add )*
 *   add     := mul ( ('+'|'-') mul )*
 *   mul     := unary ( ('*'|'/'|'%') unary )*
 *   unary   := ('-'|'+'|'!') unary | primary
 *   primary := INT | FLOAT | 'true' | 'false' | STRING | NAME | NAME '(' expr (',' expr)* ')' | '(' expr ')'
 * Functions: min(a,b,...), max(a,b,...), cdiv(a,b) (ceil-div of integers), abs(a), floor(a), ceil(a),
 * log2(a) (floor of log2 of a positive integer), pow2(a) (1 << a, a in 0..62).  floor and ceil
 * give integers.  '%', cdiv, log2 and pow2 take integers only (a float operand is a parse error).
 * Values are int64 or double; an operation with a double operand is done in double; '/' and '%'
 * on integers truncate like C; division or modulo by zero is an evaluation error.
 * Comparisons and logic give int 0/1.  A STRING ("name") may only be compared (== or !=) with
 * a choice parameter; it is resolved to the choice's index at parse time (an unknown choice is a
 * parse error).
 *
 * Names resolve to slots of an environment (kt_scope), so evaluation is an array lookup.
 * Nodes live in the caller's arena.
 */
#ifndef KT_EXPR_H
#define KT_EXPR_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

typedef enum kt_vtype { KT_VINT, KT_VFLOAT } kt_vtype;

typedef struct kt_val {
	kt_vtype type;
	int64_t i; /* valid when type == KT_VINT */
	double f;  /* valid when type == KT_VFLOAT */
} kt_val;

static inline kt_val kt_int(int64_t i) { return (kt_val){KT_VINT, i, 0.0}; }
static inline kt_val kt_float(double f) { return (kt_val){KT_VFLOAT, 0, f}; }
static inline double kt_val_f(kt_val v) { return v.type == KT_VINT ? (double)v.i : v.f; }
static inline int kt_val_truthy(kt_val v) { return v.type == KT_VINT ? v.i != 0 : v.f != 0.0; }

#define KT_MAX_SLOTS 64 /* shape symbols + parameters; dependencies are a 64-bit mask */

/* How names resolve: names[i] is slot i.  choice() maps a string literal compared with the
 * choice parameter in `slot` to its index (-1: not one of its choices); it is asked only for
 * slots where is_choice(slot) is true.  constant() resolves a name that is no slot: 1 with *out
 * set (the name stands for that integer), 0 when the name is not a constant, -1 when it is one
 * that may not be used here (*why says where it may).  Any callback may be NULL. */
typedef struct kt_scope {
	const char *const *names;
	int n;
	int (*is_choice)(void *ctx, int slot);
	int (*choice)(void *ctx, int slot, const char *lit, size_t len);
	int (*constant)(void *ctx, const char *name, size_t len, int64_t *out, const char **why);
	void *ctx;
} kt_scope;

typedef struct kt_expr kt_expr;

/* Parses src[0..len).  On error returns NULL, sets *err_off to the byte offset in src where
 * the problem is and writes a message ("expected ')' after argument list") to msg. */
kt_expr *kt_expr_parse(kt_arena *a, const char *src, size_t len, const kt_scope *sc, size_t *err_off,
		       char *msg, size_t msgsz);

/* Evaluates e with env[slot] as the value of each slot.  0 on success; -1 with a message
 * (division by zero, log2 of a non-positive value, ...). */
int kt_expr_eval(const kt_expr *e, const kt_val *env, kt_val *out, char *msg, size_t msgsz);

/* Bit i set when slot i occurs in e. */
uint64_t kt_expr_deps(const kt_expr *e);

/* The slot when e is exactly one name, else -1 (used for "arg rows int = rows"). */
int kt_expr_slot(const kt_expr *e);

/* Canonical, fully parenthesised text with slot names (for cache keys and messages):
 * the same expression always prints the same, whatever its spacing in the source. */
void kt_expr_canon(const kt_expr *e, const kt_scope *sc, kt_buf *out);

/* C source for e.  slot_c[i] is the C text substituted for slot i (a variable or a literal).
 * The text uses KT_MIN, KT_MAX, KT_CDIV, KT_ABS, KT_LOG2, KT_POW2 (defined by kt_expr_c_prelude)
 * and computes in int64_t / double exactly like kt_expr_eval. */
void kt_expr_to_c(const kt_expr *e, const char *const *slot_c, kt_buf *out);
/* The C definitions that kt_expr_to_c output needs (static inline functions). */
const char *kt_expr_c_prelude(void);

#endif
