/* key.c - the canonical field text of a tuning problem and its XXH3-128 key (see key.h). */
#define _POSIX_C_SOURCE 200809L
#include "key.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <xxhash.h>

extern char **environ;

#define NVCC_OUTPUT_MAX 65536 /* `nvcc --version` prints a few hundred bytes */

/* ---- field text ---- */

void kt_key_escape(const char *v, kt_buf *out)
{
	for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
		if (*p == '\\')
			kt_buf_puts(out, "\\\\");
		else if (*p == '\n')
			kt_buf_puts(out, "\\n");
		else if (*p < 0x20 || *p == 0x7f)
			kt_buf_printf(out, "\\x%02x", *p);
		else
			kt_buf_putc(out, (char)*p);
	}
}

static void field(kt_buf *out, const char *name, const char *value)
{
	kt_buf_puts(out, name);
	kt_buf_putc(out, '=');
	kt_key_escape(value ? value : "", out);
	kt_buf_putc(out, '\n');
}

static void fieldf(kt_buf *out, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fieldf(kt_buf *out, const char *name, const char *fmt, ...)
{
	kt_buf v = {0};
	va_list ap;
	va_start(ap, fmt);
	kt_buf_vprintf(&v, fmt, ap);
	va_end(ap);
	field(out, name, kt_buf_str(&v));
	kt_buf_free(&v);
}

static void hash_hex(const void *data, size_t len, char hex[KT_KEY_HEX])
{
	XXH128_canonical_t c;
	XXH128_canonicalFromHash(&c, XXH3_128bits(data, len));
	for (size_t i = 0; i < sizeof c.digest; i++)
		snprintf(hex + 2 * i, 3, "%02x", c.digest[i]);
}

/* An include's name as a field: relative to the template's directory when below it, else its
 * base name, so the key does not depend on where the checkout lives. */
static const char *include_name(const char *tmpl_dir, const char *inc)
{
	size_t n = strlen(tmpl_dir);
	if (strcmp(tmpl_dir, ".") != 0 && !strncmp(inc, tmpl_dir, n) && inc[n] == '/')
		inc += n + 1;
	else if (inc[0] == '/' || !strncmp(inc, "../", 3)) {
		const char *slash = strrchr(inc, '/');
		inc = slash + 1;
	}
	while (!strncmp(inc, "./", 2))
		inc += 2;
	return inc;
}

static int source_fields(const kt_tmpl *t, kt_buf *out, kt_err *err)
{
	char hex[KT_KEY_HEX];
	hash_hex(t->src, t->srclen, hex);
	fieldf(out, "source", "xxh128:%s", hex);
	char *dir = kt_path_dir(t->path);
	kt_buf bytes = {0};
	int rc = 0;
	for (int i = 0; i < t->nincludes && rc == 0; i++) {
		if (kt_read_file(t->includes[i], &bytes, err) != 0) {
			rc = -1;
			break;
		}
		hash_hex(bytes.data, bytes.len, hex);
		char name[32];
		snprintf(name, sizeof name, "include.%d", i);
		fieldf(out, name, "%s xxh128:%s", include_name(dir, t->includes[i]), hex);
	}
	kt_buf_free(&bytes);
	free(dir);
	return rc;
}

static const char *const ptype_names[] = {[KT_PINT] = "int", [KT_PBOOL] = "bool", [KT_PCHOICE] = "choice"};

static void param_value(const kt_param *p, int i, kt_buf *out)
{
	if (p->type == KT_PCHOICE)
		kt_buf_puts(out, p->choices[i]);
	else if (p->type == KT_PBOOL)
		kt_buf_puts(out, p->vals[i] ? "true" : "false");
	else
		kt_buf_printf(out, "%" PRId64, p->vals[i]);
}

static void space_fields(const kt_tmpl *t, kt_buf *out)
{
	kt_buf v = {0}, name = {0};
	for (int i = 0; i < t->nparams; i++) {
		const kt_param *p = &t->params[i];
		kt_buf_reset(&v);
		kt_buf_printf(&v, "%s ", ptype_names[p->type]);
		for (int j = 0; j < p->nvals; j++) {
			if (j)
				kt_buf_putc(&v, ',');
			param_value(p, j, &v);
		}
		kt_buf_puts(&v, " default ");
		param_value(p, p->def, &v);
		kt_buf_reset(&name);
		kt_buf_printf(&name, "param.%s", p->name);
		field(out, name.data, v.data);
	}
	for (int i = 0; i < t->nreq; i++) {
		kt_buf_reset(&v);
		kt_expr_canon(t->req[i], &t->scope, &v);
		kt_buf_reset(&name);
		kt_buf_printf(&name, "require.%d", i);
		field(out, name.data, kt_buf_str(&v));
	}
	for (int i = 0; i < t->ntypes; i++) {
		kt_buf_reset(&name);
		kt_buf_printf(&name, "type.%s", t->types[i].name);
		field(out, name.data, kt_etypes[t->types[i].chosen].name);
	}
	for (int i = 0; i < t->noptions; i++) {
		kt_buf_reset(&name);
		kt_buf_printf(&name, "option.%s", t->options[i].name);
		field(out, name.data, t->options[i].choices[t->options[i].chosen]);
	}
	kt_buf_free(&v);
	kt_buf_free(&name);
}

static void shape_field(const kt_tmpl *t, const int64_t *shape, kt_buf *out)
{
	kt_buf v = {0};
	for (int i = 0; i < t->nshapes; i++)
		kt_buf_printf(&v, "%s%s=%" PRId64, i ? "," : "", t->shapes[i], shape[i]);
	field(out, "shape", kt_buf_str(&v));
	kt_buf_free(&v);
}

static void gpu_fields(const kt_gpu_id *g, kt_buf *out)
{
	field(out, "gpu.name", g->name);
	fieldf(out, "gpu.cc", "%d.%d", g->cc_major, g->cc_minor);
	fieldf(out, "gpu.sms", "%d", g->sms);
	fieldf(out, "gpu.l2_bytes", "%" PRId64, g->l2_bytes);
	fieldf(out, "gpu.smem_optin", "%" PRId64, g->smem_optin);
}

int kt_key_fields(const kt_problem *p, kt_buf *out, kt_err *err)
{
	const kt_toolchain *tc = p->tc;
	fieldf(out, "format", "%d", KT_KEY_FORMAT);
	field(out, "kernel", p->tmpl->kernel);
	if (source_fields(p->tmpl, out, err) != 0)
		return -1;
	space_fields(p->tmpl, out);
	shape_field(p->tmpl, p->shape, out);
	gpu_fields(&p->target->id, out);
	field(out, "compiler", tc->compiler ? tc->compiler : "");
	field(out, "arch", tc->arch ? tc->arch : "");
	field(out, "flags", tc->flags ? tc->flags : "");
	kt_measure_fields(&p->measure, '\n', out); /* none at the defaults: older keys stay (measure.h) */
	return 0;
}

void kt_key_of_fields(const char *text, size_t len, char hex[KT_KEY_HEX]) { hash_hex(text, len, hex); }

int kt_key_make(const kt_problem *p, kt_key *out, kt_err *err)
{
	kt_buf_reset(&out->fields);
	if (kt_key_fields(p, &out->fields, err) != 0)
		return -1;
	kt_key_of_fields(out->fields.data, out->fields.len, out->hex);
	return 0;
}

void kt_key_free(kt_key *k) { kt_buf_free(&k->fields); }

int kt_key_is_hex(const char *s)
{
	size_t n = 0;
	for (; s[n]; n++)
		if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
			return 0;
	return n == KT_KEY_HEX - 1;
}

/* ---- compiler identity ---- */

/* Runs `prog --version` and collects its standard output. */
static int run_version(const char *prog, kt_buf *out, kt_err *err)
{
	int fds[2];
	if (pipe(fds) != 0)
		return kt_fail_internal(err, "pipe: %s", strerror(errno));
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
	posix_spawn_file_actions_addclose(&fa, fds[0]);
	posix_spawn_file_actions_addclose(&fa, fds[1]);
	posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
	char *argv[] = {(char *)prog, (char *)"--version", NULL};
	pid_t pid;
	int rc = posix_spawn(&pid, prog, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(fds[1]);
	if (rc != 0) {
		close(fds[0]);
		return kt_fail(err, "%s: cannot run: %s", prog, strerror(rc));
	}
	char chunk[4096];
	ssize_t n;
	while ((n = read(fds[0], chunk, sizeof chunk)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		if (out->len < NVCC_OUTPUT_MAX)
			kt_buf_add(out, chunk, (size_t)n);
	}
	close(fds[0]);
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return kt_fail(err, "%s --version failed", prog);
	return 0;
}

/* Keeps the lines that identify a build ("Cuda compilation tools, release 13.0, V13.0.88" and
 * "Build cuda_13.0.r13.0/compiler.36424714_0"), joined by "; ".  Other output (a copyright
 * line, a build date) is dropped; when no such line exists the whole output is kept. */
static void compiler_identity(const char *text, kt_buf *out)
{
	static const char *const keep[] = {"Cuda compilation tools", "Build "};
	kt_buf all = {0};
	for (const char *line = text; *line;) {
		size_t n = strcspn(line, "\n");
		while (n && (line[n - 1] == '\r' || line[n - 1] == ' '))
			n--;
		if (n) {
			kt_buf *dst = &all;
			for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++)
				if (!strncmp(line, keep[i], strlen(keep[i])))
					dst = out;
			if (dst->len)
				kt_buf_puts(dst, "; ");
			kt_buf_add(dst, line, n);
		}
		line += strcspn(line, "\n");
		if (*line)
			line++;
	}
	if (!out->len)
		kt_buf_puts(out, kt_buf_str(&all));
	kt_buf_free(&all);
}

int kt_key_compiler(const char *nvcc, const char *memo_dir, int memo_write, kt_buf *out, kt_err *err)
{
	char *prog = kt_find_program(nvcc);
	if (!prog)
		return kt_fail(err, "%s: not found in PATH", nvcc);
	struct stat st;
	if (stat(prog, &st) != 0) {
		kt_fail(err, "%s: %s", prog, strerror(errno));
		free(prog);
		return -1;
	}
	char *memo = NULL;
	if (memo_dir) {
		kt_buf id = {0};
		kt_buf_printf(&id, "%s\n%lld\n%lld.%09ld", prog, (long long)st.st_size, (long long)st.st_mtim.tv_sec,
			      st.st_mtim.tv_nsec);
		char hex[KT_KEY_HEX];
		hash_hex(id.data, id.len, hex);
		kt_buf_reset(&id);
		kt_buf_printf(&id, "compiler/%.16s.txt", hex);
		memo = kt_path_join(memo_dir, id.data);
		kt_buf_free(&id);
		if (kt_read_file(memo, out, NULL) == 0 && out->len > 0) {
			free(memo);
			free(prog);
			return 0;
		}
		kt_buf_reset(out);
	}
	kt_buf text = {0};
	int rc = run_version(prog, &text, err);
	if (rc == 0)
		compiler_identity(kt_buf_str(&text), out);
	if (rc == 0 && memo && memo_write) {
		char *dir = kt_path_dir(memo);
		/* Remembering is an optimisation: a failure to write is not an error. */
		if (kt_mkdirs(dir, NULL) == 0)
			kt_write_atomic(memo, out->data, out->len, NULL);
		free(dir);
	}
	kt_buf_free(&text);
	free(memo);
	free(prog);
	return rc;
}

/* The next field line at *p of a field text that is not the template's own; NULL at the end.
 * *len is its length, newline included. */
static const char *problem_line(const char **p, size_t *len)
{
	static const char *const own[] = {"source=", "include.", "param.", "require."};
	while (**p) {
		const char *line = *p, *nl = strchr(line, '\n');
		*len = nl ? (size_t)(nl - line) + 1 : strlen(line);
		*p = line + *len;
		int skip = 0;
		for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
			skip |= !strncmp(line, own[i], strlen(own[i]));
		if (!skip)
			return line;
	}
	return NULL;
}

void kt_key_problem(const char *fields, char hex[KT_KEY_HEX])
{
	kt_buf own = {0};
	const char *p = fields, *line;
	size_t n = 0;
	while ((line = problem_line(&p, &n)))
		kt_buf_add(&own, line, n);
	hash_hex(kt_buf_str(&own), own.len, hex);
	kt_buf_free(&own);
}

int kt_key_same_problem(const char *a, const char *b)
{
	const char *pa = a, *pb = b, *la, *lb;
	size_t na = 0, nb = 0;
	for (;;) {
		la = problem_line(&pa, &na);
		lb = problem_line(&pb, &nb);
		if (!la || !lb)
			return !la && !lb;
		if (na != nb || memcmp(la, lb, na))
			return 0;
	}
}
