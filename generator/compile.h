/* compile.h - compiling variants in parallel: sources and a build.ninja in a work directory,
 * one `nvcc -cubin` edge per unit, `ninja -k 0`, then each unit's status and resource use.
 *
 * Units depend on their source and on kt_compiler.deps (declared, rather than found by nvcc -MD,
 * which costs every compile a second preprocessing pass).
 *
 * A batch is compiled in two halves so that the caller can measure the previous batch while
 * nvcc runs (and start the next batch while this one's last compiles finish): kt_compile_start
 * writes the files and starts ninja, kt_compile_finish waits for it and reads the results.  In
 * between, kt_compile_poll takes the units whose edge ended (ninja reports each on its output;
 * an edge moves its cubin into place only once it compiled), so they are measured before the
 * batch's slowest compile ends.
 * Units whose text did not change keep their cubin (ninja skips them).
 *
 * Packing: nvcc spends most of a small variant's compile reading the CUDA headers, so units that
 * carry a part (kt_emit_part) may share one translation unit, the compiler's prelude followed by
 * their parts, and one cubin.  A batch is packed only as far as keeps every job busy.  When a
 * pack fails to compile, its units are compiled alone, so that each compile error is its own.
 *
 * NVRTC (kt_compiler.nvrtc): until NVRTC was compared with nvcc for a compiler, the first pack
 * of each batch is compiled by both and the rest by nvcc.  Then NVRTC compiles where it gave
 * nvcc's machine code, and where it gave other code in packs of at most two variants (it stands
 * in for nvcc: kt_unit_stands_in; a larger pack shares nvcc's fixed cost), and nvcc where it could
 * not compile; what NVRTC compiled in a batch that finishes after that is compiled again.
 * So no unit that NVRTC compiled is measured unless NVRTC compiled a unit of the same template
 * and flags beside nvcc.
 */
#ifndef KT_COMPILE_H
#define KT_COMPILE_H

#include <stddef.h>

#include "gpu.h"
#include "nvrtc.h"
#include "proc.h"
#include "tmpl.h"
#include "util.h"

/* How units are compiled.  A batch's compiler also says where and how wide (ninja, jobs,
 * workdir); a unit may name a compiler of its own (kt_unit.cc) for the rest, so one batch holds
 * the variants of several templates and toolchains. */
typedef struct kt_compiler {
	const char *nvcc;        /* the compiler ("nvcc" searched in PATH when NULL) */
	const char *ninja;       /* "ninja" when NULL */
	const char *arch;        /* the target after "sm_": "90", or "90a" for its architecture-specific features */
	const char *const *flags; /* the user's code-generation flags, passed to every edge */
	int nflags;
	int jobs;                /* parallel compiles; <= 0: the number of cores */
	const char *workdir;     /* created if missing */
	const char *const *deps; /* absolute paths every unit depends on (the template, its headers) */
	int ndeps;
	const char *prelude;     /* the start of a shared translation unit (kt_emit_prelude); NULL: no packing */
	int pack;                /* the most units in one translation unit; < 2: no packing */
	kt_nvrtc_use *nvrtc;     /* NULL: nvcc compiles every unit; else units with a part are compiled
				  * as translation units of their own (prelude and parts) by NVRTC once
				  * it was compared with nvcc (nvrtc.h), and by nvcc until then */
} kt_compiler;

/* One translation unit.  name, src and entry are inputs; the rest is filled by kt_compile_finish. */
typedef struct kt_unit {
	const kt_compiler *cc; /* how it is built: nvcc, arch, flags, deps, prelude, pack; NULL: the batch's */
	char name[160];    /* file stem in the work directory */
	kt_buf src;        /* its text (owned): a whole translation unit */
	kt_buf part;       /* the same as a part of a shared one (owned); empty: always alone */
	char entry[192];   /* the kernel whose resources are read ("" for none) */
	int ok;            /* the cubin was produced */
	int packed;        /* in a translation unit shared with other units */
	int unpackable;    /* its pack failed to compile although each of its units compiles alone */
	int by_nvrtc;      /* compiled by NVRTC (else by nvcc) */
	char *cubin;       /* its path (owned); packed units share one */
	char *msg;         /* the compiler's output when it failed (owned) */
	int regs, smem_static, local_bytes, spill_bytes; /* -1 when unknown */
	long dyn_smem;     /* its launch's dynamic shared memory in bytes (given by the caller; 0: none) */
	double seconds;    /* how long its nvcc ran (its pack's, when packed), from ninja's log; 0: unknown */
} kt_unit;

void kt_unit_free(kt_unit *u);
/* 1 when u (of a batch of compiler c) was compiled by NVRTC standing in for nvcc (nvrtc.h): its
 * machine code is not what nvcc makes of the same text, which a choice between variants must be
 * confirmed on.  Where the comparison found the same code on a kernel without shared memory, a
 * kernel with shared memory (static, or u->dyn_smem) stands in too: what NVRTC 13 compiles
 * otherwise is how it addresses shared memory, which that comparison did not see. */
int kt_unit_stands_in(const kt_compiler *c, const kt_unit *u);

/* Parallel compile jobs: c->jobs, else the number of cores. */
int kt_compile_jobs(const kt_compiler *c);
/* Writes the sources and build<slot>.ninja, and starts ninja (in *ninja).  Batches of different
 * slots may compile at the same time (each slot keeps its own ninja log).  0, or -1 with err set. */
int kt_compile_start(const kt_compiler *c, kt_unit *units, size_t n, int slot, kt_proc *ninja, kt_err *err);
/* Waits for ninja and fills each unit's results (the same units and slot as the start).  -1 only
 * when ninja itself could not run; 1 when a pack failed although each of its units compiles
 * alone (those units are marked unpackable: their template cannot share a translation unit, and
 * the caller should stop packing it); else 0. */
int kt_compile_finish(const kt_compiler *c, kt_unit *units, size_t n, int slot, kt_proc *ninja, kt_err *err);
/* While slot's ninja runs (never blocking): takes what it reported and, when an edge ended, fills
 * the results of the units whose cubin is in place (an edge moves it there once its compile
 * succeeded) and marks them in done[]; units that failed, or that nvcc must compile again
 * (nvrtc.h), wait for kt_compile_finish, which reads every unit again.  Returns the units newly
 * marked; ninja->eof is set once ninja closed its output (it is ending: call kt_compile_finish). */
int kt_compile_poll(const kt_compiler *c, kt_unit *units, size_t n, kt_proc *ninja, unsigned char *done);
/* Both halves. */
int kt_compile(const kt_compiler *c, kt_unit *units, size_t n, kt_err *err);

/* Reads `nvcc -Xptxas -v` output for the entry function named entry (exact or mangled):
 * registers, static shared memory, stack frame and spill bytes.  0 when found. */
int kt_ptxas_parse(const char *log, const char *entry, int *regs, int *smem, int *local, int *spill);

/* The worker's helper kernels, as CUDA source: kt_fill_<etype> (test inputs, see kt_fill_value),
 * kt_check_<etype> (compare an output with the reference on the device), kt_fma and kt_mma (the
 * fp32-FMA and tensor-core rate probes). */
void kt_check_source(kt_buf *out);

/* The line of a compiler's log that says what went wrong (the first that says "error" or "fatal",
 * else the first that is not blank), appended to out; "the compiler failed without a message"
 * when there is none. */
void kt_compile_first_error(const char *log, kt_buf *out);

#endif
