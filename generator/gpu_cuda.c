/* gpu_cuda.c - the GPU seam over the CUDA driver API, loaded at run time.
 *
 * libcuda.so.1 is opened with dlopen and every entry point is resolved by its base name through
 * cuGetProcAddress_v2 (which picks the right _v2/_v3 version for the API level we ask for), or
 * by its versioned name with dlsym where that is missing.  No CUDA header is needed: the few
 * types and constants used are declared here with the values from cuda.h.
 */
#include "gpu.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext, *CUmodule, *CUfunction, *CUevent, *CUstream, *CUgraph, *CUgraphExec;
typedef unsigned long long CUdeviceptr;

enum { CUDA_API_LEVEL = 12000 }; /* the driver API version whose entry points we ask for */

/* CU_DEVICE_ATTRIBUTE_* values from cuda.h */
enum {
	ATTR_MAX_THREADS_PER_BLOCK = 1,
	ATTR_MAX_BLOCK_DIM_X = 2,
	ATTR_MAX_GRID_DIM_X = 5,
	ATTR_MAX_SHARED_MEMORY_PER_BLOCK = 8,
	ATTR_MAX_REGISTERS_PER_BLOCK = 12,
	ATTR_MULTIPROCESSOR_COUNT = 16,
	ATTR_L2_CACHE_SIZE = 38,
	ATTR_CC_MAJOR = 75,
	ATTR_CC_MINOR = 76,
	ATTR_MAX_REGISTERS_PER_SM = 82,
	ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
};
enum { FUNC_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8 };
enum { ERROR_NO_DEVICE = 100 };
enum { CTX_SCHED_BLOCKING_SYNC = 0x04 }; /* a waiting host thread sleeps: the cores compile */
enum { STREAM_NON_BLOCKING = 0x1 };       /* CU_STREAM_NON_BLOCKING: no implicit order with the legacy stream */
enum { CAPTURE_MODE_RELAXED = 2 };        /* CU_STREAM_CAPTURE_MODE_RELAXED */

