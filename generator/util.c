/* util.c - errors, buffers, arenas and files (see util.h). */
#define _POSIX_C_SOURCE 200809L
#include "util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- errors ---- */

__attribute__((format(printf, 3, 0))) static int set_err(kt_err *err, int cls, const char *fmt, va_list ap)
{
	if (err) {
		err->cls = cls;
		vsnprintf(err->msg, sizeof err->msg, fmt, ap);
	}
	return -1;
}

int kt_fail(kt_err *err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	set_err(err, KT_E_INPUT, fmt, ap);
	va_end(ap);
	return -1;
}

int kt_fail_internal(kt_err *err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	set_err(err, KT_E_INTERNAL, fmt, ap);
	va_end(ap);
	return -1;
}

void kt_oom(void)
{
	fputs("kt: out of memory\n", stderr);
	abort();
}

void *kt_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		kt_oom();
	return p;
}

void *kt_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		kt_oom();
	return p;
}

void *kt_xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		kt_oom();
	return p;
}

char *kt_xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	return memcpy(kt_xmalloc(n), s, n);
}

/* ---- buffers ---- */

static void buf_grow(kt_buf *b, size_t extra)
{
	if (b->len + extra + 1 <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < b->len + extra + 1)
		cap *= 2;
	b->data = kt_xrealloc(b->data, cap);
	b->cap = cap;
}

