/* flags.c - the build's nvcc flags by class (see flags.h). */
#include "flags.h"

#include <stdlib.h>
#include <string.h>

/* nvcc's flags that kt treats otherwise than the rest, sorted by name (a test keeps it so).  The
 * long and the short spelling of a flag are both listed. */
static const kt_flag_rule rules[] = {
	{"--Werror", 1, KT_FLAG_BUILD},               /* warnings as errors, of the kinds named */
	{"--compiler-bindir", 1, KT_FLAG_BUILD},      /* the host compiler: host code only */
	{"--compiler-options", 1, KT_FLAG_BUILD},     /* host code only */
	{"--diag-suppress", 1, KT_FLAG_BUILD},        /* warnings */
	{"--disable-warnings", 0, KT_FLAG_BUILD},
	{"--display-error-number", 0, KT_FLAG_BUILD},
	{"--fatbin-options", 1, KT_FLAG_BUILD},       /* packaging of the fat binary */
	{"--generate-code", 1, KT_FLAG_ARCH},
	{"--gpu-architecture", 1, KT_FLAG_ARCH},
	{"--gpu-code", 1, KT_FLAG_ARCH},
	{"--linker-options", 1, KT_FLAG_BUILD},       /* linking, not compiling */
	{"--threads", 1, KT_FLAG_BUILD},              /* nvcc's own parallelism */
	{"-W*", 0, KT_FLAG_BUILD},                    /* -Wno-deprecated-gpu-targets, -Wreorder, ... */
	{"-Werror", 1, KT_FLAG_BUILD},
	{"-Xcompiler", 1, KT_FLAG_BUILD},
	{"-Xcudafe", 1, KT_FLAG_BUILD},               /* front-end diagnostics */
	{"-Xfatbin", 1, KT_FLAG_BUILD},
	{"-Xlinker", 1, KT_FLAG_BUILD},
	{"-arch", 1, KT_FLAG_ARCH},
	{"-ccbin", 1, KT_FLAG_BUILD},
	{"-code", 1, KT_FLAG_ARCH},
	{"-diag-suppress", 1, KT_FLAG_BUILD},
	{"-gencode", 1, KT_FLAG_ARCH},
	{"-t", 1, KT_FLAG_BUILD},
	{"-w", 0, KT_FLAG_BUILD},
};

const kt_flag_rule *kt_flag_rules(size_t *n)
{
	*n = sizeof rules / sizeof rules[0];
	return rules;
}

/* The rule of flag word w ("-gencode", "-gencode=arch=...", "-Wreorder"), or NULL: a rule of the
 * flag's name before a rule of a beginning.  *inline_value: the value is in w, after '='. */
static const kt_flag_rule *rule_of(const char *w, int *inline_value)
{
	size_t wl = strcspn(w, "=");
	*inline_value = w[wl] == '=';
	for (int prefix = 0; prefix < 2; prefix++)
		for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
			size_t nl = strlen(rules[i].name);
			int star = rules[i].name[nl - 1] == '*';
			if (star == prefix && (star ? wl > nl - 1 && !strncmp(w, rules[i].name, nl - 1)
						    : nl == wl && !strncmp(w, rules[i].name, nl)))
				return &rules[i];
		}
	return NULL;
}

static int list_has(const kt_buf *list, const char *item, size_t n)
{
	const char *s = kt_buf_str(list);
	while (*s) {
		size_t l = strcspn(s, ";");
		if (l == n && !strncmp(s, item, n))
			return 1;
		s += l + (s[l] == ';');
	}
	return 0;
}

void kt_flags_add_archs(const char *text, kt_buf *list)
{
	static const char *const prefixes[] = {"sm_", "compute_", "lto_"};
	static const char *const suffixes[] = {"-real", "-virtual"};
	const char *p = text;
	while (*p) {
		size_t n = strcspn(p, " \t;,=[]");
		char tok[32];
		if (n > 0 && n < sizeof tok) {
			memcpy(tok, p, n);
			tok[n] = 0;
			char *a = tok;
			for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
				if (!strncmp(a, prefixes[i], strlen(prefixes[i])))
					a += strlen(prefixes[i]);
			for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
				char *s = strstr(a, suffixes[i]);
				if (s && !s[strlen(suffixes[i])])
					*s = 0;
			}
			int sm, spec;
			if (kt_arch_parse(a, &sm, &spec) == 0 && !list_has(list, a, strlen(a)))
				kt_buf_printf(list, "%s%s", list->len ? ";" : "", a);
		}
		p += n;
		p += *p != 0;
	}
}

static void add_word(kt_buf *b, const char *w)
{
	kt_buf_printf(b, "%s%s", b->len ? " " : "", w);
}

void kt_flags_split(const char *flags, kt_flags *out)
{
	*out = (kt_flags){0};
	char *copy = kt_xstrdup(flags ? flags : "");
	char *save = NULL;
	for (char *w = strtok_r(copy, " \t\n;", &save); w; w = strtok_r(NULL, " \t\n;", &save)) {
		int inline_value = 0;
		const kt_flag_rule *r = rule_of(w, &inline_value);
		kt_flag_class cls = r ? r->cls : KT_FLAG_KEYED;
		kt_buf *to = cls == KT_FLAG_ARCH ? &out->dropped : cls == KT_FLAG_BUILD ? &out->build : &out->keyed;
		add_word(to, w);
		const char *value = inline_value ? strchr(w, '=') + 1 : NULL;
		if (r && r->value && !inline_value) { /* the value is the next word */
			char *v = strtok_r(NULL, " \t\n;", &save);
			if (v)
				add_word(to, v);
			value = v;
		}
		if (cls == KT_FLAG_ARCH && value)
			kt_flags_add_archs(value, &out->archs);
	}
	free(copy);
}

void kt_flags_free(kt_flags *f)
{
	kt_buf_free(&f->keyed);
	kt_buf_free(&f->build);
	kt_buf_free(&f->dropped);
	kt_buf_free(&f->archs);
}