/* The driver entry points we use: the table drives resolution, the struct holds the results. */
#define CU_FUNCS(X)                                                                                  \
	X(cuInit, "cuInit", (unsigned))                                                              \
	X(cuDriverGetVersion, "cuDriverGetVersion", (int *))                                         \
	X(cuDeviceGetCount, "cuDeviceGetCount", (int *))                                             \
	X(cuDeviceGet, "cuDeviceGet", (CUdevice *, int))                                             \
	X(cuDeviceGetName, "cuDeviceGetName", (char *, int, CUdevice))                               \
	X(cuDeviceGetAttribute, "cuDeviceGetAttribute", (int *, int, CUdevice))                      \
	X(cuDeviceTotalMem, "cuDeviceTotalMem_v2", (size_t *, CUdevice))                             \
	X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", (CUcontext *, CUdevice))             \
	X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", (CUdevice))                     \
	X(cuDevicePrimaryCtxSetFlags, "cuDevicePrimaryCtxSetFlags_v2", (CUdevice, unsigned))         \
	X(cuCtxSetCurrent, "cuCtxSetCurrent", (CUcontext))                                           \
	X(cuCtxSynchronize, "cuCtxSynchronize", (void))                                              \
	X(cuModuleLoadData, "cuModuleLoadData", (CUmodule *, const void *))                          \
	X(cuModuleUnload, "cuModuleUnload", (CUmodule))                                              \
	X(cuModuleGetFunction, "cuModuleGetFunction", (CUfunction *, CUmodule, const char *))        \
	X(cuModuleGetFunctionCount, "cuModuleGetFunctionCount", (unsigned *, CUmodule))              \
	X(cuModuleEnumerateFunctions, "cuModuleEnumerateFunctions", (CUfunction *, unsigned, CUmodule)) \
	X(cuFuncGetName, "cuFuncGetName", (const char **, CUfunction))                               \
	X(cuFuncSetAttribute, "cuFuncSetAttribute", (CUfunction, int, int))                          \
	X(cuMemAlloc, "cuMemAlloc_v2", (CUdeviceptr *, size_t))                                      \
	X(cuMemFree, "cuMemFree_v2", (CUdeviceptr))                                                  \
	X(cuMemcpyHtoD, "cuMemcpyHtoD_v2", (CUdeviceptr, const void *, size_t))                      \
	X(cuMemcpyDtoH, "cuMemcpyDtoH_v2", (void *, CUdeviceptr, size_t))                            \
	X(cuMemcpyDtoD, "cuMemcpyDtoD_v2", (CUdeviceptr, CUdeviceptr, size_t))                       \
	X(cuMemsetD8, "cuMemsetD8_v2", (CUdeviceptr, unsigned char, size_t))                         \
	X(cuLaunchKernel, "cuLaunchKernel",                                                          \
	  (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, \
	   void **, void **))                                                                        \
	X(cuEventCreate, "cuEventCreate", (CUevent *, unsigned))                                     \
	X(cuEventDestroy, "cuEventDestroy_v2", (CUevent))                                            \
	X(cuEventRecord, "cuEventRecord", (CUevent, CUstream))                                       \
	X(cuEventElapsedTime, "cuEventElapsedTime", (float *, CUevent, CUevent))                     \
	X(cuGetErrorName, "cuGetErrorName", (CUresult, const char **))                               \
	X(cuGetErrorString, "cuGetErrorString", (CUresult, const char **))                           \
	X(cuStreamCreate, "cuStreamCreate", (CUstream *, unsigned))                                  \
	X(cuStreamDestroy, "cuStreamDestroy_v2", (CUstream))                                         \
	X(cuStreamBeginCapture, "cuStreamBeginCapture_v2", (CUstream, int))                          \
	X(cuStreamEndCapture, "cuStreamEndCapture", (CUstream, CUgraph *))                           \
	X(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags", (CUgraphExec *, CUgraph, unsigned long long)) \
	X(cuGraphLaunch, "cuGraphLaunch", (CUgraphExec, CUstream))                                   \
	X(cuGraphExecDestroy, "cuGraphExecDestroy", (CUgraphExec))                                   \
	X(cuGraphDestroy, "cuGraphDestroy", (CUgraph))

#define CU_MEMBER(fn, versioned, args) CUresult(*fn) args;
static struct cu_api {
	int loaded; /* 1 loaded, -1 failed (why holds the reason) */
	char why[256];
	CU_FUNCS(CU_MEMBER)
} cu;

struct cu_sym {
	const char *base, *versioned;
	size_t off;
};
#define CU_SYM(fn, versioned, args) {#fn, versioned, offsetof(struct cu_api, fn)},
static const struct cu_sym cu_syms[] = {CU_FUNCS(CU_SYM)};

/* Entry points that only some work needs: of newer drivers (12.4+), for the mangled-name fallback;
 * of 11.4+, for timing CUDA-graph replays (measure.launch=graph).  Without them the rest works. */
static const char *const cu_optionals[] = {
	"cuModuleGetFunctionCount", "cuModuleEnumerateFunctions", "cuFuncGetName", "cuStreamCreate", "cuStreamDestroy",
	"cuStreamBeginCapture", "cuStreamEndCapture", "cuGraphInstantiateWithFlags", "cuGraphLaunch",
	"cuGraphExecDestroy", "cuGraphDestroy",
};

static int cu_optional(const char *base)
{
	for (size_t i = 0; i < sizeof cu_optionals / sizeof cu_optionals[0]; i++)
		if (!strcmp(base, cu_optionals[i]))
			return 1;
	return 0;
}

typedef CUresult (*getproc_fn)(const char *, void **, int, uint64_t, int *);

static int cu_load(void)
{
	if (cu.loaded)
		return cu.loaded > 0 ? 0 : -1;
	cu.loaded = -1;
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		snprintf(cu.why, sizeof cu.why, "no CUDA driver (libcuda.so.1: %s)", dlerror());
		return -1;
	}
	getproc_fn getproc = (getproc_fn)(uintptr_t)dlsym(lib, "cuGetProcAddress_v2");
	for (size_t i = 0; i < sizeof cu_syms / sizeof cu_syms[0]; i++) {
		void *p = NULL;
		int st = 0;
		if (!getproc || getproc(cu_syms[i].base, &p, CUDA_API_LEVEL, 0, &st) != 0)
			p = NULL;
		if (!p)
			p = dlsym(lib, cu_syms[i].versioned);
		if (!p && cu_optional(cu_syms[i].base))
			continue;
		if (!p) {
			snprintf(cu.why, sizeof cu.why, "the CUDA driver lacks %s (too old?)", cu_syms[i].versioned);
			return -1;
		}
		memcpy((char *)&cu + cu_syms[i].off, &p, sizeof p);
	}
	CUresult r = cu.cuInit(0);
	if (r) {
		const char *name = "?";
		cu.cuGetErrorName(r, &name);
		snprintf(cu.why, sizeof cu.why, "cuInit failed: %s", name);
		return -1;
	}
	cu.loaded = 1;
	return 0;
}

