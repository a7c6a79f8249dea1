/* gpu.h - the GPU seam: the few driver operations that testing and timing a variant needs.
 *
 * A backend is a table of functions (kt_gpu_ops).  "cuda" (gpu_cuda.c) loads libcuda.so.1 with
 * dlopen, so kt runs where no driver exists: count() then says 0 and why.  "fake" (gpu_fake.h)
 * runs kernels on the host by what their module text says, deterministically, for tests of the
 * worker protocol without a GPU; only test builds have it.  Which backends an executable has is
 * the table linked into it: gpu_backends.c in the product kt (cuda), gpu_backends_test.c in the
 * unit tests and kt-fake (cuda, fake).
 *
 * Every operation returns 0, or -1 with err set to the driver's error name and text.  After a
 * fault (an illegal address, a launch failure) the context is broken: the caller must close it
 * (the worker process exits) rather than go on.
 *
 * Ownership: kt_gpu_open returns a context the caller closes; modules, functions, events, graphs
 * and device pointers belong to that context and die with it.
 */
#ifndef KT_GPU_H
#define KT_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "result.h"
#include "tmpl.h"
#include "util.h"

typedef uint64_t kt_dptr; /* a device address */

/* What the device allows, for pruning configurations before they run. */
typedef struct kt_gpu_limits {
	int max_threads_block;
	int max_block[3], max_grid[3];
	int regs_per_block, regs_per_sm;
	int64_t smem_block;   /* shared memory per block without opting in */
	int64_t mem_bytes;    /* global memory */
} kt_gpu_limits;

typedef struct kt_gpu_info {
	kt_gpu_id id;
	kt_gpu_limits lim;
	char driver[32];     /* "13.0" */
} kt_gpu_info;

typedef struct kt_gpu kt_gpu; /* an open context on one device; a backend's struct starts with it */

typedef struct kt_gpu_ops {
	const char *name;
	/* Number of devices; 0 with a reason in why when there is no driver or no device. */
	int (*count)(int *n, char *why, size_t whysz);
	int (*info)(int ordinal, kt_gpu_info *out, kt_err *err);
	kt_gpu *(*open)(int ordinal, kt_err *err);
	void (*close)(kt_gpu *g);
	int (*load)(kt_gpu *g, const void *image, size_t len, void **mod, kt_err *err);
	void (*unload)(kt_gpu *g, void *mod);
	/* Exact name only (kt_gpu_function adds the mangled-name fallback). */
	int (*function)(kt_gpu *g, void *mod, const char *name, void **fn);
	/* Names of every function in a module; *names is malloc'ed, the strings belong to the module. */
	int (*functions)(kt_gpu *g, void *mod, const char ***names, void ***fns, size_t *n, kt_err *err);
	int (*set_dyn_smem)(kt_gpu *g, void *fn, int64_t bytes, kt_err *err);
	int (*alloc)(kt_gpu *g, size_t n, kt_dptr *p, kt_err *err);
	void (*free)(kt_gpu *g, kt_dptr p);
	int (*htod)(kt_gpu *g, kt_dptr dst, const void *src, size_t n, kt_err *err);
	int (*dtoh)(kt_gpu *g, void *dst, kt_dptr src, size_t n, kt_err *err);
	int (*dtod)(kt_gpu *g, kt_dptr dst, kt_dptr src, size_t n, kt_err *err);
	int (*memset8)(kt_gpu *g, kt_dptr dst, unsigned char v, size_t n, kt_err *err);
	int (*launch)(kt_gpu *g, void *fn, const int64_t grid[3], const int64_t block[3], int64_t smem,
		      void **params, kt_err *err);
	int (*event_new)(kt_gpu *g, void **ev, kt_err *err);
	void (*event_free)(kt_gpu *g, void *ev);
	int (*record)(kt_gpu *g, void *ev, kt_err *err);
	int (*elapsed_ms)(kt_gpu *g, void *start, void *end, float *ms, kt_err *err);
	int (*sync)(kt_gpu *g, kt_err *err);
	/* CUDA graphs.  Between capture_begin and capture_end, launch records its launches into a
	 * graph instead of running them (nothing else may be called meanwhile); capture_end ends the
	 * capture also after a failed launch, and gives the graph.  graph_launch replays an
	 * instantiated graph on the stream that everything else uses, so events bracket it. */
	int (*capture_begin)(kt_gpu *g, kt_err *err);
	int (*capture_end)(kt_gpu *g, void **graph, kt_err *err);
	int (*graph_instantiate)(kt_gpu *g, void *graph, void **exec, kt_err *err);
	int (*graph_launch)(kt_gpu *g, void *exec, kt_err *err);
	void (*graph_exec_free)(kt_gpu *g, void *exec);
	void (*graph_free)(kt_gpu *g, void *graph);
} kt_gpu_ops;

struct kt_gpu {
	const kt_gpu_ops *ops;
};

const kt_gpu_ops *kt_gpu_cuda(void);
/* Backend i of this executable's table ("cuda" first), NULL past the end: defined by the table
 * linked into the executable (gpu_backends.c or gpu_backends_test.c), not by gpu.c. */
const kt_gpu_ops *kt_gpu_backend_at(size_t i);
/* The backend called name (NULL: "cuda"); NULL when this executable has none by that name. */
const kt_gpu_ops *kt_gpu_backend(const char *name);
/* 0 when this executable has the backend called name (NULL: "cuda"), else -1 with a bad-input err
 * naming it and the backends it has. */
int kt_gpu_backend_check(const char *name, kt_err *err);
/* The device's own compile target as nvcc names it after "sm_" ("90" for 9.0) into out[n]. */
void kt_gpu_arch(const kt_gpu_id *id, char *out, size_t n);

/* Finds a kernel: by its exact name, else the one whose mangled name starts with _Z<len><name>
 * (a C++ kernel that is not extern "C").  0, or -1 with err naming what the module holds. */
int kt_gpu_function(kt_gpu *g, void *mod, const char *name, void **fn, kt_err *err);
/* True when sym is name itself or an Itanium-mangled function called name. */
int kt_gpu_name_matches(const char *sym, const char *name);

/* ---- host-side elements (filling inputs, reading results) ---------------------------------- */

/* Element i of an array of etype, as a double. */
double kt_elem_get(kt_etype t, const void *base, size_t i);
/* Stores v (rounded to the nearest representable value) as element i. */
void kt_elem_set(kt_etype t, void *base, size_t i, double v);
/* Test input element i of a fill (a counter-based hash of seed and i, so any element can be made
 * independently; the worker's kt_fill_<etype> kernels compute the same on the device). */
double kt_fill_value(const kt_fill *f, uint64_t seed, uint64_t i, int is_float);
/* The comparison every check uses: NaN never passes, +-inf must match exactly, else
 * |got - want| <= atol + rtol * |want|. */
int kt_elem_close(double got, double want, double atol, double rtol);

#endif
