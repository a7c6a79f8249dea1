/* diag.h - diagnostics that point at the input: "path:line:col: error: ...", the source line
 * and a caret under the column; and "did you mean" suggestions for misspelt names. */
#ifndef KT_DIAG_H
#define KT_DIAG_H

#include <stddef.h>

#include "util.h"

/* Appends "path:line:col: error: <msg>\n<source line>\n<caret line>\n" to out.  src[0..srclen)
 * is the whole input; line and col are 1-based (col counts bytes).  The caret line keeps the
 * tabs of the source line so that the caret lines up in a terminal. */
void kt_diag_error(kt_buf *out, const char *path, const char *src, size_t srclen, int line, int col,
		   const char *fmt, ...) __attribute__((format(printf, 7, 8)));

/* Writes s[0..n) in single quotes to out, control characters as \xNN (for "but found 'x'"). */
void kt_diag_quote(char *out, size_t outsz, const char *s, size_t n);

/* Line and column (1-based) of byte offset off in src. */
void kt_diag_locate(const char *src, size_t srclen, size_t off, int *line, int *col);

/* Edit distance (insertions, deletions, substitutions, adjacent transpositions) between
 * a[0..an) and b, capped: returns cap + 1 when it is larger than cap. */
int kt_diag_distance(const char *a, size_t an, const char *b, int cap);

/* The candidate closest to name[0..n) within edit distance 2 (and less than n), or NULL. */
const char *kt_diag_closest(const char *name, size_t n, const char *const *cands, int ncands);

#endif
