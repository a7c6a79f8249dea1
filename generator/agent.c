/* agent.c - control, target facts, reply parsing and stage 1 (refactoring) of the LLM agent
 * (see agent.h).  Stage 2 (proposals) is in agent_plan.c. */
#include "agent.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "agent_int.h"
#include "json.h"
#include "space.h"

enum {
	DEFAULT_REPLIES = 4,
	DEFAULT_TOKENS = 400000,
	MAX_TEMPLATE_BYTES = 256 * 1024, /* a longer reply is not a kernel template */
	MAX_SHAPES = 64,
};

const char *const kt_agent_mode_names[KT_AGENT_NMODES] = {"off", "builtin", "llm"};

/* ---- control ---- */

int kt_agent_mode_parse(const char *s, kt_agent_mode *out, kt_err *err)
{
	for (int i = 0; i < KT_AGENT_NMODES; i++)
		if (!strcmp(s, kt_agent_mode_names[i])) {
			*out = (kt_agent_mode)i;
			return 0;
		}
	return kt_fail(err, "unknown agent mode '%s' (expected off, builtin or llm)", s);
}

void kt_agent_cfg_defaults(kt_agent_cfg *c)
{
	*c = (kt_agent_cfg){KT_AGENT_BUILTIN, DEFAULT_REPLIES, DEFAULT_TOKENS};
}

/* ---- replies ---- */

/* A fence line: ``` followed by an optional tag.  Returns the tag's length (0 for none) and sets
 * *body to the start of the next line; -1 when line is not a fence. */
static int fence_at(const char *line, const char **tag, const char **body)
{
	const char *p = line;
	while (*p == ' ' || *p == '\t')
		p++;
	if (strncmp(p, "```", 3))
		return -1;
	p += 3;
	*tag = p;
	while (*p && *p != '\n' && !isspace((unsigned char)*p))
		p++;
	int n = (int)(p - *tag);
	while (*p && *p != '\n')
		p++;
	*body = *p ? p + 1 : p;
	return n;
}

static int tag_is_cuda(const char *tag, int n)
{
	static const char *const tags[] = {"cuda", "cu", "c++", "cpp", "tmpl", "c"};
	for (size_t i = 0; i < sizeof tags / sizeof tags[0]; i++)
		if ((int)strlen(tags[i]) == n && !strncasecmp(tag, tags[i], (size_t)n))
			return 1;
	return 0;
}

/* Finds the closing fence of a block whose body starts at body; NULL when there is none. */
static const char *fence_end(const char *body)
{
	for (const char *line = body; *line;) {
		const char *tag, *next;
		if (fence_at(line, &tag, &next) == 0)
			return line;
		const char *nl = strchr(line, '\n');
		if (!nl)
			break;
		line = nl + 1;
	}
	return NULL;
}

int kt_agent_extract_template(const char *reply, kt_buf *out, char *why, size_t whysz)
{
	const char *first = NULL, *first_end = NULL;
	for (const char *line = reply; *line;) {
		const char *tag, *body;
		int n = fence_at(line, &tag, &body);
		if (n >= 0) {
			const char *end = fence_end(body);
			if (!end)
				return snprintf(why, whysz, "a ``` block is never closed (was the reply cut off?)"), -1;
			if (n > 0 && tag_is_cuda(tag, n)) {
				kt_buf_add(out, body, (size_t)(end - body));
				return 0;
			}
			if (!first) {
				first = body;
				first_end = end;
			}
			const char *nl = strchr(end, '\n');
			line = nl ? nl + 1 : end + strlen(end);
			continue;
		}
		const char *nl = strchr(line, '\n');
		if (!nl)
			break;
		line = nl + 1;
	}
	if (first) {
		kt_buf_add(out, first, (size_t)(first_end - first));
		return 0;
	}
	if (strstr(reply, "@kt kernel")) {
		kt_buf_puts(out, reply);
		return 0;
	}
	return snprintf(why, whysz, "the reply holds no template (expected one ```cuda block)"), -1;
}

