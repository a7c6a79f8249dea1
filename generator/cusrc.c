/* cusrc.c - scanning CUDA source for __global__ functions and local includes (see cusrc.h). */
#include "cusrc.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_INCLUDES 256     /* local headers followed */
#define MAX_INCLUDE_DEPTH 32 /* nesting of local headers */

static int is_id0(char c) { return isalpha((unsigned char)c) || c == '_'; }
static int is_id(char c) { return isalnum((unsigned char)c) || c == '_'; }
static int is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

static size_t ident_len(const char *s, size_t i, size_t n)
{
	size_t k = i;
	while (k < n && is_id(s[k]))
		k++;
	return k - i;
}

/* Skips a comment, string or character literal at i; returns the index after it (or i). */
static size_t skip_noise(const char *s, size_t i, size_t n)
{
	if (i + 1 < n && s[i] == '/' && s[i + 1] == '/') {
		while (i < n && s[i] != '\n')
			i++;
	} else if (i + 1 < n && s[i] == '/' && s[i + 1] == '*') {
		for (i += 2; i + 1 < n && !(s[i] == '*' && s[i + 1] == '/'); i++)
			;
		i = i + 2 < n ? i + 2 : n;
	} else if (s[i] == '"' || s[i] == '\'') {
		char q = s[i++];
		while (i < n && s[i] != q && s[i] != '\n')
			i += s[i] == '\\' ? 2 : 1;
		i = i < n ? i + 1 : n;
	}
	return i;
}

/* Skips a parenthesised group starting at the '(' at i; returns the index after its ')'. */
static size_t skip_group(const char *s, size_t i, size_t n)
{
	for (int depth = 0; i < n; i++) {
		depth += s[i] == '(' ? 1 : s[i] == ')' ? -1 : 0;
		if (depth == 0)
			return i + 1;
	}
	return n;
}

/* After `__global__` at i: the function's name is the last name before the first '(' that does
 * not open the arguments of an attribute (a name starting with "__").  0 when there is none. */
static size_t global_name(const char *s, size_t i, size_t n, size_t *at)
{
	size_t last = 0, lastn = 0;
	while (i < n && s[i] != ';' && s[i] != '{') {
		if (is_id0(s[i])) {
			last = i;
			lastn = ident_len(s, i, n);
			i += lastn;
		} else if (s[i] == '(' && lastn >= 2 && s[last] == '_' && s[last + 1] == '_') {
			i = skip_group(s, i, n);
			lastn = 0;
		} else if (s[i] == '(') {
			break;
		} else {
			i++;
		}
	}
	*at = last;
	return lastn;
}

int kt_cusrc_has_global(const char *s, size_t n, const char *name)
{
	size_t want = strlen(name);
	for (size_t i = 0; i < n;) {
		size_t j = skip_noise(s, i, n);
		if (j != i || !is_id0(s[i]) || (i > 0 && is_id(s[i - 1]))) {
			i = j != i ? j : i + 1;
			continue;
		}
		size_t len = ident_len(s, i, n), at;
		i += len;
		if (len != 10 || memcmp(s + i - len, "__global__", 10) != 0)
			continue;
		size_t nl = global_name(s, i, n, &at);
		if (nl == want && !memcmp(s + at, name, want))
			return 1;
	}
	return 0;
}

/* The end of the (logical) line at i: its newline, or n; backslash-newlines continue it. */
static size_t line_end(const char *s, size_t i, size_t n)
{
	while (i < n && !(s[i] == '\n' && (i == 0 || s[i - 1] != '\\')))
		i++;
	return i;
}

/* When a preprocessor line starts at i (only blanks before its '#' since the line began):
 * the index of its '#'; else 0 and *hash unchanged.  bol: the line's start. */
static int at_directive(const char *s, size_t bol, size_t i, size_t n, size_t *hash)
{
	size_t p = bol;
	while (p < n && is_blank(s[p]))
		p++;
	if (p != i || p >= n || s[p] != '#')
		return 0;
	*hash = p;
	return 1;
}

