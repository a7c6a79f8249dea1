/* dispatch.c - the generated launcher and its header (see dispatch.h).
 *
 * Names the generated code introduces start with kt_ (or KT_), so that they cannot collide with
 * the template's argument names.
 */
#include "dispatch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit.h"

/* ---- the template's expressions in C ------------------------------------------------------- */

/* slot_c for the dispatcher: shape symbols read kt_s[i], parameters kt_p[j], sms kt_sms. */
static char **dispatch_slots(const kt_tmpl *t)
{
	char **c = kt_xcalloc(KT_MAX_SLOTS, sizeof *c);
	for (int i = 0; i < KT_MAX_SLOTS; i++)
		c[i] = kt_xstrdup("((int64_t)0)");
	for (int i = 0; i < t->nshapes; i++) {
		kt_buf b = {0};
		kt_buf_printf(&b, "kt_s[%d]", i);
		free(c[i]);
		c[i] = kt_buf_detach(&b);
	}
	for (int j = 0; j < t->nparams; j++) {
		kt_buf b = {0};
		kt_buf_printf(&b, "kt_p[%d]", j);
		free(c[t->params[j].slot]);
		c[t->params[j].slot] = kt_buf_detach(&b);
	}
	free(c[kt_tmpl_sms_slot(t)]);
	c[kt_tmpl_sms_slot(t)] = kt_xstrdup("((int64_t)kt_sms)");
	return c;
}

static void free_slots(char **c)
{
	for (int i = 0; i < KT_MAX_SLOTS; i++)
		free(c[i]);
	free(c);
}

static void put_int_list(const int64_t *v, int n, kt_buf *out)
{
	kt_buf_putc(out, '{');
	for (int i = 0; i < n; i++)
		kt_buf_printf(out, "%s%lldLL", i ? ", " : "", (long long)v[i]);
	if (n == 0)
		kt_buf_putc(out, '0');
	kt_buf_putc(out, '}');
}

static void put_cfg_list(const kt_tmpl *t, const uint16_t *cfg, kt_buf *out)
{
	int64_t v[KT_MAX_SLOTS];
	for (int j = 0; j < t->nparams; j++)
		v[j] = t->params[j].vals[cfg[j]];
	put_int_list(v, t->nparams, out);
}

static void put_feasible_fn(const kt_dispatch *d, char **slots, kt_buf *out)
{
	const kt_tmpl *t = d->t;
	kt_buf_puts(out, "/* The template's constraints: 1 when the configuration kt_p fits the shape kt_s. */\n"
			 "static int kt_feasible(const int64_t *kt_s, const int64_t *kt_p)\n{\n"
			 "\t(void)kt_s;\n\t(void)kt_p;\n");
	for (int r = 0; r < t->nreq; r++) {
		kt_buf_printf(out, "\tif (!(");
		kt_expr_to_c(t->req[r], (const char *const *)slots, out);
		kt_buf_printf(out, ")) /* %s:%d: %s */\n\t\treturn 0;\n", d->tpath, t->req_loc[r].line, t->req_text[r]);
	}
	kt_buf_puts(out, "\treturn 1;\n}\n\n");
}

static void put_dim(const kt_expr *e, char **slots, const char *lhs, kt_buf *out)
{
	kt_buf_printf(out, "\t%s = ", lhs);
	if (e) {
		kt_buf_puts(out, "(unsigned)(");
		kt_expr_to_c(e, (const char *const *)slots, out);
		kt_buf_puts(out, ");\n");
	} else {
		kt_buf_puts(out, "1;\n");
	}
}

static void put_geometry_fn(const kt_dispatch *d, char **slots, kt_buf *out)
{
	static const char *const axis[3] = {"x", "y", "z"};
	const kt_tmpl *t = d->t;
	kt_buf_puts(out, "/* The launch geometry of configuration kt_p at shape kt_s on a GPU of kt_sms multiprocessors. */\n"
			 "static void kt_geometry(const int64_t *kt_s, const int64_t *kt_p, int kt_sms, dim3 *kt_grid, dim3 *kt_block,\n"
			 "\t\t\tsize_t *kt_smem)\n{\n"
			 "\t(void)kt_s;\n\t(void)kt_p;\n\t(void)kt_sms;\n");
	for (int k = 0; k < 3; k++) {
		char lhs[32];
		snprintf(lhs, sizeof lhs, "kt_grid->%s", axis[k]);
		put_dim(t->grid[k], slots, lhs, out);
		snprintf(lhs, sizeof lhs, "kt_block->%s", axis[k]);
		put_dim(t->block[k], slots, lhs, out);
	}
	kt_buf_puts(out, "\t*kt_smem = ");
	if (t->smem) {
		kt_buf_puts(out, "(size_t)(");
		kt_expr_to_c(t->smem, (const char *const *)slots, out);
		kt_buf_puts(out, ");\n");
	} else {
		kt_buf_puts(out, "0;\n");
	}
	kt_buf_puts(out, "}\n\n");
}