/* Skips a comment or a string literal at p; returns the first byte after it, or p. */
static const char *skip_lexeme(const char *p)
{
	if (p[0] == '/' && p[1] == '/') {
		const char *nl = strchr(p, '\n');
		return nl ? nl : p + strlen(p);
	}
	if (p[0] == '/' && p[1] == '*') {
		const char *e = strstr(p + 2, "*/");
		return e ? e + 2 : p + strlen(p);
	}
	if (*p == '"' || *p == '\'') {
		char q = *p++;
		while (*p && *p != q && *p != '\n')
			p += (*p == '\\' && p[1]) ? 2 : 1;
		return *p == q ? p + 1 : p;
	}
	return p;
}

static int is_word(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* In the declaration [p, end): name as a whole word followed by '('. */
static int declares(const char *p, const char *end, const char *name)
{
	size_t nl = strlen(name);
	for (const char *q = p; q + nl <= end; q++) {
		if (strncmp(q, name, nl) || (q > p && is_word(q[-1])) || is_word(q[nl]))
			continue;
		const char *r = q + nl;
		while (r < end && isspace((unsigned char)*r))
			r++;
		if (r < end && *r == '(')
			return 1;
	}
	return 0;
}

/* The end of the block that opens at brace (one past its '}'), or NULL. */
static const char *block_end(const char *brace)
{
	int depth = 0;
	for (const char *b = brace; *b;) {
		const char *s = skip_lexeme(b);
		if (s != b) {
			b = s;
			continue;
		}
		if (*b == '{')
			depth++;
		else if (*b == '}' && --depth == 0)
			return b + 1;
		b++;
	}
	return NULL;
}

int kt_agent_find_kernel(const char *src, const char *name, size_t *begin, size_t *end)
{
	for (const char *p = src; *p;) {
		const char *q = skip_lexeme(p);
		if (q != p) {
			p = q;
			continue;
		}
		if (strncmp(p, "__global__", 10) || (p > src && is_word(p[-1])) || is_word(p[10])) {
			p++;
			continue;
		}
		/* The declaration runs to the first '{' (a definition) or ';' (a declaration). */
		const char *d = p + 10;
		while (*d && *d != '{' && *d != ';') {
			const char *s = skip_lexeme(d);
			d = s != d ? s : d + 1;
		}
		const char *e = *d == '{' && declares(p, d, name) ? block_end(d) : NULL;
		if (e) {
			*begin = (size_t)(p - src);
			*end = (size_t)(e - src);
			return 0;
		}
		p = *d ? d : p + 10;
	}
	return -1;
}

/* a[0..an) and b[0..bn) are equal up to the amount of white space between tokens. */
int kt_agent_same_text(const char *a, size_t an, const char *b, size_t bn)
{
	size_t i = 0, j = 0;
	for (;;) {
		int sa = 0, sb = 0;
		while (i < an && isspace((unsigned char)a[i]))
			i++, sa = 1;
		while (j < bn && isspace((unsigned char)b[j]))
			j++, sb = 1;
		if (i == an || j == bn)
			return i == an && j == bn;
		if (sa != sb && i > 0 && j > 0)
			return 0;
		if (a[i] != b[j])
			return 0;
		i++, j++;
	}
}

/* ---- includes: a model's template reads no file outside the toolkit's headers ---- */

int kt_agent_check_includes(const char *text, const char *path, kt_buf *why)
{
	int line = 1;
	for (const char *p = text; *p; line++) {
		const char *q = p + strspn(p, " \t");
		if (*q == '#') {
			q += 1 + strspn(q + 1, " \t");
			if (!strncmp(q, "include", 7) && (q[7] == ' ' || q[7] == '\t' || q[7] == '"' || q[7] == '<')) {
				const char *n = q + 7 + strspn(q + 7, " \t");
				size_t len = strcspn(n + (*n == '"' || *n == '<'), "\">\n");
				const char *name = n + (*n == '"' || *n == '<');
				kt_buf nm = {0};
				kt_buf_add(&nm, name, len);
				if (name[0] == '/' || strstr(kt_buf_str(&nm), "..")) {
					kt_buf_printf(why,
						      "%s:%d:%d: error: #include \"%s\" reads a file outside the template's "
						      "directory and the CUDA headers; a refactored template may not\n",
						      path, line, (int)(n - p) + 1, kt_buf_str(&nm));
					kt_buf_free(&nm);
					return -1;
				}
				kt_buf_free(&nm);
			}
		}
		const char *nl = strchr(p, '\n');
		if (!nl)
			break;
		p = nl + 1;
	}
	return 0;
}

/* ---- stage 1: checking a template ---- */

typedef struct sample_ctx {
	const kt_target *gpu;
	const kt_tmpl *t;
	const int64_t *shape;
	kt_space fit;       /* the feasible configurations that fit the device */
	char first_why[256];
} sample_ctx;

static int keep_fitting(void *ctx, const uint16_t *cfg)
{
	sample_ctx *s = ctx;
	kt_val env[KT_MAX_SLOTS];
	kt_launch l;
	kt_err e = {0};
	char why[256];
	kt_tmpl_env(s->t, s->shape, cfg, env);
	if (kt_tmpl_launch(s->t, env, &l, &e) || kt_target_fits(s->gpu, &l, NULL, why, sizeof why)) {
		if (!s->first_why[0]) {
			kt_buf c = {0};
			kt_tmpl_format_config(s->t, cfg, &c);
			snprintf(s->first_why, sizeof s->first_why, "%.100s: %.150s", kt_buf_str(&c), e.cls ? e.msg : why);
			kt_buf_free(&c);
		}
		return 0;
	}
	size_t np = (size_t)s->fit.nparams;
	s->fit.cfgs = kt_xrealloc(s->fit.cfgs, (s->fit.count + 1) * np * sizeof *s->fit.cfgs);
	memcpy(s->fit.cfgs + s->fit.count * np, cfg, np * sizeof *cfg);
	s->fit.count++;
	return 0;
}

int kt_agent_fitting_space(const kt_tmpl *t, const int64_t *shape, const kt_target *g, kt_space *out,
			 char *why, size_t whysz, kt_err *err)
{
	sample_ctx s = {.gpu = g, .t = t, .shape = shape, .fit = {.nparams = t->nparams}};
	long long n = kt_space_walk(t, shape, keep_fitting, &s, err);
	*out = s.fit;
	if (n < 0)
		return -1;
	snprintf(why, whysz, "%s", s.first_why);
	return 0;
}

/* The reference must be the original kernel, unchanged; the tuned kernel gets a new name. */
static int check_reference(const kt_refactor_req *req, const kt_tmpl *t, kt_buf *log)
{
	size_t ob, oe, tb, te;
	if (!t->reference || strcmp(t->reference, req->kernel)) {
		kt_buf_printf(log,
			      "%s: error: the template must keep the original kernel '%s' and name it as the reference: "
			      "`// @kt reference %s grid ... block ...`\n",
			      req->tmpl_path, req->kernel, req->kernel);
		return 1;
	}
	if (!strcmp(t->kernel, req->kernel)) {
		kt_buf_printf(log, "%s: error: the tunable kernel needs a name of its own, not '%s' (the reference)\n",
			      req->tmpl_path, req->kernel);
		return 1;
	}
	if (kt_agent_find_kernel(req->source, req->kernel, &ob, &oe) == 0 &&
	    (kt_agent_find_kernel(t->src, req->kernel, &tb, &te) ||
	     !kt_agent_same_text(req->source + ob, oe - ob, t->src + tb, te - tb))) {
		kt_buf_printf(log,
			      "%s: error: the reference kernel '%s' differs from the original in %s; copy it unchanged\n",
			      req->tmpl_path, req->kernel, req->source_path);
		return 1;
	}
	return 0;
}

/* Picks the default and up to `samples` more configurations spread evenly over fit. */
static int pick_samples(const kt_tmpl *t, const kt_space *fit, int samples, uint16_t *cfgs)
{
	int n = 1, np = t->nparams;
	kt_tmpl_default_config(t, cfgs);
	for (int k = 0; k < samples && fit && fit->count; k++) {
		size_t i = samples == 1 ? fit->count / 2 : (size_t)k * (fit->count - 1) / (size_t)(samples - 1);
		const uint16_t *c = kt_space_cfg(fit, i);
		int dup = 0;
		for (int j = 0; j < n && !dup; j++)
			dup = !memcmp(cfgs + j * np, c, (size_t)np * sizeof *c);
		if (!dup)
			memcpy(cfgs + n++ * np, c, (size_t)np * sizeof *c);
	}
	return n;
}

/* Compiles each sampled configuration; 1 at the first failure, with its messages. */
static int compile_samples(const kt_refactor_req *req, const kt_tmpl *t, const uint16_t *cfgs, int n, int *count,
			   kt_buf *log, kt_err *err)
{
	for (int i = 0; i < n; i++) {
		const uint16_t *c = cfgs + (size_t)i * (size_t)t->nparams;
		kt_buf name = {0}, out = {0};
		kt_tmpl_format_config(t, c, &name);
		int rc = req->compile(req->compile_ctx, t, c, &out, err);
		if (rc == 0) {
			(*count)++;
			kt_say(req->progress, req->progress_ctx, "  compiled %s", kt_buf_str(&name));
		} else if (rc > 0) {
			kt_buf_printf(log, "configuration %s does not compile:\n%s", kt_buf_str(&name), kt_buf_str(&out));
			if (out.len && out.data[out.len - 1] != '\n')
				kt_buf_putc(log, '\n');
		}
		kt_buf_free(&name);
		kt_buf_free(&out);
		if (rc)
			return rc;
	}
	return 0;
}

/* Shapes: each parses and leaves a non-empty space within the device's limits.  The first
 * shape's fitting space is kept in fit0 for sampling. */
static int check_shapes(const kt_refactor_req *req, const kt_tmpl *t, int64_t *shapes, kt_space *fit0, kt_buf *log,
			kt_err *err)
{
	for (int s = 0; s < req->nshapes; s++) {
		kt_err e = {0};
		int64_t *sh = shapes + (size_t)s * (size_t)t->nshapes;
		if (kt_tmpl_parse_shape(t, req->shapes[s], sh, &e)) {
			kt_buf_printf(log, "%s: error: shape '%s': %s\n", req->tmpl_path, req->shapes[s], e.msg);
			return 1;
		}
		kt_space fit;
		char why[300] = "";
		if (kt_agent_fitting_space(t, sh, req->gpu, &fit, why, sizeof why, &e)) {
			kt_buf_printf(log, "%s: error: at shape %s: %s\n", req->tmpl_path, req->shapes[s], e.msg);
			kt_space_free(&fit);
			return 1;
		}
		if (!fit.count) {
			kt_buf_printf(log, "%s: error: at shape %s no configuration is feasible within the device's limits%s%s\n",
				      req->tmpl_path, req->shapes[s], why[0] ? "; for example " : "", why);
			kt_space_free(&fit);
			return 1;
		}
		if (s == 0)
			*fit0 = fit;
		else
			kt_space_free(&fit);
	}
	(void)err;
	return 0;
}

int kt_agent_check_template(const kt_refactor_req *req, const char *text, int *ncompiled, int *nverified,
			    kt_buf *log, kt_err *err)
{
	kt_err perr = {0};
	kt_buf diags = {0};
	*ncompiled = *nverified = 0;
	if (kt_agent_check_includes(text, req->tmpl_path, log))
		return 1;
	kt_tmpl_opts to = {.sms = req->gpu ? req->gpu->id.sms : 0};
	kt_tmpl *t = kt_tmpl_parse_text(req->tmpl_path, text, strlen(text), &to, &diags, &perr);
	if (!t) {
		kt_buf_puts(log, diags.len ? kt_buf_str(&diags) : perr.msg);
		if (log->len && log->data[log->len - 1] != '\n')
			kt_buf_putc(log, '\n');
		kt_buf_free(&diags);
		return 1;
	}
	kt_buf_free(&diags);
	int rc = check_reference(req, t, log);
	int64_t *shapes = kt_xcalloc((size_t)(req->nshapes ? req->nshapes : 1) * (size_t)(t->nshapes + 1), sizeof *shapes);
	kt_space fit0 = {.nparams = t->nparams};
	if (rc == 0)
		rc = check_shapes(req, t, shapes, &fit0, log, err);
	uint16_t *cfgs = kt_xcalloc((size_t)(req->samples + 1) * (size_t)(t->nparams + 1), sizeof *cfgs);
	int n = pick_samples(t, req->nshapes ? &fit0 : NULL, req->samples, cfgs);
	if (rc == 0 && req->compile)
		rc = compile_samples(req, t, cfgs, n, ncompiled, log, err);
	for (int s = 0; rc == 0 && req->verify && s < req->nshapes; s++) {
		rc = req->verify(req->verify_ctx, t, shapes + (size_t)s * (size_t)t->nshapes, req->samples + 1, nverified,
				 log, err);
		if (rc == 0)
			kt_say(req->progress, req->progress_ctx, "  verified against %s at %s", req->kernel, req->shapes[s]);
	}
	free(cfgs);
	free(shapes);
	kt_space_free(&fit0);
	kt_tmpl_free(t);
	return rc;
}

/* ---- stage 1: the loop ---- */

void kt_convo_add(kt_convo *c, const char *role, const char *content)
{
	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 8;
		c->v = kt_xrealloc(c->v, (size_t)c->cap * sizeof *c->v);
	}
	c->v[c->n++] = (kt_llm_msg){role, kt_xstrdup(content)};
}

