/* target.c - the target GPU's facts and limits (see target.h). */
#include "target.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Published figures of common data-centre and workstation GPUs (CUDA occupancy tables and the
 * vendors' data sheets).  Only what a limit check, a key or a prompt needs. */
static const struct known_gpu {
	const char *name, *arch;
	int cc_major, cc_minor, sms;
	int64_t l2_bytes, smem_optin;
	double mem_gbs;
	int64_t mem_bytes;
} known_gpus[] = {
	{"NVIDIA A100-SXM4-80GB", "sm_80", 8, 0, 108, 40LL << 20, 163 * 1024, 2039, 80LL << 30},
	{"NVIDIA GeForce RTX 4090", "sm_89", 8, 9, 128, 72LL << 20, 99 * 1024, 1008, 24LL << 30},
	{"NVIDIA H100 80GB HBM3", "sm_90", 9, 0, 132, 50LL << 20, 227 * 1024, 3350, 80LL << 30},
	{"NVIDIA H200", "sm_90", 9, 0, 132, 60LL << 20, 227 * 1024, 4800, 141LL << 30},
	{"NVIDIA L40S", "sm_89", 8, 9, 142, 96LL << 20, 99 * 1024, 864, 48LL << 30},
};

/* Launch limits of every CUDA GPU since compute capability 3.0. */
enum {
	MAX_THREADS_BLOCK = 1024,
	MAX_BLOCK_Z = 64,
	MAX_GRID_X = 2147483647,
	MAX_GRID_YZ = 65535,
	REGS_PER_SM = 65536,
	SMEM_DEFAULT = 48 * 1024, /* per block without opting in */
	REG_ALLOC_UNIT = 256,     /* registers are allocated per warp in units of 256 */
	WARP = 32,
};

int kt_target_name_matches(const char *table, const char *name)
{
	if (!strcasecmp(table, name))
		return 1;
	const char *t = !strncasecmp(table, "NVIDIA ", 7) ? table + 7 : table;
	const char *n = !strncasecmp(name, "NVIDIA ", 7) ? name + 7 : name;
	size_t nl = strlen(n);
	return nl >= 4 && !strncasecmp(t, n, nl) && (t[nl] == 0 || t[nl] == ' ' || t[nl] == '-');
}

static void common_limits(kt_gpu_limits *lim, int64_t mem_bytes)
{
	*lim = (kt_gpu_limits){MAX_THREADS_BLOCK, {MAX_THREADS_BLOCK, MAX_THREADS_BLOCK, MAX_BLOCK_Z},
			       {MAX_GRID_X, MAX_GRID_YZ, MAX_GRID_YZ}, REGS_PER_SM, REGS_PER_SM, SMEM_DEFAULT, mem_bytes};
}

void kt_target_common(kt_target *out)
{
	*out = (kt_target){0};
	snprintf(out->id.name, sizeof out->id.name, "any CUDA GPU");
	out->id.smem_optin = SMEM_DEFAULT;
	common_limits(&out->lim, 0);
}

int kt_target_lookup(const char *name, kt_target *out, kt_err *err)
{
	size_t n = sizeof known_gpus / sizeof known_gpus[0];
	for (size_t i = 0; i < n; i++) {
		const struct known_gpu *g = &known_gpus[i];
		if (!kt_target_name_matches(g->name, name))
			continue;
		*out = (kt_target){0};
		snprintf(out->id.name, sizeof out->id.name, "%s", g->name);
		out->id.cc_major = g->cc_major;
		out->id.cc_minor = g->cc_minor;
		out->id.sms = g->sms;
		out->id.l2_bytes = g->l2_bytes;
		out->id.smem_optin = g->smem_optin;
		common_limits(&out->lim, g->mem_bytes);
		out->mem_gbs = g->mem_gbs;
		snprintf(out->arch, sizeof out->arch, "%s", g->arch);
		return 0;
	}
	kt_buf names = {0};
	for (size_t i = 0; i < n; i++)
		kt_buf_printf(&names, "%s'%s'", i ? ", " : "", known_gpus[i].name);
	kt_fail(err, "unknown GPU '%s'; kt knows %s", name, kt_buf_str(&names));
	kt_buf_free(&names);
	return -1;
}

void kt_target_from_info(const kt_gpu_info *info, kt_target *out)
{
	*out = (kt_target){.id = info->id, .lim = info->lim};
	char cc[8];
	kt_gpu_arch(&info->id, cc, sizeof cc);
	snprintf(out->arch, sizeof out->arch, "sm_%s", cc);
	kt_target t;
	if (kt_target_lookup(info->id.name, &t, NULL) == 0)
		out->mem_gbs = t.mem_gbs;
}

