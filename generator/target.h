/* target.h - the target GPU: what it is, what it can launch, and how fast it can go.
 *
 * Every decision about what a GPU can run is made here: the table of known GPUs (for a target
 * that is not present), the launch and resource limits, and the one check of a launch against
 * them (kt_target_fits), which the tuner applies before compiling (launch) and after (the
 * compiled variant's registers and static shared memory), the built-in planner before it widens
 * a space, and the LLM agent before it accepts a proposal.
 *
 * The ceilings (measured copy bandwidth and arithmetic rates) give the roofline floor; the cache
 * keeps them per GPU identity as small versioned records (cache.h, kt_cache_ceilings_*).
 */
#ifndef KT_TARGET_H
#define KT_TARGET_H

#include <stddef.h>
#include <stdint.h>

#include "gpu.h"
#include "result.h"
#include "tmpl.h"
#include "util.h"

typedef struct kt_target {
	kt_gpu_id id;        /* name, compute capability, SMs, L2, opt-in shared memory per block */
	kt_gpu_limits lim;   /* threads and dimensions per block, grid, registers, memory */
	double mem_gbs;      /* data-sheet memory bandwidth, GB/s; 0 when unknown */
	char arch[16];       /* the device's own compile target, "sm_90" */
} kt_target;

/* What a compiled variant uses, from ptxas (-1: unknown). */
typedef struct kt_usage {
	int regs, smem_static;
} kt_usage;

/* The measured ceilings of a GPU; 0 where not measured. */
typedef struct kt_ceilings {
	double bw_gbs;        /* device-to-device copy, bytes read + written, GB/s */
	double gflops;        /* fp32 FMA rate */
	double tensor_gflops; /* mma.sync fp16 with fp32 accumulation */
} kt_ceilings;

/* A GPU from the table of known devices, by name ("NVIDIA H200", "H200", case-insensitive);
 * -1 with err listing the known names. */
int kt_target_lookup(const char *name, kt_target *out, kt_err *err);
/* 1 when name ("NVIDIA H200", "H200", "h200") names the GPU of the full name table. */
int kt_target_name_matches(const char *table, const char *name);
/* The target kt compiles a GPU's variants for, written to out: its own compute capability ("90"),
 * or its architecture-specific target ("90a") when the template has configurations that need it
 * (specific: kt_tmpl_arch_specific) and the build's architectures ("80;90a") list that target. */
void kt_target_compile_arch(const kt_gpu_id *id, const char *build_archs, int specific, char *out, size_t outsz);
/* From a device that is present (its data-sheet bandwidth from the table when it is there). */
void kt_target_from_info(const kt_gpu_info *info, kt_target *out);
/* A GPU known by its identity alone (from a record): the identity is id, the rest the table's
 * when it knows the name, else kt_target_common's. */
void kt_target_from_id(const kt_gpu_id *id, kt_target *out);
/* The limits every CUDA GPU since compute capability 3.0 has, with 48 KiB of shared memory per
 * block: for planning without a known target. */
void kt_target_common(kt_target *out);
/* The facts as short lines for a prompt. */
void kt_target_describe(const kt_target *g, kt_buf *out);

/* 0 when launch l fits the target, and (when use is not NULL) the compiled variant's registers
 * and static shared memory with it; else -1 with why ("2048 threads per block; the device allows
 * 1024"). */
int kt_target_fits(const kt_target *g, const kt_launch *l, const kt_usage *use, char *why, size_t whysz);

#endif