void kt_convo_free(kt_convo *c)
{
	for (int i = 0; i < c->n; i++)
		free((char *)c->v[i].content);
	free(c->v);
}

static const char refactor_system[] =
	"You are the refactoring agent of kt, a tool that auto-tunes CUDA kernels inside a CMake build. You turn a "
	"plain CUDA kernel into a kt template: CUDA source whose `// @kt` comment lines declare its tunable "
	"parameters, their constraints, its arguments and its launch, in the template language defined by the "
	"reference below.\n\n"
	"Rules:\n"
	"1. Keep the original kernel `%s` in the file unchanged, character for character, and declare it as the "
	"reference with its original launch: `// @kt reference %s grid ... block ...`. kt checks every variant "
	"against it.\n"
	"2. Write the tunable kernel under a new name with exactly the same parameters (order and types) as the "
	"original, and name it in `// @kt kernel`.\n"
	"3. Expose the choices that decide performance as `// @kt param` (threads per block, vector width, items "
	"per thread, unrolling, algorithm variants), and add `// @kt require` constraints so that every allowed "
	"configuration is correct at the shapes. Respect the device's limits given below.\n"
	"4. The template must compile on its own with its default configuration.\n"
	"5. Reply with the complete template in one ```cuda fenced block; use no other fenced block.\n\n"
	"# The template language\n\n%s";

