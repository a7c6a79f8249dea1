/* key.h - the cache key of one tuning problem.
 *
 * A key is XXH3-128 over a canonical field text: one "name=value\n" line per field, in a fixed
 * order, values escaped so that a line is always one field.  The fields are everything that can
 * change which configuration is best or what the tuned code is: the record-format version, the
 * template's bytes and its local headers' bytes (as hashes), the canonical space and constraints,
 * the chosen type symbols and options, the shape, the GPU identity, the compiler identity, the code-generation
 * flags and the architecture, and the measurement settings that differ from their defaults
 * (measure.h: none at the defaults, so keys made before the settings existed stay).  Paths are not fields, so a key is the same on every machine.
 *
 * The field text is what a record stores and what `kt cache explain` prints; the key is its hash,
 * so a stored record can be checked against its own key (kt_key_of_fields).
 */
#ifndef KT_KEY_H
#define KT_KEY_H

#include <stdint.h>

#include "problem.h"
#include "util.h"

#define KT_KEY_FORMAT 1 /* record-format version; also the v<N> directory of every tier */
#define KT_KEY_HEX 33   /* 32 hex digits and a NUL */

/* A key and the field text it hashes.  Zero-initialise; release with kt_key_free. */
typedef struct kt_key {
	char hex[KT_KEY_HEX];
	kt_buf fields;
} kt_key;

/* Appends the canonical field text of problem p to out.  -1 when a local header cannot be read. */
int kt_key_fields(const kt_problem *p, kt_buf *out, kt_err *err);
/* The key of a field text (32 lowercase hex digits). */
void kt_key_of_fields(const char *text, size_t len, char hex[KT_KEY_HEX]);
/* 1 when field texts a and b are of one problem: every field the same but the template's own (its
 * source, includes, parameters and constraints), so that they differ at most in the version of the
 * template tuned (with the same template, their keys are the same too). */
int kt_key_same_problem(const char *a, const char *b);
/* The hash of a field text's problem lines (every field but the template's own): the same for
 * every version of one problem (kt_key_same_problem), as 32 hex digits.  The remote keeps the
 * latest record of each problem under it. */
void kt_key_problem(const char *fields, char hex[KT_KEY_HEX]);
/* Fields and key of p. */
int kt_key_make(const kt_problem *p, kt_key *out, kt_err *err);
void kt_key_free(kt_key *k);
/* True when s is 32 lowercase hex digits. */
int kt_key_is_hex(const char *s);

/* Escapes a field value onto out (backslash, newline and control characters as \\, \n, \xHH). */
void kt_key_escape(const char *v, kt_buf *out);

/* The identity of the compiler at nvcc (a path, or a name searched in PATH): the release and build
 * lines of `nvcc --version` on one line.  It is run once (spawned with an argv, no shell) and
 * remembered in memo_dir (may be NULL) under a name made of nvcc's path, size and mtime, so later
 * calls cost a stat and a read.  memo_write 0 reads a remembered identity but never writes one. */
int kt_key_compiler(const char *nvcc, const char *memo_dir, int memo_write, kt_buf *out, kt_err *err);

#endif
