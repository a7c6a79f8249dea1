/* nvrtc.h - compiling tuning units with the toolkit's runtime compiler, where it gives nvcc's
 * machine code at a fraction of nvcc's cost.
 *
 * `nvcc -cubin` spends most of a small unit's time outside the unit: the driver, the host
 * preprocessor over the CUDA runtime headers, cicc parsing them.  NVRTC, the same front end and
 * optimizer in a library, compiles the same text to the same PTX and, through the same ptxas,
 * the same cubin in about a sixth of the time.  kt uses it only for the tuner's packed units
 * (kernels, no host launcher), only with the NVRTC of the toolkit the nvcc belongs to and of
 * its release, only for flags it knows how to pass, and only once a unit compiled both ways
 * gave the same machine code (kt_cubin_same_code); everything else goes to nvcc.
 *
 * `kt nvrtc --lib LIB [--verify] -- NVCC ARGS...` is a ninja edge's compiler: ARGS are nvcc's
 * (`-cubin -arch=sm_90 <flags> -Xptxas -v -o OUT IN`).  It compiles IN with NVRTC into OUT and
 * prints ptxas's report as nvcc would; when NVRTC cannot take the arguments or fails, it runs
 * nvcc with them instead; its last line is KT_NVRTC_USED when NVRTC compiled.  With --verify it runs nvcc too, keeps nvcc's cubin, and says on its
 * last line of output whether the two agree (KT_NVRTC_SAME, KT_NVRTC_DIFFERS, KT_NVRTC_FAILED). */
#ifndef KT_NVRTC_H
#define KT_NVRTC_H

#include <stddef.h>

#include "util.h"

#define KT_NVRTC_USED "kt nvrtc: compiled by NVRTC"
#define KT_NVRTC_SAME "kt nvrtc: the same machine code as nvcc's"
#define KT_NVRTC_DIFFERS "kt nvrtc: machine code differs from nvcc's"
#define KT_NVRTC_FAILED "kt nvrtc: NVRTC could not compile this unit"

/* How a compiler's tuning units may use NVRTC: shared by the batches of one tuning run, which
 * learn from the first whether NVRTC agrees with nvcc. */
typedef struct kt_nvrtc_use {
	const char *kt;  /* the kt executable whose `kt nvrtc` compiles a unit */
	const char *lib; /* the NVRTC library of the compiler's toolkit */
	int state;       /* 0: not yet compared with nvcc; 1: the same machine code; -1: nvcc from now on */
} kt_nvrtc_use;

/* The NVRTC library (a path, owned by the caller) that compiles as nvcc (a path, or a name
 * searched in PATH) does: its toolkit's, of the release `nvcc --version` names.  NULL when
 * there is none, when its release differs, or when a flag has no NVRTC equivalent; *why (may be
 * NULL) then says why in a few words. */
char *kt_nvrtc_library(const char *nvcc, const char *const *flags, int nflags, const char **why);

/* NVRTC's options for nvcc's arguments args[0..n) (as kt passes them: -cubin, an -arch or
 * -gencode of one real target, the user's flags, -Xptxas -v, -o OUT and one input): each into
 * a's arena, *opts their array, *in and *out the files.  The count of options, or -1 when an
 * argument has no NVRTC equivalent (nvcc must compile). */
int kt_nvrtc_options(kt_arena *a, char *const *args, int n, const char ***opts, const char **in, const char **out);

/* 1 when the cubins a[0..an) and b[0..bn) hold the same machine code: the same sections with
 * the same bytes, but the note naming the tool that made them.  0 otherwise, with the first
 * section that differs (or why they cannot be compared) in why. */
int kt_cubin_same_code(const void *a, size_t an, const void *b, size_t bn, char *why, size_t whysz);

#endif