static void first_prompt(const kt_refactor_req *req, kt_convo *c)
{
	kt_buf sys = {0}, user = {0};
	kt_buf_printf(&sys, refactor_system, req->kernel, req->kernel, req->lang_ref ? req->lang_ref : "");
	kt_buf_printf(&user, "Refactor the kernel `%s` of `%s` into a kt template.\n\n", req->kernel, req->source_path);
	if (req->nshapes) {
		kt_buf_puts(&user, "Shapes the template must serve (runtime shape symbols and their values):\n");
		for (int i = 0; i < req->nshapes; i++)
			kt_buf_printf(&user, "- %s\n", req->shapes[i]);
		kt_buf_putc(&user, '\n');
	}
	kt_buf_puts(&user, "Target GPU:\n");
	kt_target_describe(req->gpu, &user);
	kt_buf_printf(&user, "\nThe source of `%s`:\n```cuda\n%s%s```\n", req->source_path, req->source,
		      req->source[0] && req->source[strlen(req->source) - 1] == '\n' ? "" : "\n");
	kt_convo_add(c, "system", kt_buf_str(&sys));
	kt_convo_add(c, "user", kt_buf_str(&user));
	kt_buf_free(&sys);
	kt_buf_free(&user);
}

static void fix_prompt(kt_convo *c, const char *problem)
{
	kt_buf b = {0};
	kt_buf_printf(&b,
		      "kt rejected the template:\n\n%s\nFix it and reply with the complete corrected template in one "
		      "```cuda fenced block.",
		      problem);
	kt_convo_add(c, "user", kt_buf_str(&b));
	kt_buf_free(&b);
}