/* ---- the tables -------------------------------------------------------------------------- */

static void put_entry(const kt_tmpl *t, const kt_dispatch_entry *e, int with_shape, kt_buf *out)
{
	kt_buf_putc(out, '{');
	if (with_shape)
		put_int_list(e->shape, t->nshapes, out);
	else
		kt_buf_puts(out, "{0}");
	kt_buf_puts(out, ", ");
	put_cfg_list(t, e->cfg, out);
	kt_buf_printf(out, ", %s}", e->symbol);
}

/* The entries of table tb as kt_entries_<id> (none: nothing, the table's pointer is NULL). */
static void put_entries(const kt_dispatch *d, const kt_dispatch_table *tb, const char *id, kt_buf *out)
{
	if (tb->n == 0)
		return;
	if (tb->gpu)
		kt_buf_printf(out, "/* %s, built for sm_%s: the tuned shapes and the variant chosen for each. */\n",
			      tb->gpu->name, tb->arch);
	else
		kt_buf_puts(out, "/* Any GPU: the shapes and the variant chosen for each. */\n");
	kt_buf_printf(out, "static const struct kt_entry kt_entries_%s[] = {\n", id);
	for (int i = 0; i < tb->n; i++) {
		kt_buf_putc(out, '\t');
		put_entry(d->t, &tb->entries[i], 1, out);
		kt_buf_puts(out, ",\n");
	}
	kt_buf_puts(out, "};\n\n");
}

/* A C string literal of s. */
static void put_c_string(const char *s, kt_buf *out)
{
	kt_buf_putc(out, '"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			kt_buf_putc(out, '\\');
		if ((unsigned char)*s < 0x20)
			kt_buf_printf(out, "\\%03o", (unsigned char)*s);
		else
			kt_buf_putc(out, *s);
	}
	kt_buf_putc(out, '"');
}

static void put_table_value(const kt_dispatch *d, const kt_dispatch_table *tb, const char *id, kt_buf *out)
{
	kt_buf_putc(out, '{');
	if (tb->gpu) {
		put_c_string(tb->gpu->name, out);
		kt_buf_printf(out, ", %d, %d, %d, %.1f, ", tb->gpu->cc_major, tb->gpu->cc_minor, tb->gpu->sms, tb->mem_gbs);
	} else {
		kt_buf_puts(out, "NULL, 0, 0, 0, 0.0, ");
	}
	if (tb->n)
		kt_buf_printf(out, "kt_entries_%s, %d, ", id, tb->n);
	else
		kt_buf_puts(out, "NULL, 0, ");
	put_entry(d->t, &tb->fallback, 0, out);
	kt_buf_putc(out, '}');
}

static void put_tables(const kt_dispatch *d, kt_buf *out)
{
	for (int i = 0; i < d->ntables; i++) {
		char id[16];
		snprintf(id, sizeof id, "%d", i);
		put_entries(d, &d->tables[i], id, out);
	}
	put_entries(d, d->generic, "generic", out);
	kt_buf_puts(out, "/* The tables of the GPU models this build was tuned for. */\n");
	if (d->ntables == 0) {
		kt_buf_puts(out, "static const struct kt_table *const kt_tables = NULL;\n");
	} else {
		kt_buf_puts(out, "static const struct kt_table kt_tables[] = {\n");
		for (int i = 0; i < d->ntables; i++) {
			char id[16];
			snprintf(id, sizeof id, "%d", i);
			kt_buf_puts(out, "\t");
			put_table_value(d, &d->tables[i], id, out);
			kt_buf_puts(out, ",\n");
		}
		kt_buf_puts(out, "};\n");
	}
	kt_buf_printf(out, "#define KT_NTABLES %d\n\n", d->ntables);
	kt_buf_puts(out, "/* For a GPU without a table: the template defaults, built for every architecture of the build. */\n"
			 "static const struct kt_table kt_generic = ");
	put_table_value(d, d->generic, "generic", out);
	kt_buf_puts(out, ";\n\n");
}