void kt_target_from_id(const kt_gpu_id *id, kt_target *out)
{
	if (kt_target_lookup(id->name, out, NULL) != 0)
		kt_target_common(out);
	out->id = *id;
}

void kt_target_describe(const kt_target *g, kt_buf *out)
{
	kt_buf_printf(out, "- GPU: %s, compute capability %d.%d (%s), %d SMs\n", g->id.name, g->id.cc_major,
		      g->id.cc_minor, g->arch, g->id.sms);
	kt_buf_printf(out, "- L2 cache: %lld KiB; memory: %lld MiB", (long long)(g->id.l2_bytes >> 10),
		      (long long)(g->lim.mem_bytes >> 20));
	if (g->mem_gbs > 0)
		kt_buf_printf(out, " at about %.0f GB/s", g->mem_gbs);
	kt_buf_printf(out, "\n- threads per block: at most %d (x %d, y %d, z %d); warp size 32\n", g->lim.max_threads_block,
		      g->lim.max_block[0], g->lim.max_block[1], g->lim.max_block[2]);
	kt_buf_printf(out, "- shared memory per block: %lld bytes by default, %lld bytes with the opt-in (kt opts in)\n",
		      (long long)g->lim.smem_block, (long long)g->id.smem_optin);
	kt_buf_printf(out, "- registers: %d per block, %d per SM\n", g->lim.regs_per_block, g->lim.regs_per_sm);
}

static int launch_fits(const kt_target *g, const kt_launch *l, char *why, size_t whysz)
{
	static const char dims[] = "xyz";
	int64_t threads = l->block[0] * l->block[1] * l->block[2];
	if (threads > g->lim.max_threads_block)
		return snprintf(why, whysz, "%lld threads per block; the device allows %d", (long long)threads,
				g->lim.max_threads_block), -1;
	if (threads <= 0)
		return snprintf(why, whysz, "an empty block (%lld threads)", (long long)threads), -1;
	for (int d = 0; d < 3; d++) {
		if (l->block[d] < 1 || l->block[d] > g->lim.max_block[d])
			return snprintf(why, whysz, "block.%c = %lld; the device allows 1 to %d", dims[d],
					(long long)l->block[d], g->lim.max_block[d]), -1;
		if (l->grid[d] < 1 || l->grid[d] > g->lim.max_grid[d])
			return snprintf(why, whysz, "grid.%c = %lld; the device allows 1 to %d", dims[d],
					(long long)l->grid[d], g->lim.max_grid[d]), -1;
	}
	if (l->smem < 0 || l->smem > g->id.smem_optin)
		return snprintf(why, whysz, "%lld bytes of dynamic shared memory per block; the device allows %lld",
				(long long)l->smem, (long long)g->id.smem_optin), -1;
	return 0;
}

static int usage_fits(const kt_target *g, const kt_launch *l, const kt_usage *u, char *why, size_t whysz)
{
	int64_t threads = l->block[0] * l->block[1] * l->block[2];
	if (u->regs > 0) {
		int64_t warps = (threads + WARP - 1) / WARP;
		int64_t per_warp = ((int64_t)u->regs * WARP + REG_ALLOC_UNIT - 1) / REG_ALLOC_UNIT * REG_ALLOC_UNIT;
		if (warps * per_warp > g->lim.regs_per_block)
			return snprintf(why, whysz, "%d registers x %lld threads need %lld registers; the device has %d per block",
					u->regs, (long long)threads, (long long)(warps * per_warp), g->lim.regs_per_block), -1;
	}
	int64_t smem = l->smem + (u->smem_static > 0 ? u->smem_static : 0);
	if (smem > g->id.smem_optin)
		return snprintf(why, whysz, "%lld bytes of shared memory (%d static + %lld dynamic); the device allows %lld per block",
				(long long)smem, u->smem_static, (long long)l->smem, (long long)g->id.smem_optin), -1;
	return 0;
}

int kt_target_fits(const kt_target *g, const kt_launch *l, const kt_usage *use, char *why, size_t whysz)
{
	if (launch_fits(g, l, why, whysz))
		return -1;
	return use ? usage_fits(g, l, use, why, whysz) : 0;
}

void kt_target_compile_arch(const kt_gpu_id *id, const char *build_archs, int specific, char *out, size_t outsz)
{
	char plain[16], a[20];
	kt_gpu_arch(id, plain, sizeof plain);
	snprintf(a, sizeof a, "%sa", plain);
	int listed = 0;
	for (const char *s = build_archs ? build_archs : ""; *s && !listed;) {
		size_t n = strcspn(s, ";");
		listed = n == strlen(a) && !strncmp(s, a, n);
		s += n + (s[n] == ';');
	}
	snprintf(out, outsz, "%s", specific && listed ? a : plain);
}