cJSON *kt_transcript_round(int round, const char *outcome, const char *detail, const kt_llm_reply *r)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "round", round);
	cJSON_AddStringToObject(o, "outcome", outcome);
	if (detail && *detail)
		cJSON_AddStringToObject(o, "detail", detail);
	if (r) {
		cJSON_AddStringToObject(o, "finish_reason", r->finish_reason);
		cJSON_AddNumberToObject(o, "prompt_tokens", (double)r->prompt_tokens);
		cJSON_AddNumberToObject(o, "completion_tokens", (double)r->completion_tokens);
	}
	return o;
}

static void usage_json(cJSON *root, kt_llm_usage u)
{
	cJSON *o = cJSON_AddObjectToObject(root, "usage");
	cJSON_AddNumberToObject(o, "requests", (double)u.requests);
	cJSON_AddNumberToObject(o, "retries", (double)u.retries);
	cJSON_AddNumberToObject(o, "prompt_tokens", (double)u.prompt_tokens);
	cJSON_AddNumberToObject(o, "completion_tokens", (double)u.completion_tokens);
	cJSON_AddNumberToObject(o, "total_tokens", (double)u.total_tokens);
	cJSON_AddNumberToObject(o, "waited_ms", (double)u.waited_ms);
}

/* Finishes a transcript: the messages and usage, as redacted text in out. */
void kt_transcript_finish(kt_llm *llm, cJSON *root, const kt_convo *c, const char *result, const char *error,
			      kt_buf *out)
{
	cJSON *msgs = cJSON_AddArrayToObject(root, "messages");
	for (int i = 0; i < c->n; i++) {
		cJSON *m = cJSON_CreateObject();
		cJSON_AddStringToObject(m, "role", c->v[i].role);
		cJSON_AddStringToObject(m, "content", c->v[i].content);
		cJSON_AddItemToArray(msgs, m);
	}
	usage_json(root, kt_llm_get_usage(llm));
	cJSON_AddStringToObject(root, "result", result);
	if (error)
		cJSON_AddStringToObject(root, "error", error);
	kt_buf_put_json(out, root);
	kt_buf_putc(out, '\n');
	kt_llm_redact(llm, out);
}