/* Fills err from a driver result; returns -1 when r is an error. */
static int cu_check(CUresult r, const char *what, kt_err *err)
{
	if (r == 0)
		return 0;
	const char *name = "CUDA_ERROR_UNKNOWN", *text = "";
	cu.cuGetErrorName(r, &name);
	cu.cuGetErrorString(r, &text);
	return kt_fail_internal(err, "%s: %s (%s)", what, name, text);
}

typedef struct cu_gpu {
	kt_gpu base;
	CUdevice dev;
	CUcontext ctx;
	CUstream capture; /* where graphs are captured (the legacy stream cannot be); made at the first */
	int capturing;    /* launches go to capture */
} cu_gpu;

static int cu_count(int *n, char *why, size_t whysz)
{
	*n = 0;
	if (cu_load()) {
		snprintf(why, whysz, "%s", cu.why);
		return 0;
	}
	CUresult r = cu.cuDeviceGetCount(n);
	if (r || *n == 0) {
		*n = 0;
		snprintf(why, whysz, "%s", r == ERROR_NO_DEVICE || !r ? "the CUDA driver sees no GPU" : "cuDeviceGetCount failed");
	}
	return 0;
}

static int attr(CUdevice d, int a)
{
	int v = 0;
	cu.cuDeviceGetAttribute(&v, a, d);
	return v;
}

