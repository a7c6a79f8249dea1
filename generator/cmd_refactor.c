/* cmd_refactor.c - `kt refactor`: stage 1, a plain kernel refactored into a template by an LLM.
 *
 * The seams of kt_agent_refactor are filled here: compiling a configuration spawns nvcc with an
 * argv (no shell) on the variant translation unit in a private work directory; verifying one
 * against the original kernel needs a GPU: without one the output is marked NOT VERIFIED. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent.h"
#include "cmd.h"
#include "cmd_env.h"
#include "emit.h"
#include "opt.h"
#include "proc.h"
#include "provenance.h"
#include "tune.h"

enum { DEFAULT_SAMPLES = 3, NVCC_TIMEOUT_S = 600, MAX_COMPILER_OUTPUT = 8000 };

static const char usage[] = "kt refactor SOURCE.cu --kernel NAME [--shape SPEC]... -o NAME.cu.tmpl [options]";
static const char about[] =
	"Asks an LLM (any OpenAI-compatible chat-completions endpoint) to refactor the kernel NAME of\n"
	"SOURCE.cu into a kt template that keeps the original as its reference.  kt parses each reply,\n"
	"checks that its space is not empty at the shapes and within the GPU's limits, compiles the\n"
	"default and a sample of configurations with nvcc, and sends any error back to the model, for\n"
	"a bounded number of rounds.  Without a GPU the template is written with a first line that\n"
	"marks it NOT VERIFIED.  The transcript goes to OUTPUT.transcript.json; kt generate keeps both\n"
	"in the records it tunes for the template (kt cache show prints them).\n"
	"Environment: KT_LLM_BASE_URL (or OPENAI_BASE_URL), KT_LLM_MODEL, KT_LLM_API_KEY (or\n"
	"OPENAI_API_KEY; optional), KT_LLM_TIMEOUT, KT_LLM_CONNECT_TIMEOUT, KT_LLM_RETRIES,\n"
	"KT_LLM_MAX_WAIT, KT_AGENT (off refuses), KT_AGENT_REPLIES, KT_AGENT_TOKENS, KT_GPU, KT_NVCC,\n"
	"KT_DOC_DIR (where template-language.md is).";

/* ---- finding the language reference ---- */