cJSON *kt_transcript_start(kt_llm *llm, const char *task)
{
	cJSON *root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "format", KT_TRANSCRIPT_FORMAT);
	cJSON_AddStringToObject(root, "kt", KT_VERSION);
	cJSON_AddStringToObject(root, "task", task);
	cJSON_AddStringToObject(root, "endpoint", kt_llm_base_url(llm));
	cJSON_AddStringToObject(root, "model", kt_llm_model(llm));
	return root;
}

/* Tokens this task has used so far. */
static long task_tokens(kt_llm *llm, long start) { return kt_llm_get_usage(llm).total_tokens - start; }

/* One round: ask, extract, check.  0 accepted, 1 rejected (problem says why), -1 stop (err). */
static int refactor_round(kt_llm *llm, const kt_refactor_req *req, kt_refactor_out *out, kt_convo *c, cJSON *rounds,
			  kt_buf *problem, kt_err *err)
{
	int round = out->rounds + 1;
	kt_llm_reply r;
	kt_err cerr = {0};
	out->rounds++;
	kt_say(req->progress, req->progress_ctx, "round %d: asking %s", round, kt_llm_model(llm));
	if (kt_llm_chat(llm, c->v, c->n, &r, &cerr)) {
		cJSON_AddItemToArray(rounds, kt_transcript_round(round, "llm-error", cerr.msg, NULL));
		kt_say(req->progress, req->progress_ctx, "round %d: %s", round, cerr.msg);
		if (kt_llm_last_failure(llm) != KT_LLM_BAD_ANSWER) {
			*err = cerr;
			return -1;
		}
		kt_buf_puts(problem, cerr.msg);
		return 1; /* a broken answer: the same question once more */
	}
	kt_convo_add(c, "assistant", kt_buf_str(&r.content));
	kt_buf text = {0};
	char why[256];
	int rc;
	if (kt_agent_extract_template(kt_buf_str(&r.content), &text, why, sizeof why)) {
		kt_buf_printf(problem, "%s%s\n", why,
			      !strcmp(r.finish_reason, "length") ? " (the reply was cut off at the token limit)" : "");
		rc = 1;
	} else if (text.len > MAX_TEMPLATE_BYTES) {
		kt_buf_printf(problem, "the template is %zu bytes; kt accepts at most %d\n", text.len, MAX_TEMPLATE_BYTES);
		rc = 1;
	} else {
		int nc, nv;
		rc = kt_agent_check_template(req, kt_buf_str(&text), &nc, &nv, problem, err);
		out->compiled += nc;
		out->verified += nv;
	}
	cJSON_AddItemToArray(rounds, kt_transcript_round(round, rc == 0 ? "accepted" : rc > 0 ? "rejected" : "check-error",
						rc == 0 ? "" : rc > 0 ? kt_buf_str(problem) : err->msg, &r));
	if (rc == 0)
		out->tmpl_text = kt_buf_detach(&text);
	else if (rc > 0)
		fix_prompt(c, kt_buf_str(problem));
	kt_buf_free(&text);
	kt_llm_reply_free(&r);
	return rc;
}