static int cu_info(int ordinal, kt_gpu_info *out, kt_err *err)
{
	if (cu_load())
		return kt_fail_internal(err, "%s", cu.why);
	CUdevice d;
	if (cu_check(cu.cuDeviceGet(&d, ordinal), "cuDeviceGet", err))
		return -1;
	memset(out, 0, sizeof *out);
	cu.cuDeviceGetName(out->id.name, (int)sizeof out->id.name, d);
	out->id.cc_major = attr(d, ATTR_CC_MAJOR);
	out->id.cc_minor = attr(d, ATTR_CC_MINOR);
	out->id.sms = attr(d, ATTR_MULTIPROCESSOR_COUNT);
	out->id.l2_bytes = attr(d, ATTR_L2_CACHE_SIZE);
	out->id.smem_optin = attr(d, ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
	out->lim.max_threads_block = attr(d, ATTR_MAX_THREADS_PER_BLOCK);
	for (int i = 0; i < 3; i++) {
		out->lim.max_block[i] = attr(d, ATTR_MAX_BLOCK_DIM_X + i);
		out->lim.max_grid[i] = attr(d, ATTR_MAX_GRID_DIM_X + i);
	}
	out->lim.regs_per_block = attr(d, ATTR_MAX_REGISTERS_PER_BLOCK);
	out->lim.regs_per_sm = attr(d, ATTR_MAX_REGISTERS_PER_SM);
	out->lim.smem_block = attr(d, ATTR_MAX_SHARED_MEMORY_PER_BLOCK);
	size_t mem = 0;
	cu.cuDeviceTotalMem(&mem, d);
	out->lim.mem_bytes = (int64_t)mem;
	int v = 0;
	cu.cuDriverGetVersion(&v);
	snprintf(out->driver, sizeof out->driver, "%d.%d", v / 1000, v % 1000 / 10);
	return 0;
}

static kt_gpu *cu_open(int ordinal, kt_err *err)
{
	if (cu_load()) {
		kt_fail_internal(err, "%s", cu.why);
		return NULL;
	}
	cu_gpu *g = kt_xcalloc(1, sizeof *g);
	g->base.ops = kt_gpu_cuda();
	if (cu_check(cu.cuDeviceGet(&g->dev, ordinal), "cuDeviceGet", err) ||
	    (cu.cuDevicePrimaryCtxSetFlags(g->dev, CTX_SCHED_BLOCKING_SYNC), 0) ||
	    cu_check(cu.cuDevicePrimaryCtxRetain(&g->ctx, g->dev), "cuDevicePrimaryCtxRetain", err) ||
	    cu_check(cu.cuCtxSetCurrent(g->ctx), "cuCtxSetCurrent", err)) {
		free(g);
		return NULL;
	}
	return &g->base;
}

static void cu_close(kt_gpu *base)
{
	cu_gpu *g = (cu_gpu *)base;
	if (!g)
		return;
	if (g->capture)
		cu.cuStreamDestroy(g->capture);
	cu.cuDevicePrimaryCtxRelease(g->dev);
	free(g);
}

static int cu_load_module(kt_gpu *g, const void *image, size_t len, void **mod, kt_err *err)
{
	return cu_check(cu.cuModuleLoadData((CUmodule *)mod, image), "cuModuleLoadData", err);
}

static void cu_unload(kt_gpu *g, void *mod) { cu.cuModuleUnload(mod); }

static int cu_function(kt_gpu *g, void *mod, const char *name, void **fn)
{
	return cu.cuModuleGetFunction((CUfunction *)fn, mod, name) ? -1 : 0;
}

static int cu_functions(kt_gpu *g, void *mod, const char ***names, void ***fns, size_t *n, kt_err *err)
{
	unsigned count = 0;
	if (!cu.cuModuleGetFunctionCount || !cu.cuModuleEnumerateFunctions || !cu.cuFuncGetName)
		return kt_fail_internal(err, "this CUDA driver cannot list a module's functions (needs 12.4 or newer)");
	if (cu_check(cu.cuModuleGetFunctionCount(&count, mod), "cuModuleGetFunctionCount", err))
		return -1;
	*fns = kt_xcalloc(count + 1, sizeof **fns);
	*names = kt_xcalloc(count + 1, sizeof **names);
	if (cu_check(cu.cuModuleEnumerateFunctions((CUfunction *)*fns, count, mod), "cuModuleEnumerateFunctions", err))
		return -1;
	for (unsigned i = 0; i < count; i++)
		if (cu.cuFuncGetName(&(*names)[i], (*fns)[i]))
			(*names)[i] = "?";
	*n = count;
	return 0;
}

static int cu_set_dyn_smem(kt_gpu *g, void *fn, int64_t bytes, kt_err *err)
{
	return cu_check(cu.cuFuncSetAttribute(fn, FUNC_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)bytes),
			"cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)", err);
}

static int cu_alloc(kt_gpu *g, size_t n, kt_dptr *p, kt_err *err)
{
	CUdeviceptr d = 0;
	if (cu_check(cu.cuMemAlloc(&d, n ? n : 1), "cuMemAlloc", err))
		return -1;
	*p = d;
	return 0;
}

static void cu_free(kt_gpu *g, kt_dptr p)
{
	if (p)
		cu.cuMemFree(p);
}

static int cu_htod(kt_gpu *g, kt_dptr dst, const void *src, size_t n, kt_err *err)
{
	return cu_check(cu.cuMemcpyHtoD(dst, src, n), "cuMemcpyHtoD", err);
}

static int cu_dtoh(kt_gpu *g, void *dst, kt_dptr src, size_t n, kt_err *err)
{
	return cu_check(cu.cuMemcpyDtoH(dst, src, n), "cuMemcpyDtoH", err);
}

static int cu_dtod(kt_gpu *g, kt_dptr dst, kt_dptr src, size_t n, kt_err *err)
{
	return cu_check(cu.cuMemcpyDtoD(dst, src, n), "cuMemcpyDtoD", err);
}

static int cu_memset8(kt_gpu *g, kt_dptr dst, unsigned char v, size_t n, kt_err *err)
{
	return cu_check(cu.cuMemsetD8(dst, v, n), "cuMemsetD8", err);
}

