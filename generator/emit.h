/* emit.h - writing the generated code of one tuned kernel.
 *
 * For a kernel NAME, kt_emit writes into the output directory:
 *   kt_NAME_<hash>.cu  one translation unit per distinct chosen configuration: the template
 *                      included with the parameters as macros, and a launcher for that variant
 *   kt_NAME.cu         the dispatcher kt_NAME(args..., stream): picks a variant for the runtime
 *                      shape (exact, then nearest feasible tuned shape, then the fallback)
 *   kt_NAME.h          its declaration, for C and C++
 *   kt_NAME.json       the manifest: each shape, its configuration and where it came from
 *   kt_NAME.cmake      KT_GENERATED_SOURCES and KT_GENERATED_DEPENDS for the CMake module
 * Every file goes through kt_write_if_changed, so a re-run with the same choices leaves the
 * tree (and the build) untouched; variant files of earlier runs that are no longer chosen are
 * removed.  Everything is validated before the first write.
 */
#ifndef KT_EMIT_H
#define KT_EMIT_H

#include <stdint.h>

#include "tmpl.h"
#include "util.h"

/* The configuration chosen for one shape.  Borrowed: kt_emit copies nothing it keeps. */
typedef struct kt_choice {
	const int64_t *shape;  /* t->nshapes values */
	const uint16_t *cfg;   /* t->nparams value indices */
	const char *origin;    /* "default", "cache:<tier>", "tuned", "forced", "transfer" (farmed: generate.h) */
	const char *key;       /* the cache key (hex), or NULL */
} kt_choice;

typedef struct kt_emit_opts {
	const char *name;          /* a C identifier: the launcher is kt_<name> */
	const char *outdir;        /* created if missing */
	int nchoices;
	const kt_choice *choices;
	const uint16_t *fallback;  /* used when no tuned shape fits; NULL: the template default */
	const char *fallback_origin; /* "default", "robust", ...; NULL: "default" */
} kt_emit_opts;

/* Writes the files listed above.  0 on success; -1 with err set, and nothing written when the
 * input is invalid (a name that is not an identifier, a shape symbol that no scalar argument
 * passes, a configuration infeasible at its shape). */
int kt_emit(const kt_tmpl *t, const kt_emit_opts *o, kt_err *err);

/* The text of one variant translation unit whose launcher is `symbol` (its kernel becomes
 * symbol_kernel).  The tuner compiles the same text, so what it measures is what ships. */
void kt_emit_variant(const kt_tmpl *t, const uint16_t *cfg, const char *symbol, kt_buf *out);

/* Variants compiled together, for speed (the tuner's nvcc then reads the CUDA headers once for
 * several variants): a translation unit is the prelude, then parts.  A part is a variant's
 * kernel in a namespace of its own (symbol_ns), its parameters defined around it, with no
 * launcher; its code is the same as in the variant's own translation unit.  The prelude holds
 * the CUDA headers and the template's headers, which a part then finds already included.
 * kt_emit_prelude returns 1 and writes nothing when the template cannot share a translation
 * unit: one of its local headers mentions a macro that a part defines (a parameter, a type
 * symbol, the kernel's or the reference's name, a #define of the template), so its text would
 * differ from variant to variant. */
int kt_emit_prelude(const kt_tmpl *t, kt_buf *out);
void kt_emit_part(const kt_tmpl *t, const uint16_t *cfg, const char *symbol, kt_buf *out);

/* The variant symbol for cfg: "kt_<name>_<8 hex digits>", a hash of the configuration and the
 * chosen type symbols, written to out (at least 64 + strlen(name) bytes). */
void kt_emit_symbol(const kt_tmpl *t, const char *name, const uint16_t *cfg, char *out, size_t outsz);

#endif
