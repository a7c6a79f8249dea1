/* problem.h - the tuning problem: one template at one shape, for one target GPU, built one way.
 *
 * It is what a cache key names (key.h), what a record describes (record.h), what the cache looks
 * up and stores (cache.h) and what the tuner solves (tune.h).  A value of borrowed pointers and the
 * measurement settings: the caller keeps the template, the shape, the target and the toolchain
 * alive while it is used.
 */
#ifndef KT_PROBLEM_H
#define KT_PROBLEM_H

#include <stdint.h>

#include "measure.h"
#include "target.h"
#include "tmpl.h"
#include "util.h"

/* How the variants are built: the same for tuning and for the build, so what is measured ships. */
typedef struct kt_toolchain {
	const char *nvcc;     /* the compiler: a path, or a name searched in PATH; NULL: "nvcc" */
	const char *compiler; /* its identity (kt_key_compiler); "" when unknown */
	const char *arch;     /* the compile target after "sm_" as given ("90", "90a"); "": the device's */
	const char *flags;    /* the build's code-generation flags, one string; "" for none */
} kt_toolchain;

typedef struct kt_problem {
	const kt_tmpl *tmpl;
	const int64_t *shape;     /* tmpl->nshapes values */
	const kt_target *target;
	const kt_toolchain *tc;
	kt_measure measure;       /* how its variants are timed (measure.h); zero: the defaults */
} kt_problem;

/* "rmsnorm rows=4096,hidden=4096", appended to out (progress lines and messages). */
void kt_problem_label(const kt_problem *p, kt_buf *out);

/* The toolchain's flags as words (split at blanks), for an argv: *words holds the copied text,
 * the returned array (NULL-terminated, *n entries) points into it; free both. */
const char **kt_toolchain_flag_words(const kt_toolchain *tc, char **words, int *n);

#endif