int kt_agent_refactor(kt_llm *llm, const kt_refactor_req *req, kt_refactor_out *out, kt_err *err)
{
	*out = (kt_refactor_out){0};
	kt_convo c = {0};
	cJSON *root = kt_transcript_start(llm, "refactor");
	cJSON_AddStringToObject(root, "kernel", req->kernel);
	cJSON_AddStringToObject(root, "source", req->source_path);
	cJSON_AddStringToObject(root, "gpu", req->gpu->id.name);
	cJSON *shapes = cJSON_AddArrayToObject(root, "shapes");
	for (int i = 0; i < req->nshapes && i < MAX_SHAPES; i++)
		cJSON_AddItemToArray(shapes, cJSON_CreateString(req->shapes[i]));
	cJSON *rounds = cJSON_AddArrayToObject(root, "rounds");
	long start = kt_llm_get_usage(llm).total_tokens;
	first_prompt(req, &c);
	int rc = 1;
	kt_buf problem = {0};
	while (rc > 0) {
		if (out->rounds >= req->rounds) {
			rc = kt_fail(err, "no acceptable template after %d round%s; the last problem:\n%s", out->rounds,
				     out->rounds == 1 ? "" : "s", kt_buf_str(&problem));
			break;
		}
		if (req->tokens > 0 && task_tokens(llm, start) >= req->tokens) {
			rc = kt_fail(err, "the token budget of %ld is spent (%ld used) after %d round%s; the last problem:\n%s",
				     req->tokens, task_tokens(llm, start), out->rounds, out->rounds == 1 ? "" : "s",
				     kt_buf_str(&problem));
			break;
		}
		kt_buf_reset(&problem);
		rc = refactor_round(llm, req, out, &c, rounds, &problem, err);
		if (rc > 0)
			kt_say(req->progress, req->progress_ctx, "round %d: rejected:\n%s", out->rounds, kt_buf_str(&problem));
	}
	if (rc == 0)
		kt_say(req->progress, req->progress_ctx, "round %d: accepted", out->rounds);
	cJSON_AddNumberToObject(root, "compiled", out->compiled);
	cJSON_AddNumberToObject(root, "verified", out->verified);
	kt_transcript_finish(llm, root, &c, rc == 0 ? "accepted" : "failed", rc == 0 ? NULL : err->msg, &out->transcript);
	cJSON_Delete(root);
	kt_convo_free(&c);
	kt_buf_free(&problem);
	return rc;
}

void kt_refactor_out_free(kt_refactor_out *o)
{
	free(o->tmpl_text);
	kt_buf_free(&o->transcript);
	*o = (kt_refactor_out){0};
}