/* The matching ')' or '}' of the bracket at i (skipping comments and literals): the index
 * after it, or 0 when it is unbalanced. */
static size_t skip_balanced(const char *s, size_t i, size_t n)
{
	char open = s[i], close = open == '(' ? ')' : '}';
	for (int depth = 0; i < n;) {
		size_t j = skip_noise(s, i, n);
		if (j != i) {
			i = j;
			continue;
		}
		depth += s[i] == open ? 1 : s[i] == close ? -1 : 0;
		if (depth == 0)
			return i + 1;
		i++;
	}
	return 0;
}

/* After the name of a __global__ function at i: the end of its body when this is its
 * definition (its parameters, then attributes, then '{'), else 0. */
static size_t global_body_end(const char *s, size_t i, size_t n)
{
	while (i < n && (is_blank(s[i]) || s[i] == '\n'))
		i++;
	if (i >= n || s[i] != '(' || !(i = skip_balanced(s, i, n)))
		return 0;
	while (i < n && s[i] != ';' && s[i] != '{') {
		size_t j = skip_noise(s, i, n);
		i = j != i ? j : s[i] == '(' ? skip_balanced(s, i, n) : i + 1; /* __launch_bounds__(...) */
		if (!i)
			return 0;
	}
	return i < n && s[i] == '{' ? skip_balanced(s, i, n) : 0;
}

/* 1 when a directive other than #pragma starts a line within s[from, to). */
static int has_directive(const char *s, size_t from, size_t to)
{
	for (size_t bol = from; bol < to;) {
		size_t p = bol;
		while (p < to && is_blank(s[p]))
			p++;
		if (p < to && s[p] == '#') {
			for (p++; p < to && is_blank(s[p]); p++)
				;
			if (to - p < 6 || memcmp(s + p, "pragma", 6) != 0)
				return 1;
		}
		while (bol < to && s[bol] != '\n')
			bol++;
		bol++;
	}
	return 0;
}

int kt_cusrc_global_def(const char *s, size_t n, const char *name, size_t *from, size_t *to)
{
	size_t want = strlen(name), decl = 0, bol = 0, hash, start = 0, end = 0;
	int mentions = 0;
	for (size_t i = 0; i < n;) {
		if (i == 0 || s[i - 1] == '\n')
			bol = i;
		if (at_directive(s, bol, i, n, &hash)) {
			size_t eol = line_end(s, hash, n);
			mentions += kt_cusrc_mentions(s + hash, eol - hash, &name, 1);
			i = decl = eol < n ? eol + 1 : n;
			continue;
		}
		size_t j = skip_noise(s, i, n);
		if (j != i) {
			i = j;
			continue;
		}
		if (s[i] == ';' || s[i] == '{' || s[i] == '}')
			decl = i + 1;
		if (!is_id0(s[i]) || (i > 0 && is_id(s[i - 1]))) {
			i++;
			continue;
		}
		size_t len = ident_len(s, i, n), at;
		mentions += len == want && !memcmp(s + i, name, want);
		if (!end && len == 10 && !memcmp(s + i, "__global__", 10) &&
		    global_name(s, i + len, n, &at) == want && !memcmp(s + at, name, want) &&
		    (end = global_body_end(s, at + want, n)))
			start = decl;
		i += len;
	}
	if (!end || mentions != 1 || has_directive(s, start, end))
		return -1;
	*from = start;
	*to = end;
	return 0;
}

/* When the line s[0..n) is the directive `# word ...`: the index just after word; else 0. */
static size_t directive(const char *s, size_t n, const char *word)
{
	size_t p = 0, w = strlen(word);
	while (p < n && is_blank(s[p]))
		p++;
	if (p == n || s[p++] != '#')
		return 0;
	while (p < n && is_blank(s[p]))
		p++;
	if (n - p < w || memcmp(s + p, word, w) != 0 || (p + w < n && is_id(s[p + w])))
		return 0;
	for (p += w; p < n && is_blank(s[p]); p++)
		;
	return p;
}