static char *exe_dir(void)
{
	char buf[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
	if (n <= 0)
		return NULL;
	buf[n] = 0;
	return kt_path_dir(buf);
}

/* docs/template-language.md: --lang-ref, KT_DOC_DIR, the installed share directory next to the
 * executable, then the source tree kt was built from. */
static int read_lang_ref(const char *given, kt_buf *out, char **used, kt_err *err)
{
	static const char name[] = "template-language.md";
	char *cands[4] = {0};
	int n = 0;
	if (given)
		cands[n++] = kt_xstrdup(given);
	else {
		const char *d = kt_env("KT_DOC_DIR");
		if (d)
			cands[n++] = kt_path_join(d, name);
#ifdef KT_INSTALL_DOC_DIR
		char *ed = exe_dir();
		if (ed) {
			kt_buf p = {0};
			if (KT_INSTALL_DOC_DIR[0] == '/')
				kt_buf_printf(&p, "%s/%s", KT_INSTALL_DOC_DIR, name);
			else
				kt_buf_printf(&p, "%s/../%s/%s", ed, KT_INSTALL_DOC_DIR, name);
			cands[n++] = kt_buf_detach(&p);
			free(ed);
		}
#endif
#ifdef KT_SOURCE_DOC_DIR
		cands[n++] = kt_path_join(KT_SOURCE_DOC_DIR, name);
#endif
	}
	int rc = -1;
	for (int i = 0; i < n; i++) {
		if (rc && access(cands[i], R_OK) == 0 && kt_read_file(cands[i], out, err) == 0) {
			*used = cands[i];
			cands[i] = NULL;
			rc = 0;
		}
		free(cands[i]);
	}
	if (rc)
		kt_fail(err, "cannot find %s (give --lang-ref PATH or set KT_DOC_DIR)", given ? given : name);
	return rc;
}

/* ---- compiling a configuration: nvcc with an argv ---- */

typedef struct nvcc_ctx {
	const char *nvcc;
	char arch[32];   /* "-arch=sm_90" */
	char *workdir;
	int n;           /* units compiled so far */
} nvcc_ctx;

/* Replaces every occurrence of from in b by to. */
static void replace_all(kt_buf *b, const char *from, const char *to)
{
	if (!*from || !strstr(kt_buf_str(b), from))
		return;
	kt_buf out = {0};
	const char *p = kt_buf_str(b), *hit;
	while ((hit = strstr(p, from))) {
		kt_buf_add(&out, p, (size_t)(hit - p));
		kt_buf_puts(&out, to);
		p = hit + strlen(from);
	}
	kt_buf_puts(&out, p);
	kt_buf_free(b);
	*b = out;
}

static int run_nvcc(nvcc_ctx *c, const char *cu, const char *cubin, const char *log, kt_err *err)
{
	char *argv[] = {(char *)c->nvcc, "-cubin", c->arch, "-o", (char *)cubin, (char *)cu, NULL};
	kt_proc p;
	if (kt_proc_spawn(&p, argv, 0, log, err))
		return kt_fail_internal(err, "cannot run %s (give --nvcc PATH, set KT_NVCC, or use --no-compile)", c->nvcc);
	int status = 0, w = kt_proc_wait(&p, NVCC_TIMEOUT_S, &status);
	if (w != 1) {
		kt_proc_kill(&p);
		return kt_fail_internal(err, "%s did not finish within %d s", c->nvcc, NVCC_TIMEOUT_S);
	}
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

/* The template goes into the work directory under its own name (the variant includes it); the
 * compiler's messages are given back with that path replaced by the template's. */
/* The template written into the work directory and parsed from there (the variants include it
 * by its path, and workers parse it again).  NULL with err set. */
static kt_tmpl *work_copy(const nvcc_ctx *c, const kt_tmpl *t, char **tpath, kt_err *err)
{
	const char *base = strrchr(t->path, '/') ? strrchr(t->path, '/') + 1 : t->path;
	kt_buf diags = {0};
	*tpath = kt_path_join(c->workdir, base);
	kt_tmpl *tw = kt_write_atomic(*tpath, t->src, t->srclen, err)
			      ? NULL
			      : kt_tmpl_parse_text(*tpath, t->src, t->srclen, NULL, &diags, err);
	kt_buf_free(&diags);
	return tw;
}

static int compile_check(void *ctx, const kt_tmpl *t, const uint16_t *cfg, kt_buf *log, kt_err *err)
{
	nvcc_ctx *c = ctx;
	char *tpath = NULL;
	kt_buf name = {0}, src = {0}, out = {0};
	kt_tmpl *tw = work_copy(c, t, &tpath, err);
	int rc = tw ? 0 : -1;
	if (rc == 0) {
		int id = c->n++;
		char sym[64];
		snprintf(sym, sizeof sym, "kt_refactor_v%d", id);
		kt_emit_variant(tw, cfg, sym, &src);
		kt_buf_printf(&name, "%s/v%d", c->workdir, id);
		char *cu = kt_xstrdup(kt_buf_str(&name)), *cubin = NULL, *lg = NULL;
		kt_buf_puts(&name, ".cubin");
		cubin = kt_xstrdup(kt_buf_str(&name));
		kt_buf_puts(&name, ".log");
		lg = kt_xstrdup(kt_buf_str(&name));
		char *cufile = kt_xmalloc(strlen(cu) + 4);
		sprintf(cufile, "%s.cu", cu);
		rc = kt_write_atomic(cufile, src.data, src.len, err);
		if (rc == 0)
			rc = run_nvcc(c, cufile, cubin, lg, err);
		if (rc == 1) {
			kt_err e = {0};
			kt_read_file(lg, &out, &e);
			replace_all(&out, tpath, t->path);
			if (out.len > MAX_COMPILER_OUTPUT) { /* enough to fix it; the rest costs tokens */
				out.len = MAX_COMPILER_OUTPUT;
				out.data[out.len] = 0;
				kt_buf_puts(&out, "\n[... more compiler output cut]\n");
			}
			kt_buf_puts(log, out.len ? kt_buf_str(&out) : "nvcc failed without a message\n");
		}
		free(cu);
		free(cubin);
		free(lg);
		free(cufile);
	}
	kt_tmpl_free(tw);
	free(tpath);
	kt_buf_free(&name);
	kt_buf_free(&src);
	kt_buf_free(&out);
	return rc;
}

/* ---- verifying on a GPU: the tuner's loop, whose every evaluation is checked against the
 * template's reference (the original kernel) ---- */

static int verify_check(void *ctx, const kt_tmpl *t, const int64_t *shape, int samples, int *nchecked, kt_buf *log,
			kt_err *err)
{
	nvcc_ctx *c = ctx;
	char *tpath = NULL;
	kt_tmpl *tw = work_copy(c, t, &tpath, err);
	free(tpath);
	if (!tw)
		return -1;
	kt_tune_opts o = {
		.strategy = "random", .budget = samples, .seed = 1, .gpu = 0, .near_floor = -1, .retime_top = -1,
		.patience = -1, .tmpdir = kt_env_tmpdir(), /* every sample is checked: no early stop */
	};
	kt_toolchain tc = {c->nvcc, "", "", ""};
	kt_problem p = {.tmpl = tw, .shape = shape, .tc = &tc};
	kt_tune_result r = {0};
	if (kt_tune(&p, &o, &r, err)) {
		kt_tmpl_free(tw);
		return -1;
	}
	kt_buf sh = {0};
	kt_tmpl_format_shape(tw, shape, &sh);
	int bad = r.nevals == 0;
	if (bad)
		kt_buf_printf(log, "at shape %s no configuration could be evaluated\n", kt_buf_str(&sh));
	for (size_t i = 0; i < r.nevals; i++) {
		const kt_eval *e = &r.evals[i];
		if (e->status == KT_OK) {
			(*nchecked)++;
			continue;
		}
		kt_buf cf = {0};
		kt_tmpl_format_config(tw, e->cfg, &cf);
		kt_buf_printf(log, "configuration %s at shape %s: %s: %s\n", kt_buf_str(&cf), kt_buf_str(&sh),
			      kt_status_names[e->status], e->msg ? e->msg : "");
		kt_buf_free(&cf);
		bad = 1;
	}
	kt_buf_free(&sh);
	kt_tune_result_free(&r);
	kt_tmpl_free(tw);
	return bad;
}

/* ---- the command ---- */

typedef struct refactor_args {
	const char *kernel, *output, *gpu, *nvcc, *lang_ref;
	kt_strlist shapes;
	long long rounds, tokens, samples;
	int no_compile, no_gpu;
} refactor_args;

static void on_progress(void *ctx, const char *line)
{
	(void)ctx;
	fprintf(stderr, "kt refactor: %s\n", line);
}

/* The target: the GPU that is here (verification possible), else --gpu / KT_GPU. */
static int pick_target(const refactor_args *a, kt_target *g, int *here, kt_err *err)
{
	char why[256] = "";
	*here = 0;
	if (!a->no_gpu && kt_tune_gpus("cuda", why, sizeof why) > 0) {
		kt_gpu_info info;
		if (kt_tune_gpu_info("cuda", 0, &info, err))
			return -1;
		kt_target_from_info(&info, g);
		*here = 1;
		return 0;
	}
	const char *name = kt_env_or(a->gpu, "KT_GPU");
	if (!name || !*name)
		return kt_fail(err, "no GPU here%s%s%s; name the target with --gpu NAME or KT_GPU (e.g. \"NVIDIA H200\")",
			       why[0] ? " (" : "", why, why[0] ? ")" : "");
	return kt_target_lookup(name, g, err);
}

static void print_usage_line(const kt_llm *llm)
{
	kt_llm_usage u = kt_llm_get_usage(llm);
	fprintf(stderr,
		"kt refactor: tokens: %ld prompt + %ld completion = %ld in %ld request%s (%ld retr%s, %.1f s waited)\n",
		u.prompt_tokens, u.completion_tokens, u.total_tokens, u.requests, u.requests == 1 ? "" : "s", u.retries,
		u.retries == 1 ? "y" : "ies", u.waited_ms / 1000.0);
}

/* Writes the template with its first line saying what was checked. */
static int write_template(const refactor_args *a, const kt_refactor_out *o, const kt_target *g,
			  const kt_llm *llm, kt_err *err)
{
	kt_buf b = {0};
	if (o->verified)
		kt_buf_printf(&b, KT_PROVENANCE_VERIFIED "%s against the original kernel %s (%d checks); "
			      KT_PROVENANCE_BY "%s\n", g->id.name, a->kernel, o->verified, kt_llm_model(llm));
	else
		kt_buf_printf(&b, KT_PROVENANCE_NOT_VERIFIED ": " KT_PROVENANCE_BY "%s with kt refactor; "
			      "%d configuration%s compiled for %s; check it on a GPU against %s before use\n",
			      kt_llm_model(llm), o->compiled, o->compiled == 1 ? "" : "s", g->arch, a->kernel);
	kt_buf_puts(&b, o->tmpl_text);
	int rc = kt_write_atomic(a->output, b.data, b.len, err);
	kt_buf_free(&b);
	return rc;
}

/* What one run of the command holds. */
typedef struct refactor_run {
	const refactor_args *a;
	const char *source_path;
	kt_buf source, lang;
	char *lang_path;
	kt_agent_cfg ac;
	kt_target g;
	int here;        /* a GPU is here: verify on it */
	nvcc_ctx nc;
	kt_buf transcript_path;
} refactor_run;

/* Everything before the first request: the controls, the inputs, the target, the work directory. */
static int prepare(refactor_run *r, kt_err *err)
{
	const refactor_args *a = r->a;
	size_t kb, ke;
	if (kt_env_agent(&r->ac, err))
		return -1;
	if (r->ac.mode == KT_AGENT_OFF)
		return kt_fail(err, "the agent is switched off (KT_AGENT=off); kt refactor needs KT_AGENT=llm or builtin");
	if (kt_read_file(r->source_path, &r->source, err) || read_lang_ref(a->lang_ref, &r->lang, &r->lang_path, err) ||
	    pick_target(a, &r->g, &r->here, err))
		return -1;
	if (kt_agent_find_kernel(kt_buf_str(&r->source), a->kernel, &kb, &ke))
		return kt_fail(err, "%s: no __global__ kernel named '%s'", r->source_path, a->kernel);
	r->nc.nvcc = kt_env_or(a->nvcc, "KT_NVCC");
	if (!r->nc.nvcc || !*r->nc.nvcc)
		r->nc.nvcc = "nvcc";
	snprintf(r->nc.arch, sizeof r->nc.arch, "-arch=%s", r->g.arch);
	r->nc.workdir = kt_temp_dir(kt_env_tmpdir(), "kt-refactor", err);
	if (!r->nc.workdir)
		return -1;
	kt_buf_printf(&r->transcript_path, "%s" KT_PROVENANCE_TRANSCRIPT, a->output);
	return 0;
}

/* Saves the transcript (always) and the template (when one passed); rc is the loop's result. */
static int save(refactor_run *r, const kt_llm *llm, const kt_refactor_out *o, int rc, kt_err *err)
{
	kt_err terr = {0};
	char *odir = kt_path_dir(r->a->output);
	if (kt_mkdirs(odir, &terr) || kt_write_atomic(kt_buf_str(&r->transcript_path), o->transcript.data,
						      o->transcript.len, &terr)) {
		if (rc == 0)
			rc = (*err = terr, -1);
		else
			fprintf(stderr, "kt refactor: cannot save the transcript: %s\n", terr.msg);
	}
	free(odir);
	if (rc == 0)
		rc = write_template(r->a, o, &r->g, llm, err);
	print_usage_line(llm);
	const char *tp = kt_buf_str(&r->transcript_path);
	if (rc == 0 && !o->verified)
		fprintf(stderr, "kt refactor: wrote %s, NOT VERIFIED on a GPU (%s); transcript %s\n", r->a->output,
			r->here ? "no shape was given to verify at" : r->a->no_gpu ? "--no-gpu" : "no GPU here", tp);
	else if (rc == 0)
		fprintf(stderr, "kt refactor: wrote %s, verified on %s; transcript %s\n", r->a->output, r->g.id.name, tp);
	else
		fprintf(stderr, "kt refactor: transcript %s\n", tp);
	return rc;
}

static int run_loop(refactor_run *r, kt_llm *llm, kt_err *err)
{
	const refactor_args *a = r->a;
	kt_refactor_req req = {
		.source_path = r->source_path,
		.source = kt_buf_str(&r->source),
		.kernel = a->kernel,
		.shapes = a->shapes.v,
		.nshapes = a->shapes.n,
		.tmpl_path = a->output,
		.lang_ref = kt_buf_str(&r->lang),
		.gpu = &r->g,
		.rounds = a->rounds > 0 ? (int)a->rounds : r->ac.replies,
		.tokens = a->tokens >= 0 ? (long)a->tokens : r->ac.tokens,
		.samples = (int)a->samples,
		.compile = a->no_compile ? NULL : compile_check,
		.compile_ctx = &r->nc,
		.verify = r->here ? verify_check : NULL,
		.verify_ctx = &r->nc,
		.progress = on_progress,
	};
	kt_refactor_out o;
	fprintf(stderr, "kt refactor: %s of %s for %s with %s at %s (language reference %s)\n", a->kernel,
		r->source_path, r->g.id.name, kt_llm_model(llm), kt_llm_base_url(llm), r->lang_path);
	int rc = save(r, llm, &o, kt_agent_refactor(llm, &req, &o, err), err);
	kt_refactor_out_free(&o);
	return rc;
}

static int refactor(const refactor_args *a, const char *source_path, kt_err *err)
{
	refactor_run r = {.a = a, .source_path = source_path};
	kt_llm_config lc;
	kt_llm *llm = NULL;
	int rc = prepare(&r, err);
	if (rc == 0 && (kt_env_llm(&lc, err) || !(llm = kt_llm_new(&lc, err))))
		rc = -1;
	if (rc == 0)
		rc = run_loop(&r, llm, err);
	kt_llm_free(llm);
	if (r.nc.workdir)
		kt_remove_tree(r.nc.workdir);
	free(r.nc.workdir);
	kt_buf_free(&r.source);
	kt_buf_free(&r.lang);
	kt_buf_free(&r.transcript_path);
	free(r.lang_path);
	return rc;
}

int kt_cmd_refactor(int argc, char **argv)
{
	refactor_args a = {.rounds = 0, .tokens = -1, .samples = DEFAULT_SAMPLES};
	const kt_opt opts[] = {
		{"kernel", KT_OPT_STR, &a.kernel, "NAME", "the __global__ kernel to refactor"},
		{"output", KT_OPT_STR, &a.output, "PATH", "the template to write (also -o)"},
		{"shape", KT_OPT_LIST, &a.shapes, "SPEC", "a shape the template must serve, e.g. rows=4096,hidden=4096"},
		{"rounds", KT_OPT_INT, &a.rounds, "N", "model replies at most (default KT_AGENT_REPLIES or 4)"},
		{"tokens", KT_OPT_INT, &a.tokens, "N", "token budget (default KT_AGENT_TOKENS or 400000; 0: none)"},
		{"samples", KT_OPT_INT, &a.samples, "N", "configurations compiled besides the default (default 3)"},
		{"gpu", KT_OPT_STR, &a.gpu, "NAME", "the target GPU when none is here (default KT_GPU)"},
		{"no-gpu", KT_OPT_FLAG, &a.no_gpu, NULL, "do not use a GPU that is here (the result is not verified)"},
		{"nvcc", KT_OPT_STR, &a.nvcc, "PATH", "the CUDA compiler (default KT_NVCC, else nvcc in PATH)"},
		{"no-compile", KT_OPT_FLAG, &a.no_compile, NULL, "do not compile the configurations"},
		{"lang-ref", KT_OPT_STR, &a.lang_ref, "PATH", "the template-language reference to send"},
		{0},
	};
	/* -o is the one short option: the spelling every compiler user types. */
	char **args = kt_xcalloc((size_t)argc + 1, sizeof *args);
	for (int i = 0; i < argc; i++)
		args[i] = !strcmp(argv[i], "-o") ? "--output" : argv[i];
	const char *pos[1];
	int npos;
	kt_err err = {0};
	int rc = kt_opt_begin("refactor", opts, argc, args, pos, 1, &npos, usage, about);
	if (rc < 0) {
		rc = 0;
		if (npos != 1)
			rc = kt_fail(&err, "no source file given (usage: %s)", usage);
		if (rc == 0 && (!a.kernel || !a.output))
			rc = kt_fail(&err, "%s is required (usage: %s)", !a.kernel ? "--kernel" : "-o", usage);
		if (rc == 0 && (a.samples < 0 || a.samples > 64 || a.rounds < 0 || a.rounds > 50))
			rc = kt_fail(&err, "--samples must be 0 to 64 and --rounds 1 to 50");
		if (rc == 0)
			rc = refactor(&a, pos[0], &err);
		if (rc)
			fprintf(stderr, "kt refactor: error: %s\n", err.msg);
		rc = rc == 0 ? KT_EXIT_OK : err.cls == KT_E_INTERNAL ? KT_EXIT_INTERNAL : KT_EXIT_INPUT;
	}
	free(args);
	kt_strlist_free(&a.shapes);
	return rc;
}
