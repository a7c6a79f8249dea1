/* flags.h - the build's nvcc flags, sorted by what kt does with each.
 *
 * A project's CUDA flags (CMAKE_CUDA_FLAGS and a kernel's FLAGS) reach kt as one string.  kt
 * compiles for the GPU it times, so the build's architecture flags (-gencode, -arch, ...) never
 * reach its compiles: they only say which architectures the build is for.  Flags that package the
 * binary or talk about warnings reach the build's compile of the variants, but neither kt's own
 * compiles nor the cache key.  Every other flag may change what the code computes or how it
 * compiles (-D, -I, --use_fast_math, -Xptxas, ...): it reaches every compile and is part of the
 * key.  One table says which is which (kt_flag_rules; docs/cache.md shows it).
 */
#ifndef KT_FLAGS_H
#define KT_FLAGS_H

#include <stddef.h>

#include "util.h"

typedef enum kt_flag_class {
	KT_FLAG_KEYED, /* reaches every compile and the key (any flag the table does not name) */
	KT_FLAG_ARCH,  /* dropped: names architectures of the build */
	KT_FLAG_BUILD, /* reaches the build's compile of the variants only */
} kt_flag_class;

typedef struct kt_flag_rule {
	const char *name;  /* "-gencode"; a name ending in '*' matches every flag it begins */
	int value;         /* takes a value: "-Xptxas -v", "-Xptxas=-v" or "-Xptxas -v" */
	kt_flag_class cls;
} kt_flag_rule;

/* The table, sorted by name; *n gets its length. */
const kt_flag_rule *kt_flag_rules(size_t *n);

/* The flags of one string, split by class.  Each list holds whole words, one blank between them,
 * a flag and its value kept together in order. */
typedef struct kt_flags {
	kt_buf keyed;    /* for kt's compiles, the key and the build */
	kt_buf build;    /* for the build's compile of the variants only */
	kt_buf dropped;  /* the architecture flags as given, for a note */
	kt_buf archs;    /* the architectures they name, "80;90a" (in order, each once) */
} kt_flags;

/* Splits flags (words separated by blanks, tabs or ';', as a CMake list joins them). */
void kt_flags_split(const char *flags, kt_flags *out);
void kt_flags_free(kt_flags *f);

/* Appends to list ("80;90a") each architecture that text names as sm_XX or compute_XX, or as
 * plain digits ("90a", "80-real"), that list does not hold yet. */
void kt_flags_add_archs(const char *text, kt_buf *list);

#endif