/* ---- choosing ---------------------------------------------------------------------------- */

/* In a table: an exact shape, else the nearest feasible one, else the fallback. */
static const char pick_entry[] =
	"static double kt_distance(const int64_t *kt_a, const int64_t *kt_b)\n"
	"{\n"
	"\tdouble kt_d = 0;\n"
	"\tfor (int kt_i = 0; kt_i < KT_NSHAPES; kt_i++)\n"
	"\t\tkt_d += fabs(log2((double)(kt_a[kt_i] > 1 ? kt_a[kt_i] : 1)) - log2((double)(kt_b[kt_i] > 1 ? kt_b[kt_i] : 1)));\n"
	"\treturn kt_d;\n"
	"}\n\n"
	"static int kt_same_shape(const int64_t *kt_a, const int64_t *kt_b)\n"
	"{\n"
	"\tfor (int kt_i = 0; kt_i < KT_NSHAPES; kt_i++)\n"
	"\t\tif (kt_a[kt_i] != kt_b[kt_i])\n"
	"\t\t\treturn 0;\n"
	"\treturn 1;\n"
	"}\n\n"
	"static const struct kt_entry *kt_pick(const struct kt_table *kt_t, const int64_t *kt_s)\n"
	"{\n"
	"\tfor (size_t kt_i = 0; kt_i < kt_t->n; kt_i++)\n"
	"\t\tif (kt_same_shape(kt_s, kt_t->entries[kt_i].shape) && kt_feasible(kt_s, kt_t->entries[kt_i].cfg))\n"
	"\t\t\treturn &kt_t->entries[kt_i];\n"
	"\tconst struct kt_entry *kt_best = NULL;\n"
	"\tdouble kt_best_d = 0;\n"
	"\tfor (size_t kt_i = 0; kt_i < kt_t->n; kt_i++) {\n"
	"\t\tdouble kt_d = kt_distance(kt_s, kt_t->entries[kt_i].shape);\n"
	"\t\tif ((!kt_best || kt_d < kt_best_d) && kt_feasible(kt_s, kt_t->entries[kt_i].cfg)) {\n"
	"\t\t\tkt_best = &kt_t->entries[kt_i];\n"
	"\t\t\tkt_best_d = kt_d;\n"
	"\t\t}\n"
	"\t}\n"
	"\tif (kt_best)\n"
	"\t\treturn kt_best;\n"
	"\treturn kt_feasible(kt_s, kt_t->fallback.cfg) ? &kt_t->fallback : NULL;\n"
	"}\n\n";

/* Which table serves a GPU, and once per device which one serves it.  The memory bandwidth of a
 * device is read as the data sheets compute it: two transfers per memory clock over the bus. */