/* The file name of an `#include <name>` (close '>') or `#include "name"` (close '"') line
 * s[0..n), or NULL. */
static const char *include_name_in(const char *s, size_t n, char close, size_t *len)
{
	size_t p = directive(s, n, "include");
	if (!p || p >= n || s[p] != (close == '"' ? '"' : '<'))
		return NULL;
	size_t q = p + 1;
	while (q < n && s[q] != close)
		q++;
	if (q >= n || q == p + 1)
		return NULL;
	*len = q - p - 1;
	return s + p + 1;
}

static const char *include_name(const char *s, size_t n, size_t *len) { return include_name_in(s, n, '"', len); }
const char *kt_cusrc_local_include(const char *s, size_t n, size_t *len) { return include_name(s, n, len); }

typedef struct incl {
	kt_arena *a;
	const char **paths;
	dev_t dev[MAX_INCLUDES]; /* device and inode of each, so each file is followed once */
	ino_t ino[MAX_INCLUDES];
	int n;
} incl;

static void scan(incl *in, const char *text, size_t len, const char *dir, int depth);

/* Records dir/name when it is a file not seen before, and follows its includes. */
static void follow(incl *in, const char *dir, const char *name, size_t namelen, int depth)
{
	char *rel = kt_arena_strndup(in->a, name, namelen);
	char *path = kt_path_join(dir, rel);
	struct stat st;
	int fresh = in->n < MAX_INCLUDES && stat(path, &st) == 0 && S_ISREG(st.st_mode);
	for (int i = 0; fresh && i < in->n; i++)
		fresh = !(in->dev[i] == st.st_dev && in->ino[i] == st.st_ino);
	if (fresh) {
		in->paths[in->n] = kt_arena_strdup(in->a, path);
		in->dev[in->n] = st.st_dev;
		in->ino[in->n++] = st.st_ino;
		kt_buf hdr = {0};
		if (depth < MAX_INCLUDE_DEPTH && kt_read_file(path, &hdr, NULL) == 0) {
			char *hdir = kt_path_dir(path);
			scan(in, hdr.data, hdr.len, hdir, depth + 1);
			free(hdir);
		}
		kt_buf_free(&hdr);
	}
	free(path);
}

static void scan(incl *in, const char *text, size_t len, const char *dir, int depth)
{
	for (size_t bol = 0; bol < len;) {
		size_t eol = bol, n;
		while (eol < len && text[eol] != '\n')
			eol++;
		const char *name = include_name(text + bol, eol - bol, &n);
		if (name)
			follow(in, dir, name, n, depth);
		bol = eol + 1;
	}
}

int kt_cusrc_includes(kt_arena *a, const char *path, const char *text, size_t len, const char ***paths)
{
	incl *in = kt_xcalloc(1, sizeof *in);
	in->a = a;
	in->paths = kt_arena_alloc(a, sizeof(char *) * MAX_INCLUDES);
	char *dir = kt_path_dir(path);
	scan(in, text, len, dir, 0);
	free(dir);
	int n = in->n;
	*paths = in->paths;
	free(in);
	return n;
}

/* Collects, for each line of text, what `pick` finds there (a name of *len bytes, or NULL). */
static int collect(kt_arena *a, const char *text, size_t len, const char ***names,
		   const char *(*pick)(const char *, size_t, size_t *))
{
	int n = 0, cap = 16;
	const char **v = kt_xcalloc((size_t)cap, sizeof *v);
	for (size_t bol = 0; bol < len;) {
		size_t eol = bol, k;
		while (eol < len && text[eol] != '\n')
			eol++;
		const char *name = pick(text + bol, eol - bol, &k);
		if (name) {
			if (n == cap)
				v = kt_xrealloc(v, (size_t)(cap *= 2) * sizeof *v);
			v[n++] = kt_arena_strndup(a, name, k);
		}
		bol = eol + 1;
	}
	*names = kt_arena_alloc(a, (size_t)(n ? n : 1) * sizeof **names);
	memcpy(*names, v, (size_t)n * sizeof *v);
	free(v);
	return n;
}

