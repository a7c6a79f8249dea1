/* cmd_cache.h - what the files of `kt cache` share: cmd_cache.c (stats, ls, show, explain, verify,
 * gc, promote and the table), cmd_cache_t4.c (export and import, Kernel Tuner's T4) and
 * cmd_cache_push.c (push, to the remote).
 * Internal to them; cmd.h has the command itself. */
#ifndef KT_CMD_CACHE_H
#define KT_CMD_CACHE_H

#include "cache.h"
#include "opt.h"
#include "tmpl.h"
#include "util.h"

/* The options every `kt cache` command takes. */
typedef struct kt_cache_common {
	const char *cache_dir, *project_cache, *remote;
} kt_cache_common;

#define KT_CACHE_COMMON_OPTS(c)                                                                          \
	{"cache-dir", KT_OPT_STR, &(c).cache_dir, "DIR", "the user cache (else $KT_CACHE_DIR, ~/.cache/kt)"}, \
	{"project-cache", KT_OPT_STR, &(c).project_cache, "DIR", "the project's committed cache directory"}

/* Opens the cache read-only: the tools never count lookups or copy records up by accident. */
kt_cache *kt_cache_cmd_open(const kt_cache_common *c, const char *remote, kt_err *err);
/* Parses a command's options; returns -1 to go on, or the exit status to return. */
int kt_cache_cmd_parse(const kt_opt *opts, int argc, char **argv, const char **pos, int maxpos, int *npos,
		       const char *usage, const char *about);
/* Reports err as `kt cache`'s and returns the exit status. */
int kt_cache_cmd_fail(kt_err *err);
/* Parses a template with the type choices and the compile target (NULL or "": unknown) that a
 * command was given; its diagnostics go to stderr. */
kt_tmpl *kt_cache_cmd_template(const char *path, const kt_strlist *types, const char *arch, kt_err *err);

int kt_cache_cmd_export(int argc, char **argv);
int kt_cache_cmd_import(int argc, char **argv);
int kt_cache_cmd_push(int argc, char **argv);

#endif