static const char pick_table[] =
	"/* The table for a GPU: its model's; else, of the tables of its compute capability, the one\n"
	" * nearest in memory bandwidth and SM count (log-ratios, summed); else the generic one. */\n"
	"static const struct kt_table *kt_table_for(const char *kt_name, int kt_major, int kt_minor, int kt_sms,\n"
	"\t\t\t\t\t    double kt_gbs, const char **kt_how)\n"
	"{\n"
	"\tconst struct kt_table *kt_best = NULL;\n"
	"\tdouble kt_best_d = 0;\n"
	"\tfor (int kt_i = 0; kt_name && kt_i < KT_NTABLES; kt_i++)\n"
	"\t\tif (!strcmp(kt_tables[kt_i].gpu, kt_name)) {\n"
	"\t\t\t*kt_how = \"its model's table\";\n"
	"\t\t\treturn &kt_tables[kt_i];\n"
	"\t\t}\n"
	"\tfor (int kt_i = 0; kt_i < KT_NTABLES; kt_i++) {\n"
	"\t\tconst struct kt_table *kt_t = &kt_tables[kt_i];\n"
	"\t\tif (kt_t->cc_major != kt_major || kt_t->cc_minor != kt_minor)\n"
	"\t\t\tcontinue;\n"
	"\t\tdouble kt_d = 0;\n"
	"\t\tif (kt_t->mem_gbs > 0 && kt_gbs > 0)\n"
	"\t\t\tkt_d += fabs(log(kt_t->mem_gbs / kt_gbs));\n"
	"\t\tif (kt_t->sms > 0 && kt_sms > 0)\n"
	"\t\t\tkt_d += fabs(log((double)kt_t->sms / kt_sms));\n"
	"\t\tif (!kt_best || kt_d < kt_best_d) {\n"
	"\t\t\tkt_best = kt_t;\n"
	"\t\t\tkt_best_d = kt_d;\n"
	"\t\t}\n"
	"\t}\n"
	"\t*kt_how = kt_best ? \"the nearest table of its compute capability\" : \"no table of its compute capability\";\n"
	"\treturn kt_best ? kt_best : &kt_generic;\n"
	"}\n\n"
	"#define KT_MAX_DEVICES 64\n"
	"static std::atomic<const struct kt_table *> kt_device_tables[KT_MAX_DEVICES];\n"
	"static std::atomic<int> kt_device_sms[KT_MAX_DEVICES]; /* the sms of the launch geometry: at least 1 */\n\n"
	"/* The table of device kt_dev: found at its first use, then remembered. */\n"
	"static const struct kt_table *kt_device_table(int kt_dev)\n"
	"{\n"
	"\tconst struct kt_table *kt_t = NULL;\n"
	"\tif (kt_dev >= 0 && kt_dev < KT_MAX_DEVICES && (kt_t = kt_device_tables[kt_dev].load(std::memory_order_acquire)))\n"
	"\t\treturn kt_t;\n"
	"\tcudaDeviceProp kt_p;\n"
	"\tint kt_clock_khz = 0, kt_bus_bits = 0;\n"
	"\tdouble kt_gbs = 0;\n"
	"\tconst char *kt_how = \"the device could not be queried\";\n"
	"\tkt_t = &kt_generic;\n"
	"\tif (cudaGetDeviceProperties(&kt_p, kt_dev) == cudaSuccess) {\n"
	"\t\tif (cudaDeviceGetAttribute(&kt_clock_khz, cudaDevAttrMemoryClockRate, kt_dev) == cudaSuccess &&\n"
	"\t\t    cudaDeviceGetAttribute(&kt_bus_bits, cudaDevAttrGlobalMemoryBusWidth, kt_dev) == cudaSuccess)\n"
	"\t\t\tkt_gbs = 2.0 * kt_clock_khz * 1e3 * (kt_bus_bits / 8.0) / 1e9;\n"
	"\t\telse\n"
	"\t\t\t(void)cudaGetLastError(); /* the query's error is not the caller's */\n"
	"\t\tkt_t = kt_table_for(kt_p.name, kt_p.major, kt_p.minor, kt_p.multiProcessorCount, kt_gbs, &kt_how);\n"
	"\t} else {\n"
	"\t\t(void)cudaGetLastError();\n"
	"\t\tsnprintf(kt_p.name, sizeof kt_p.name, \"?\");\n"
	"\t\tkt_p.major = kt_p.minor = kt_p.multiProcessorCount = 0;\n"
	"\t}\n"
	"\tconst char *kt_verbose = getenv(\"KT_VERBOSE\");\n"
	"\tif (kt_verbose && *kt_verbose && strcmp(kt_verbose, \"0\"))\n"
	"\t\tfprintf(stderr, \"kt: %s on device %d (%s, compute capability %d.%d, %d SMs, %.0f GB/s): %s, %s\\n\",\n"
	"\t\t\tKT_LAUNCHER, kt_dev, kt_p.name, kt_p.major, kt_p.minor, kt_p.multiProcessorCount, kt_gbs, kt_how,\n"
	"\t\t\tkt_t->gpu ? kt_t->gpu : \"the template defaults\");\n"
	"\tif (kt_dev >= 0 && kt_dev < KT_MAX_DEVICES) {\n"
	"\t\tkt_device_sms[kt_dev].store(kt_p.multiProcessorCount > 0 ? kt_p.multiProcessorCount : 1, std::memory_order_relaxed);\n"
	"\t\tkt_device_tables[kt_dev].store(kt_t, std::memory_order_release);\n"
	"\t}\n"
	"\treturn kt_t;\n"
	"}\n\n"
	"/* The table of the current device, and in *kt_sms its multiprocessor count (1 when unknown). */\n"
	"static const struct kt_table *kt_current_table(int *kt_sms)\n"
	"{\n"
	"\tint kt_dev = 0;\n"
	"\t*kt_sms = 1;\n"
	"\tif (cudaGetDevice(&kt_dev) != cudaSuccess) {\n"
	"\t\t(void)cudaGetLastError();\n"
	"\t\treturn &kt_generic;\n"
	"\t}\n"
	"\tconst struct kt_table *kt_t = kt_device_table(kt_dev);\n"
	"\tif (kt_dev >= 0 && kt_dev < KT_MAX_DEVICES)\n"
	"\t\t*kt_sms = kt_device_sms[kt_dev].load(std::memory_order_relaxed);\n"
	"\treturn kt_t;\n"
	"}\n\n";