static const char *define_name(const char *s, size_t n, size_t *len)
{
	size_t p = directive(s, n, "define");
	if (!p || p >= n || !is_id0(s[p]))
		return NULL;
	*len = ident_len(s, p, n);
	return s + p;
}

static const char *system_name(const char *s, size_t n, size_t *len) { return include_name_in(s, n, '>', len); }

int kt_cusrc_defines(kt_arena *a, const char *text, size_t len, const char ***names)
{
	return collect(a, text, len, names, define_name);
}

int kt_cusrc_system_includes(kt_arena *a, const char *text, size_t len, const char ***names)
{
	return collect(a, text, len, names, system_name);
}

int kt_cusrc_mentions(const char *s, size_t n, const char *const *names, int nnames)
{
	for (size_t i = 0; i < n;) {
		size_t j = skip_noise(s, i, n);
		if (j != i || !is_id0(s[i]) || (i > 0 && is_id(s[i - 1]))) {
			i = j != i ? j : i + 1;
			continue;
		}
		size_t len = ident_len(s, i, n);
		for (int k = 0; k < nnames; k++)
			if (strlen(names[k]) == len && !memcmp(s + i, names[k], len))
				return 1;
		i += len;
	}
	return 0;
}

/* 1 when the name s[0..len) is the macro name or one of its choices, name_IS_<choice>, or
 * name_IS_ alone (pasted to a choice: CAT(ALGO_IS_, onepass)). */
static int names_macro(const char *s, size_t len, const char *name, size_t want)
{
	return len >= want && !memcmp(s, name, want) && (len == want || (len >= want + 4 && !memcmp(s + want, "_IS_", 4)));
}

int kt_cusrc_uses_macro(const char *s, size_t n, const char *name)
{
	size_t want = strlen(name);
	int bol = 1, subject = 0; /* at a line's start (blanks aside); the next name is not a use */
	for (size_t i = 0; i < n;) {
		if (s[i] == '\n' || (s[i] == '\\' && i + 1 < n && s[i + 1] == '\n')) {
			if (s[i] == '\n')
				bol = 1, subject = 0;
			i += s[i] == '\n' ? 1 : 2;
			continue;
		}
		size_t j = skip_noise(s, i, n);
		if (j != i || is_blank(s[i])) {
			i = j != i ? j : i + 1;
			continue;
		}
		if (bol && s[i] == '#') { /* a directive: #ifdef, #ifndef, #define and #undef name their subject */
			size_t p = i + 1;
			while (p < n && is_blank(s[p]))
				p++;
			size_t w = ident_len(s, p, n);
			static const char *const words[] = {"ifdef", "ifndef", "define", "undef"};
			for (size_t k = 0; k < sizeof words / sizeof *words; k++)
				subject |= w == strlen(words[k]) && !memcmp(s + p, words[k], w);
			bol = 0;
			i = p + w;
			continue;
		}
		bol = 0;
		if (!is_id(s[i])) {
			subject = subject && s[i] == '('; /* defined(NAME) */
			i++;
			continue;
		}
		size_t len = ident_len(s, i, n);
		if (isdigit((unsigned char)s[i])) { /* a number: 1e5f, 0x10 */
		} else if (subject) {
			subject = 0;
		} else if (len == 7 && !memcmp(s + i, "defined", 7)) {
			subject = 1;
		} else if (names_macro(s + i, len, name, want)) {
			return 1;
		}
		i += len;
	}
	return 0;
}