static int cu_launch(kt_gpu *base, void *fn, const int64_t grid[3], const int64_t block[3], int64_t smem,
		     void **params, kt_err *err)
{
	cu_gpu *g = (cu_gpu *)base;
	return cu_check(cu.cuLaunchKernel(fn, (unsigned)grid[0], (unsigned)grid[1], (unsigned)grid[2],
					  (unsigned)block[0], (unsigned)block[1], (unsigned)block[2],
					  (unsigned)smem, g->capturing ? g->capture : NULL, params, NULL),
			"cuLaunchKernel", err);
}

static int cu_event_new(kt_gpu *g, void **ev, kt_err *err)
{
	return cu_check(cu.cuEventCreate((CUevent *)ev, 0), "cuEventCreate", err);
}

static void cu_event_free(kt_gpu *g, void *ev) { cu.cuEventDestroy(ev); }

static int cu_record(kt_gpu *g, void *ev, kt_err *err)
{
	return cu_check(cu.cuEventRecord(ev, NULL), "cuEventRecord", err);
}

static int cu_elapsed(kt_gpu *g, void *a, void *b, float *ms, kt_err *err)
{
	return cu_check(cu.cuEventElapsedTime(ms, a, b), "cuEventElapsedTime", err);
}

static int cu_sync(kt_gpu *g, kt_err *err)
{
	return cu_check(cu.cuCtxSynchronize(), "cuCtxSynchronize", err);
}

/* ---- CUDA graphs: captured on a stream of their own, replayed on the legacy stream ---- */

static int cu_capture_begin(kt_gpu *base, kt_err *err)
{
	cu_gpu *g = (cu_gpu *)base;
	if (!cu.cuStreamBeginCapture || !cu.cuGraphInstantiateWithFlags)
		return kt_fail_internal(err, "this CUDA driver cannot capture graphs (needs 11.4 or newer)");
	/* Non-blocking, so that capturing on it asks nothing of the legacy stream. */
	if (!g->capture && cu_check(cu.cuStreamCreate(&g->capture, STREAM_NON_BLOCKING), "cuStreamCreate", err))
		return -1;
	if (cu_check(cu.cuStreamBeginCapture(g->capture, CAPTURE_MODE_RELAXED), "cuStreamBeginCapture", err))
		return -1;
	g->capturing = 1;
	return 0;
}

static int cu_capture_end(kt_gpu *base, void **graph, kt_err *err)
{
	cu_gpu *g = (cu_gpu *)base;
	*graph = NULL;
	g->capturing = 0;
	return cu_check(cu.cuStreamEndCapture(g->capture, (CUgraph *)graph), "cuStreamEndCapture", err);
}

static int cu_graph_instantiate(kt_gpu *g, void *graph, void **exec, kt_err *err)
{
	return cu_check(cu.cuGraphInstantiateWithFlags((CUgraphExec *)exec, graph, 0), "cuGraphInstantiate", err);
}

static int cu_graph_launch(kt_gpu *g, void *exec, kt_err *err)
{
	return cu_check(cu.cuGraphLaunch(exec, NULL), "cuGraphLaunch", err);
}

static void cu_graph_exec_free(kt_gpu *g, void *exec) { cu.cuGraphExecDestroy(exec); }

static void cu_graph_free(kt_gpu *g, void *graph) { cu.cuGraphDestroy(graph); }

static const kt_gpu_ops cuda_ops = {
	.name = "cuda",
	.count = cu_count,
	.info = cu_info,
	.open = cu_open,
	.close = cu_close,
	.load = cu_load_module,
	.unload = cu_unload,
	.function = cu_function,
	.functions = cu_functions,
	.set_dyn_smem = cu_set_dyn_smem,
	.alloc = cu_alloc,
	.free = cu_free,
	.htod = cu_htod,
	.dtoh = cu_dtoh,
	.dtod = cu_dtod,
	.memset8 = cu_memset8,
	.launch = cu_launch,
	.event_new = cu_event_new,
	.event_free = cu_event_free,
	.record = cu_record,
	.elapsed_ms = cu_elapsed,
	.sync = cu_sync,
	.capture_begin = cu_capture_begin,
	.capture_end = cu_capture_end,
	.graph_instantiate = cu_graph_instantiate,
	.graph_launch = cu_graph_launch,
	.graph_exec_free = cu_graph_exec_free,
	.graph_free = cu_graph_free,
};

const kt_gpu_ops *kt_gpu_cuda(void) { return &cuda_ops; }