void kt_buf_add(kt_buf *b, const void *p, size_t n)
{
	buf_grow(b, n);
	memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void kt_buf_puts(kt_buf *b, const char *s) { kt_buf_add(b, s, strlen(s)); }

void kt_buf_putc(kt_buf *b, char c) { kt_buf_add(b, &c, 1); }

void kt_buf_vprintf(kt_buf *b, const char *fmt, va_list ap)
{
	va_list ap2;
	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		return;
	buf_grow(b, (size_t)n);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
}

void kt_buf_printf(kt_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	kt_buf_vprintf(b, fmt, ap);
	va_end(ap);
}

void kt_vsay(kt_say_fn say, void *ctx, const char *fmt, va_list ap)
{
	if (!say)
		return;
	kt_buf b = {0};
	kt_buf_vprintf(&b, fmt, ap);
	say(ctx, kt_buf_str(&b));
	kt_buf_free(&b);
}

void kt_say(kt_say_fn say, void *ctx, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	kt_vsay(say, ctx, fmt, ap);
	va_end(ap);
}

void kt_buf_reset(kt_buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

char *kt_buf_detach(kt_buf *b)
{
	char *s = b->data ? b->data : kt_xstrdup("");
	b->data = NULL;
	b->len = b->cap = 0;
	return s;
}

void kt_buf_free(kt_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

const char *kt_buf_str(const kt_buf *b) { return b->data ? b->data : ""; }

size_t kt_utf8_cut(const char *s, size_t n, size_t max)
{
	if (n <= max)
		return n;
	while (max > 0 && ((unsigned char)s[max] & 0xC0) == 0x80)
		max--;
	return max;
}

size_t kt_buf_put_line(kt_buf *b, const char *s, size_t max)
{
	size_t n = strcspn(s, "\r\n"), keep = kt_utf8_cut(s, n, max);
	for (size_t i = 0; i < keep; i++) {
		unsigned char c = (unsigned char)s[i];
		kt_buf_putc(b, (c < 0x20 && c != '\t') || c == 0x7f ? '?' : (char)c);
	}
	if (keep < n)
		kt_buf_puts(b, "...");
	return n + (s[n] == '\r' && s[n + 1] == '\n') + (s[n] != 0);
}

/* ---- arena: a list of blocks, bump allocation ---- */

#define ARENA_BLOCK 16384
#define ARENA_ALIGN 16

struct arena_block {
	struct arena_block *next;
	size_t used, cap;
	_Alignas(ARENA_ALIGN) unsigned char mem[];
};

struct kt_arena {
	struct arena_block *head;
};

kt_arena *kt_arena_new(void) { return kt_xcalloc(1, sizeof(kt_arena)); }

void *kt_arena_alloc(kt_arena *a, size_t n)
{
	n = (n + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
	struct arena_block *b = a->head;
	if (!b || b->used + n > b->cap) {
		size_t cap = n > ARENA_BLOCK ? n : ARENA_BLOCK;
		b = kt_xmalloc(sizeof *b + cap);
		b->used = 0;
		b->cap = cap;
		b->next = a->head;
		a->head = b;
	}
	void *p = b->mem + b->used;
	b->used += n;
	return memset(p, 0, n);
}

char *kt_arena_strndup(kt_arena *a, const char *s, size_t n)
{
	char *p = kt_arena_alloc(a, n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *kt_arena_strdup(kt_arena *a, const char *s) { return kt_arena_strndup(a, s, strlen(s)); }

void kt_arena_free(kt_arena *a)
{
	if (!a)
		return;
	for (struct arena_block *b = a->head, *next; b; b = next) {
		next = b->next;
		free(b);
	}
	free(a);
}

/* ---- files ---- */

int kt_read_file(const char *path, kt_buf *out, kt_err *err)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return kt_fail(err, "%s: cannot open: %s", path, strerror(errno));
	char chunk[65536];
	size_t n;
	kt_buf_reset(out);
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
		kt_buf_add(out, chunk, n);
	int bad = ferror(f);
	fclose(f);
	if (bad)
		return kt_fail_internal(err, "%s: read error", path);
	if (!out->data)
		kt_buf_add(out, "", 0);
	return 0;
}

static int write_all(int fd, const void *data, size_t len)
{
	const char *p = data;
	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

int kt_write_atomic(const char *path, const void *data, size_t len, kt_err *err)
{
	return kt_write_atomic_cb(path, data, len, NULL, NULL, err);
}

int kt_write_atomic_cb(const char *path, const void *data, size_t len, void (*before_rename)(void *ctx),
		       void *ctx, kt_err *err)
{
	kt_buf tmp = {0};
	kt_buf_printf(&tmp, "%s.tmp.%ld.XXXXXX", path, (long)getpid());
	int fd = mkstemp(tmp.data);
	if (fd < 0) {
		kt_fail_internal(err, "%s: cannot create a temporary file: %s", path, strerror(errno));
		kt_buf_free(&tmp);
		return -1;
	}
	int rc = 0;
	if (write_all(fd, data, len) != 0 || fsync(fd) != 0) {
		rc = kt_fail_internal(err, "%s: write failed: %s", path, strerror(errno));
	}
	if (fchmod(fd, 0644) != 0 && rc == 0)
		rc = kt_fail_internal(err, "%s: chmod failed: %s", path, strerror(errno));
	if (close(fd) != 0 && rc == 0)
		rc = kt_fail_internal(err, "%s: close failed: %s", path, strerror(errno));
	if (rc == 0 && before_rename)
		before_rename(ctx);
	if (rc == 0 && rename(tmp.data, path) != 0)
		rc = kt_fail_internal(err, "%s: rename failed: %s", path, strerror(errno));
	if (rc != 0)
		unlink(tmp.data);
	kt_buf_free(&tmp);
	return rc;
}

int kt_write_file(const char *path, const void *data, size_t len, kt_err *err)
{
	FILE *f = fopen(path, "wb");
	int ok = f && fwrite(data, 1, len, f) == len;
	if (f && fclose(f))
		ok = 0;
	return ok ? 0 : kt_fail_internal(err, "cannot write %s: %s", path, strerror(errno));
}

int kt_write_if_changed(const char *path, const void *data, size_t len, int *changed, kt_err *err)
{
	kt_buf old = {0};
	int same = 0;
	if (kt_read_file(path, &old, NULL) == 0)
		same = old.len == len && memcmp(old.data, data, len) == 0;
	kt_buf_free(&old);
	if (changed)
		*changed = !same;
	return same ? 0 : kt_write_atomic(path, data, len, err);
}

int kt_mkdirs(const char *path, kt_err *err)
{
	char *p = kt_xstrdup(path);
	int rc = 0;
	for (char *s = p + 1;; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char c = *s;
		*s = '\0';
		if (mkdir(p, 0777) != 0 && errno != EEXIST) {
			rc = kt_fail_internal(err, "%s: cannot create directory: %s", p, strerror(errno));
			break;
		}
		*s = c;
		if (c == '\0')
			break;
	}
	struct stat st;
	if (rc == 0 && (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)))
		rc = kt_fail_internal(err, "%s: not a directory", path);
	free(p);
	return rc;
}

char *kt_path_join(const char *dir, const char *name)
{
	kt_buf b = {0};
	if (name[0] == '/' || !dir || !dir[0])
		kt_buf_puts(&b, name);
	else
		kt_buf_printf(&b, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", name);
	return kt_buf_detach(&b);
}

char *kt_find_program(const char *name)
{
	if (strchr(name, '/'))
		return kt_xstrdup(name);
	const char *path = getenv("PATH");
	if (!path)
		return NULL;
	char *dirs = kt_xstrdup(path), *save = NULL;
	for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		char *p = kt_path_join(*d ? d : ".", name);
		if (access(p, X_OK) == 0) {
			free(dirs);
			return p;
		}
		free(p);
	}
	free(dirs);
	return NULL;
}

char *kt_path_dir(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return kt_xstrdup(".");
	if (slash == path)
		return kt_xstrdup("/");
	size_t n = (size_t)(slash - path);
	char *d = kt_xmalloc(n + 1);
	memcpy(d, path, n);
	d[n] = '\0';
	return d;
}

/* ---- small helpers ---- */

int kt_parse_i64(const char *s, size_t n, int64_t *out)
{
	if (n == 0 || n > 20)
		return -1;
	char tmp[24];
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	char *end;
	errno = 0;
	long long v = strtoll(tmp, &end, 10);
	if (errno || *end != '\0')
		return -1;
	*out = v;
	return 0;
}

int kt_is_ident(const char *s, size_t n)
{
	if (n == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return 0;
	for (size_t i = 1; i < n; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
			return 0;
	return 1;
}

int kt_arch_parse(const char *arch, int *sm, int *a)
{
	int n = 0, v = 0;
	while (arch[n] >= '0' && arch[n] <= '9' && n < 3)
		v = v * 10 + (arch[n++] - '0');
	if (n < 2 || (arch[n] && ((arch[n] != 'a' && arch[n] != 'f') || arch[n + 1])))
		return -1;
	*sm = v;
	*a = arch[n] == 'a';
	return 0;
}

int kt_arch_check(const char *arch, kt_err *err)
{
	int sm, a;
	if (!arch || kt_arch_parse(arch, &sm, &a) == 0)
		return 0;
	return kt_fail(err, "--arch '%s': not a compute capability (expected digits such as 90, or 90a for the "
		       "architecture-specific target)", arch);
}

/* ---- temporary directories ---- */

char *kt_temp_dir(const char *base, const char *prefix, kt_err *err)
{
	kt_buf b = {0};
	kt_buf_printf(&b, "%s/%s-%ld-XXXXXX", base && *base ? base : "/tmp", prefix, (long)getpid());
	char *dir = kt_buf_detach(&b);
	if (!mkdtemp(dir)) {
		kt_fail_internal(err, "cannot create a work directory %s: %s", dir, strerror(errno));
		free(dir);
		return NULL;
	}
	return dir;
}

void kt_remove_tree(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char *p = kt_path_join(path, e->d_name);
		struct stat st;
		if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
			kt_remove_tree(p);
		else
			unlink(p);
		free(p);
	}
	if (d)
		closedir(d);
	rmdir(path);
}

int kt_sweep_temp_dirs(const char *base, const char *prefix)
{
	const char *dir = base && *base ? base : "/tmp";
	size_t pl = strlen(prefix);
	DIR *d = opendir(dir);
	struct dirent *e;
	int removed = 0;
	while (d && (e = readdir(d))) {
		char *end;
		if (strncmp(e->d_name, prefix, pl) || e->d_name[pl] != '-')
			continue;
		long pid = strtol(e->d_name + pl + 1, &end, 10);
		if (end == e->d_name + pl + 1 || *end != '-' || pid <= 0 || pid == (long)getpid())
			continue;
		if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue; /* its owner is alive (or not ours to ask) */
		char *p = kt_path_join(dir, e->d_name);
		struct stat st;
		if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == getuid()) {
			kt_remove_tree(p);
			removed++;
		}
		free(p);
	}
	if (d)
		closedir(d);
	return removed;
}

int kt_check_dir(const char *what, const char *path, kt_err *err)
{
	struct stat st;
	if (stat(path, &st) != 0)
		return kt_fail(err, "%s '%s': %s", what, path, errno == ENOENT ? "no such directory" : strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return kt_fail(err, "%s '%s': not a directory", what, path);
	return 0;
}
