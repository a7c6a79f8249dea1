/* util.h - the small things every module uses: errors, growable text, arenas, files.
 *
 * Errors have two tiers.  Library code returns -1 (or NULL) and fills a kt_err;
 * only main() prints and chooses the exit status.  A kt_err also carries the exit
 * class (bad input vs internal failure), so the CLI can map it to 1 or 2.
 */
#ifndef KT_UTIL_H
#define KT_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#define KT_VERSION "0.1.0"

/* ---- errors ---------------------------------------------------------------- */

enum kt_errclass { KT_E_INPUT = 1, KT_E_INTERNAL = 2 };

typedef struct kt_err {
	int cls;        /* KT_E_INPUT or KT_E_INTERNAL; 0 while no error was set */
	char msg[2048]; /* one or more lines, no trailing newline */
} kt_err;

/* Sets err (if not NULL) to a bad-input error; returns -1 so callers can `return kt_fail(...)`. */
int kt_fail(kt_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Same, for internal failures (I/O, out of memory, a child that crashed). */
int kt_fail_internal(kt_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Aborts with a message: only for allocation failure and broken invariants. */
_Noreturn void kt_oom(void);
void *kt_xmalloc(size_t n);
void *kt_xcalloc(size_t n, size_t size);
void *kt_xrealloc(void *p, size_t n);
char *kt_xstrdup(const char *s);

/* ---- growable text buffer --------------------------------------------------
 * Owns its bytes; always NUL-terminated once anything was added.  Zero-initialise
 * (kt_buf b = {0};) and release with kt_buf_free. */
typedef struct kt_buf {
	char *data;
	size_t len, cap;
} kt_buf;

void kt_buf_add(kt_buf *b, const void *p, size_t n);
void kt_buf_puts(kt_buf *b, const char *s);
void kt_buf_putc(kt_buf *b, char c);
void kt_buf_printf(kt_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void kt_buf_vprintf(kt_buf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
void kt_buf_reset(kt_buf *b);          /* length 0, keeps the storage */
char *kt_buf_detach(kt_buf *b);        /* caller owns the returned string; b is empty */
void kt_buf_free(kt_buf *b);
const char *kt_buf_str(const kt_buf *b); /* "" when empty */
/* Appends s's first line, for a terminal: at most max bytes (then "..."), control characters
 * (but tabs) as '?'.  For text that is data (records, replies).  Returns the offset of s's next
 * line (at the end, strlen(s)). */
size_t kt_buf_put_line(kt_buf *b, const char *s, size_t max);

/* Where a library passes its messages (notes, warnings, progress lines): one text at a time, with
 * the context the caller gave; the text lives for the call only. */
typedef void (*kt_say_fn)(void *ctx, const char *msg);
/* Formats the text and passes it to say(ctx, text); nothing when say is NULL. */
void kt_say(kt_say_fn say, void *ctx, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void kt_vsay(kt_say_fn say, void *ctx, const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));

/* The length of s[0..n) cut to at most max bytes, not inside a UTF-8 sequence. */
size_t kt_utf8_cut(const char *s, size_t n, size_t max);

/* ---- arena ------------------------------------------------------------------
 * Everything parsed from one template lives in one arena and dies with it. */
typedef struct kt_arena kt_arena;

kt_arena *kt_arena_new(void);
void *kt_arena_alloc(kt_arena *a, size_t n);        /* zeroed, aligned for any type */
char *kt_arena_strndup(kt_arena *a, const char *s, size_t n);
char *kt_arena_strdup(kt_arena *a, const char *s);
void kt_arena_free(kt_arena *a);

/* ---- files --------------------------------------------------------------- */

/* Reads a whole file into out (NUL-terminated).  0 on success. */
int kt_read_file(const char *path, kt_buf *out, kt_err *err);

/* A compile target as nvcc names it after "sm_": 2 or 3 digits, then optionally 'a' (the
 * architecture-specific features, e.g. 90a for wgmma) or 'f' (the family's).  0 with *sm (90)
 * and *a (1 for 'a') set when arch is one; -1 otherwise. */
int kt_arch_parse(const char *arch, int *sm, int *a);
/* The same for a command's --arch: 0 when arch is NULL or one; else -1 with err naming it. */
int kt_arch_check(const char *arch, kt_err *err);
/* Writes data to path atomically: a temp file in the same directory, fsync, rename.
 * Readers see the old file or the new one, never a part. */
int kt_write_atomic(const char *path, const void *data, size_t len, kt_err *err);
/* kt_write_atomic with a seam: before_rename(ctx), when not NULL, runs after the temporary file
 * is written and synced and before the rename (tests stop or kill a writer there). */
int kt_write_atomic_cb(const char *path, const void *data, size_t len, void (*before_rename)(void *ctx),
		       void *ctx, kt_err *err);
/* Writes data to path in place, with no temporary file and no fsync: for scratch files, whose
 * readers learn otherwise that a write finished (an exit status, a rename after it). */
int kt_write_file(const char *path, const void *data, size_t len, kt_err *err);
/* Like kt_write_atomic, but leaves the file alone (and its mtime) when it already
 * holds exactly these bytes, so a re-run does not trigger rebuilds.  *changed may be NULL. */
int kt_write_if_changed(const char *path, const void *data, size_t len, int *changed, kt_err *err);
/* path is a directory: else -1 with err "WHAT 'PATH': no such directory" (or not a directory, or
 * why it cannot be read), for a directory the user named (what: the option, "--project-cache"). */
int kt_check_dir(const char *what, const char *path, kt_err *err);
/* mkdir -p.  0 on success. */
int kt_mkdirs(const char *path, kt_err *err);
/* Joins a directory and a name into a new string. */
char *kt_path_join(const char *dir, const char *name);
/* The directory part of path, as a new string ("." when none). */
char *kt_path_dir(const char *path);
/* name itself when it has a slash, else the first executable of that name in PATH (owned by
 * the caller); NULL when there is none. */
char *kt_find_program(const char *name);

/* A new directory <base>/<prefix>-<pid>-XXXXXX (base NULL or "": /tmp); the pid lets a later run
 * tell that its owner is gone (kt_sweep_temp_dirs).  NULL with err when it cannot be made. */
char *kt_temp_dir(const char *base, const char *prefix, kt_err *err);
/* Removes path and everything below it (best effort; links are removed, not followed). */
void kt_remove_tree(const char *path);
/* Removes the directories kt_temp_dir made under base with prefix whose process is gone (a run
 * that was killed); returns how many. */
int kt_sweep_temp_dirs(const char *base, const char *prefix);

/* ---- small helpers ----------------------------------------------------- */

/* Parses a decimal int64 in s[0..n); 0 on success. */
int kt_parse_i64(const char *s, size_t n, int64_t *out);
/* True when name is a C identifier. */
int kt_is_ident(const char *s, size_t n);

#endif