static void put_table_fns(const kt_dispatch *d, kt_buf *out)
{
	kt_buf_puts(out, pick_table);
	kt_buf_printf(out,
		      "extern \"C\" const char *kt_%s_table(int kt_device)\n"
		      "{\n"
		      "\treturn kt_device_table(kt_device)->gpu;\n"
		      "}\n\n"
		      "extern \"C\" const char *kt_%s_table_for(const char *kt_gpu, int kt_cc_major, int kt_cc_minor, int kt_sms,\n"
		      "\t\t\t\t\tdouble kt_mem_gbs)\n"
		      "{\n"
		      "\tconst char *kt_how;\n"
		      "\treturn kt_table_for(kt_gpu, kt_cc_major, kt_cc_minor, kt_sms, kt_mem_gbs, &kt_how)->gpu;\n"
		      "}\n\n",
		      d->name, d->name);
}

static const char *stream_name(const kt_tmpl *t)
{
	for (int i = 0; i < t->nargs; i++)
		if (!strcmp(t->args[i].name, "stream"))
			return "kt_stream";
	return "stream";
}

static void put_launcher(const kt_dispatch *d, kt_buf *out)
{
	const kt_tmpl *t = d->t;
	kt_buf args = {0};
	kt_tmpl_arglist(t, 0, &args);
	const char *stream = stream_name(t);
	kt_buf_printf(out, "extern \"C\" cudaError_t kt_%s(%s%scudaStream_t %s)\n{\n", d->name, kt_buf_str(&args),
		      t->nargs ? ", " : "", stream);
	kt_buf_puts(out, "\tconst int64_t kt_s[KT_NSHAPES] = {");
	for (int s = 0; s < t->nshapes; s++)
		kt_buf_printf(out, "%s(int64_t)%s", s ? ", " : "", t->args[d->shape_arg[s]].name);
	if (t->nshapes == 0)
		kt_buf_putc(out, '0');
	kt_buf_printf(out, "};\n"
			   "\tint kt_sms;\n"
			   "\tconst struct kt_table *kt_t = kt_current_table(&kt_sms);\n"
			   "\tconst struct kt_entry *kt_e = kt_pick(kt_t, kt_s);\n"
			   "\tif (!kt_e && kt_t != &kt_generic)\n"
			   "\t\tkt_e = kt_pick(&kt_generic, kt_s);\n"
			   "\tif (!kt_e)\n"
			   "\t\treturn cudaErrorInvalidValue; /* no configuration satisfies the constraints at this shape */\n"
			   "\tdim3 kt_grid, kt_block;\n"
			   "\tsize_t kt_smem;\n"
			   "\tkt_geometry(kt_s, kt_e->cfg, kt_sms, &kt_grid, &kt_block, &kt_smem);\n"
			   "\tif (kt_grid.x == 0 || kt_grid.y == 0 || kt_grid.z == 0)\n"
			   "\t\treturn cudaSuccess; /* an empty problem: nothing to launch */\n"
			   "\treturn kt_e->fn(kt_grid, kt_block, kt_smem, %s%s",
		      stream, t->nargs ? ", " : "");
	kt_emit_arg_names(t, out);
	kt_buf_puts(out, ");\n}\n");
	kt_buf_free(&args);
}

