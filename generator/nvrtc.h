/* nvrtc.h - compiling tuning units with the toolkit's runtime compiler, at a fraction of nvcc's
 * cost.
 *
 * `nvcc -cubin` spends most of a small unit's time outside the unit: the driver, the host
 * preprocessor over the CUDA runtime headers, cicc parsing them.  NVRTC, the same front end and
 * optimizer in a library, compiles the same text in a third to a sixth of the time.  kt uses it
 * only for the tuner's packed units (kernels, no host launcher), only with the NVRTC of the
 * toolkit the nvcc belongs to and of its release, and only for flags it knows how to pass.  The
 * first unit is compiled both ways and compared (kt_cubin_same_code):
 *   - the same machine code (the elementwise templates): NVRTC compiles from then on, and where
 *     the compared kernel used no shared memory, the kernels that do stand in (below);
 *   - other machine code (NVRTC 13 addresses __shared__ arrays in 64 bits where nvcc uses 32; no
 *     option changes it: LLVM's -nvptx-short-ptr reaches NVRTC's code generator through
 *     `-Xnvvm=-Xllc -Xnvvm=-nvptx-short-ptr` and changes nothing, and cicc's `sharedmem32` is
 *     not among NVRTC's front-end options):
 *     NVRTC stands in for nvcc in small packs (compile.h).  Its variants serve the search, which
 *     they time as nvcc's do (bench/RESULTS.md), and the tuner compiles the configurations it
 *     chooses between again with nvcc, measures those and chooses from them;
 *   - NVRTC cannot compile it: nvcc from then on.
 *
 * `kt nvrtc --lib LIB [--verify] -- NVCC ARGS...` is a ninja edge's compiler: ARGS are nvcc's
 * (`-cubin -arch=sm_90 <flags> -Xptxas -v -o OUT IN`).  It compiles IN with NVRTC into OUT and
 * prints ptxas's report as nvcc would; when NVRTC cannot take the arguments or fails, it runs
 * nvcc with them instead; its last line is KT_NVRTC_USED when NVRTC compiled.  The C library's
 * floating-point macros that nvcc's implicit headers define and NVRTC's lack (INFINITY, NAN,
 * HUGE_VALF, HUGE_VAL) are given to NVRTC as CUDA's bit patterns.  With --verify it runs nvcc too, keeps nvcc's cubin, and says on its
 * last line of output whether the two agree (KT_NVRTC_SAME, KT_NVRTC_DIFFERS, KT_NVRTC_FAILED). */
#ifndef KT_NVRTC_H
#define KT_NVRTC_H

#include <stddef.h>

#include "util.h"

#define KT_NVRTC_USED "kt nvrtc: compiled by NVRTC"
#define KT_NVRTC_SAME "kt nvrtc: the same machine code as nvcc's"
#define KT_NVRTC_DIFFERS "kt nvrtc: machine code differs from nvcc's"
#define KT_NVRTC_FAILED "kt nvrtc: NVRTC could not compile this unit"

/* What the comparison of NVRTC with nvcc found (kt_nvrtc_use.state): NVRTC compiles when > 0. */
enum { KT_NVRTC_OFF = -1, KT_NVRTC_UNKNOWN = 0, KT_NVRTC_SAME_CODE = 1, KT_NVRTC_STANDS_IN = 2 };

/* How a compiler's tuning units may use NVRTC: shared by the batches of one tuning run, which
 * learn from the first how NVRTC compares with nvcc. */
typedef struct kt_nvrtc_use {
	const char *kt;  /* the kt executable whose `kt nvrtc` compiles a unit */
	const char *lib; /* the NVRTC library of the compiler's toolkit */
	int state;       /* KT_NVRTC_*: not yet compared, the same code, standing in, nvcc from now on */
	int shared_seen; /* the compared unit's kernel used shared memory: "the same code" then holds
			  * for kernels that do (else they stand in, compile.h) */
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
