/* cusrc.h - what kt needs to know about CUDA source text without compiling it: which __global__
 * functions it defines and which local headers it includes. */
#ifndef KT_CUSRC_H
#define KT_CUSRC_H

#include <stddef.h>

#include "util.h"

/* 1 when src[0..len) defines or declares a __global__ function called name (a token scan that
 * skips comments, strings and attributes like __launch_bounds__(...)); else 0. */
int kt_cusrc_has_global(const char *src, size_t len, const char *name);

/* The definition of the __global__ function called name in text[0..len), as the byte range
 * [*from, *to): from just after whatever ends the declaration before it (a ';', a brace or a
 * preprocessor line) to just past its body's closing brace.  0 when found; -1 when the text
 * does not define it, names it anywhere else (leaving the definition out would break that use),
 * or holds a directive other than #pragma within the range (leaving it out could change what
 * the rest of the text means). */
int kt_cusrc_global_def(const char *text, size_t len, const char *name, size_t *from, size_t *to);

/* When the line s[0..n) is `#include "name"`: name (not terminated), its length in *len; else
 * NULL. */
const char *kt_cusrc_local_include(const char *s, size_t n, size_t *len);

/* The local headers of the file `path` whose text is text[0..len): each `#include "x"` is
 * resolved relative to the including file's directory, kept when the file exists and followed
 * recursively (each file once, so cycles end).  Sets *paths to an array in the arena (the
 * resolved paths, in the order found) and returns how many. */
int kt_cusrc_includes(kt_arena *a, const char *path, const char *text, size_t len, const char ***paths);

/* The names of text[0..len)'s `#define NAME` lines and its `#include <x>` lines (system headers):
 * *names is set to an array in the arena, in the order found (a name may repeat).  Returns how
 * many. */
int kt_cusrc_defines(kt_arena *a, const char *text, size_t len, const char ***names);
int kt_cusrc_system_includes(kt_arena *a, const char *text, size_t len, const char ***names);

/* 1 when an identifier of text[0..len), outside comments and literals, is one of names[0..n). */
int kt_cusrc_mentions(const char *text, size_t len, const char *const *names, int n);

/* 1 when text[0..len) uses the macro name, or one of its choices name_IS_<choice>: an identifier
 * outside comments and literals, other than the subject of `#ifdef`, `#ifndef`, `#define`,
 * `#undef` or `defined` (which a template writes to give the macro its default, and which cannot
 * change the code where the macro is always defined). */
int kt_cusrc_uses_macro(const char *text, size_t len, const char *name);

#endif