void kt_dispatch_source(const kt_dispatch *d, kt_buf *out)
{
	const kt_tmpl *t = d->t;
	kt_buf args = {0};
	kt_tmpl_arglist(t, 0, &args);
	kt_emit_banner(t, "//", "", out);
	kt_emit_cuda_includes(t, out);
	kt_buf_printf(out, "#include <math.h>\n#include <stddef.h>\n#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n"
			   "#include <string.h>\n\n#include <atomic>\n\n#include \"kt_%s.h\"\n\n", d->name);
	kt_buf_printf(out, "#define KT_NSHAPES %d\n#define KT_NPARAMS %d\n#define KT_LAUNCHER \"kt_%s\"\n\n",
		      t->nshapes ? t->nshapes : 1, t->nparams ? t->nparams : 1, d->name);
	/* Not every helper of the prelude is used: nvcc would warn of each (#177) in the user's build. */
	kt_buf_puts(out, "#pragma nv_diagnostic push\n#pragma nv_diag_suppress 177\n");
	kt_buf_puts(out, kt_expr_c_prelude());
	kt_buf_puts(out, "#pragma nv_diagnostic pop\n\n");
	const char *sep = t->nargs ? ", " : "";
	for (int v = 0; v < d->nsymbols; v++)
		kt_buf_printf(out, "extern \"C\" cudaError_t %s(dim3, dim3, size_t, cudaStream_t%s%s);\n", d->symbols[v], sep,
			      kt_buf_str(&args));
	kt_buf_printf(out, "\ntypedef cudaError_t (*kt_variant_fn)(dim3, dim3, size_t, cudaStream_t%s%s);\n\n", sep,
		      kt_buf_str(&args));
	kt_buf_puts(out, "struct kt_entry {\n\tint64_t shape[KT_NSHAPES];\n\tint64_t cfg[KT_NPARAMS];\n\tkt_variant_fn fn;\n};\n\n"
			 "struct kt_table {\n"
			 "\tconst char *gpu; /* the GPU model; NULL: any GPU */\n"
			 "\tint cc_major, cc_minor, sms;\n"
			 "\tdouble mem_gbs;\n"
			 "\tconst struct kt_entry *entries;\n"
			 "\tsize_t n;\n"
			 "\tstruct kt_entry fallback; /* when no tuned shape fits */\n"
			 "};\n\n");
	put_tables(d, out);
	char **slots = dispatch_slots(t);
	put_feasible_fn(d, slots, out);
	put_geometry_fn(d, slots, out);
	free_slots(slots);
	kt_buf_puts(out, pick_entry);
	put_table_fns(d, out);
	put_launcher(d, out);
	kt_buf_free(&args);
}

void kt_dispatch_header(const kt_dispatch *d, kt_buf *out)
{
	const kt_tmpl *t = d->t;
	kt_buf cxx = {0}, c = {0};
	kt_tmpl_arglist(t, 0, &cxx);
	kt_tmpl_arglist(t, 1, &c);
	const char *sep = t->nargs ? ", " : "";
	const char *stream = stream_name(t);
	const char *name = d->name;
	kt_emit_banner(t, "/*", " */", out);
	kt_buf_printf(out, "#ifndef KT_GENERATED_%s_H\n#define KT_GENERATED_%s_H\n\n", name, name);
	kt_emit_cuda_includes(t, out);
	kt_buf_puts(out, "\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
	kt_buf_printf(out, "/* Launches %s on stream with the configuration chosen for the current device's GPU and the\n"
			   " * runtime shape.  cudaErrorInvalidValue when no configuration fits the shape; cudaSuccess\n"
			   " * without a launch when the grid is empty. */\n", t->kernel);
	if (strcmp(kt_buf_str(&cxx), kt_buf_str(&c)) != 0)
		kt_buf_printf(out, "#ifdef __cplusplus\ncudaError_t kt_%s(%s%scudaStream_t %s);\n#else\n"
				   "cudaError_t kt_%s(%s%scudaStream_t %s);\n#endif\n",
			      name, kt_buf_str(&cxx), sep, stream, name, kt_buf_str(&c), sep, stream);
	else
		kt_buf_printf(out, "cudaError_t kt_%s(%s%scudaStream_t %s);\n", name, kt_buf_str(&c), sep, stream);
	kt_buf_printf(out, "\n/* The GPU model whose tuned table kt_%s uses on CUDA device `device`, or NULL where the\n"
			   " * template defaults serve it (no table of its compute capability).  The first call for a\n"
			   " * device queries it; with KT_VERBOSE=1 in the environment, that query prints the choice. */\n"
			   "const char *kt_%s_table(int device);\n"
			   "/* The same choice for a GPU described by its name, compute capability, SM count and memory\n"
			   " * bandwidth (GB/s; 0 when unknown), without a device. */\n"
			   "const char *kt_%s_table_for(const char *gpu, int cc_major, int cc_minor, int sms, double mem_gbs);\n",
		      name, name, name);
	kt_buf_puts(out, "\n#ifdef __cplusplus\n}\n#endif\n\n#endif\n");
	kt_buf_free(&cxx);
	kt_buf_free(&c);
}
