/* nvrtc.c - tuning units compiled by the toolkit's NVRTC (see nvrtc.h). */
#define _XOPEN_SOURCE 700 /* realpath */
#include "nvrtc.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd.h"
#include "compile.h"
#include "key.h"
#include "proc.h"

/* ---- nvcc's flags as NVRTC options ----------------------------------------------------------- */

enum form {
	EXACT,    /* the word itself */
	ATTACHED, /* the name followed by its value in the same word: -DX, -ftz=true */
	SEPARATE, /* the name, then its value as the next word: -D X, -Xptxas -v */
};

/* nvcc's flags that NVRTC takes, and what NVRTC calls them (NULL: nothing to pass).  A flag not
 * listed has no NVRTC equivalent that kt knows of, and its units go to nvcc. */
static const struct flag {
	const char *name;
	enum form form;
	const char *to;
} flags[] = {
	{"-cubin", EXACT, NULL}, /* NVRTC makes a cubin for a real target */
	{"-arch=sm_", ATTACHED, "-arch=sm_"},
	{"-D", ATTACHED, "-D"},
	{"-D", SEPARATE, "-D"},
	{"-U", ATTACHED, "-U"},
	{"-U", SEPARATE, "-U"},
	{"-I", ATTACHED, "-I"},
	{"-I", SEPARATE, "-I"},
	{"-Xptxas", SEPARATE, "-Xptxas="},
	{"-Xptxas=", ATTACHED, "-Xptxas="},
	{"--ptxas-options", SEPARATE, "-Xptxas="},
	{"--ptxas-options=", ATTACHED, "-Xptxas="},
	{"-use_fast_math", EXACT, "--use_fast_math"},
	{"--use_fast_math", EXACT, "--use_fast_math"},
	{"-ftz=", ATTACHED, "--ftz="},
	{"--ftz=", ATTACHED, "--ftz="},
	{"-prec-div=", ATTACHED, "--prec-div="},
	{"--prec-div=", ATTACHED, "--prec-div="},
	{"-prec-sqrt=", ATTACHED, "--prec-sqrt="},
	{"--prec-sqrt=", ATTACHED, "--prec-sqrt="},
	{"-fmad=", ATTACHED, "--fmad="},
	{"--fmad=", ATTACHED, "--fmad="},
	{"-lineinfo", EXACT, "-lineinfo"},
	{"--generate-line-info", EXACT, "-lineinfo"},
	{"-expt-relaxed-constexpr", EXACT, "--expt-relaxed-constexpr"},
	{"--expt-relaxed-constexpr", EXACT, "--expt-relaxed-constexpr"},
	{"-extended-lambda", EXACT, "--extended-lambda"},
	{"--extended-lambda", EXACT, "--extended-lambda"},
	{"-expt-extended-lambda", EXACT, "--extended-lambda"},
	{"--expt-extended-lambda", EXACT, "--extended-lambda"},
	{"-std=", ATTACHED, "-std="},
	{"--std=", ATTACHED, "-std="},
	{"-maxrregcount=", ATTACHED, "-maxrregcount="},
	{"--maxrregcount=", ATTACHED, "-maxrregcount="},
	{"-maxrregcount", SEPARATE, "-maxrregcount="},
	{"--maxrregcount", SEPARATE, "-maxrregcount="},
	{"-restrict", EXACT, "-restrict"},
	{"--restrict", EXACT, "-restrict"},
	{"-extra-device-vectorization", EXACT, "--extra-device-vectorization"},
	{"--extra-device-vectorization", EXACT, "--extra-device-vectorization"},
	{"-w", EXACT, "-w"},
};

/* The table's entry for args[i] (how many words it takes in *words), or NULL. */
static const struct flag *flag_of(char *const *args, int i, int n, int *words)
{
	const char *w = args[i];
	for (size_t k = 0; k < sizeof flags / sizeof flags[0]; k++) {
		const struct flag *f = &flags[k];
		size_t len = strlen(f->name);
		int hit = f->form == EXACT      ? !strcmp(w, f->name)
			  : f->form == ATTACHED ? !strncmp(w, f->name, len) && w[len]
						: !strcmp(w, f->name) && i + 1 < n;
		if (hit) {
			*words = f->form == SEPARATE ? 2 : 1;
			return f;
		}
	}
	return NULL;
}

/* "-gencode=arch=compute_X,code=sm_X" (one real target of its own virtual one) as "-arch=sm_X". */
static const char *gencode_arch(kt_arena *a, const char *w)
{
	static const char pre[] = "-gencode=arch=compute_";
	if (strncmp(w, pre, sizeof pre - 1))
		return NULL;
	const char *x = w + sizeof pre - 1, *comma = strchr(x, ',');
	if (!comma || strncmp(comma, ",code=sm_", 9) || strlen(comma + 9) != (size_t)(comma - x) ||
	    strncmp(comma + 9, x, (size_t)(comma - x)))
		return NULL;
	char buf[64];
	snprintf(buf, sizeof buf, "-arch=sm_%s", comma + 9);
	return kt_arena_strdup(a, buf);
}

int kt_nvrtc_options(kt_arena *a, char *const *args, int n, const char ***opts, const char **in, const char **out)
{
	const char **v = kt_arena_alloc(a, (size_t)(n + 1) * sizeof *v);
	int nv = 0, cubin = 0, arch = 0;
	*in = *out = NULL;
	for (int i = 0; i < n; i++) {
		int words = 1;
		const struct flag *f;
		const char *g;
		if (!strcmp(args[i], "-o") && i + 1 < n && !*out) {
			*out = args[++i];
		} else if (args[i][0] != '-') {
			if (*in)
				return -1; /* one input, as kt compiles */
			*in = args[i];
		} else if ((g = gencode_arch(a, args[i]))) {
			v[nv++] = g;
			arch++;
		} else if ((f = flag_of(args, i, n, &words))) {
			cubin += !strcmp(f->name, "-cubin");
			arch += !strncmp(f->name, "-arch", 5);
			if (f->to) {
				const char *value = f->form == EXACT ? "" : f->form == ATTACHED ? args[i] + strlen(f->name) : args[i + 1];
				kt_buf b = {0};
				kt_buf_printf(&b, "%s%s", f->to, value);
				v[nv++] = kt_arena_strdup(a, kt_buf_str(&b));
				kt_buf_free(&b);
			}
			i += words - 1;
		} else {
			return -1;
		}
	}
	if (!cubin || arch != 1 || !*in || !*out)
		return -1;
	*opts = v;
	return nv;
}

/* ---- cubins compared --------------------------------------------------------------------------- */

typedef struct section {
	const char *name;
	uint32_t type;
	const unsigned char *data; /* NULL for a section without bytes in the file */
	uint64_t size;
} section;

enum { ELF_HEADER = 64, SHT_NOBITS = 8 };

static uint16_t u16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t u32(const unsigned char *p) { return (uint32_t)u16(p) | (uint32_t)u16(p + 2) << 16; }
static uint64_t u64(const unsigned char *p) { return (uint64_t)u32(p) | (uint64_t)u32(p + 4) << 32; }

/* The sections of a little-endian ELF64 image (*out, owned by the caller), or -1 when it is
 * not one or a header points outside it. */
static int sections_of(const unsigned char *p, size_t n, section **out, int *count, uint32_t *eflags)
{
	if (n < ELF_HEADER || memcmp(p, "\177ELF\2\1", 6))
		return -1;
	uint64_t shoff = u64(p + 0x28);
	uint16_t entsize = u16(p + 0x3a), shnum = u16(p + 0x3c), strndx = u16(p + 0x3e);
	if (entsize < 64 || strndx >= shnum || shoff > n || (uint64_t)shnum * entsize > n - shoff)
		return -1;
	const unsigned char *strhdr = p + shoff + (size_t)strndx * entsize;
	uint64_t stroff = u64(strhdr + 0x18), strsize = u64(strhdr + 0x20);
	if (stroff > n || strsize > n - stroff || !strsize || p[stroff + strsize - 1])
		return -1;
	section *s = kt_xcalloc(shnum + 1u, sizeof *s);
	for (int i = 0; i < shnum; i++) {
		const unsigned char *h = p + shoff + (size_t)i * entsize;
		uint32_t name = u32(h);
		uint64_t off = u64(h + 0x18), size = u64(h + 0x20);
		s[i] = (section){(const char *)p + stroff + (name < strsize ? name : 0), u32(h + 4), NULL, size};
		if (s[i].type != SHT_NOBITS) {
			if (off > n || size > n - off) {
				free(s);
				return -1;
			}
			s[i].data = p + off;
		}
	}
	*out = s;
	*count = shnum;
	*eflags = u32(p + 0x30);
	return 0;
}

int kt_cubin_same_code(const void *a, size_t an, const void *b, size_t bn, char *why, size_t whysz)
{
	static const char *const tool_note = ".note.nv.tkinfo"; /* names the tool and its options */
	section *sa = NULL, *sb = NULL;
	int na = 0, nb = 0, same = 0;
	uint32_t fa = 0, fb = 0;
	if (sections_of(a, an, &sa, &na, &fa) || sections_of(b, bn, &sb, &nb, &fb))
		snprintf(why, whysz, "not a cubin");
	else if (fa != fb || na != nb)
		snprintf(why, whysz, fa != fb ? "targets differ" : "sections differ");
	else
		for (same = 1; same && na--;) {
			const section *x = &sa[na], *y = &sb[na];
			if (!strcmp(x->name, tool_note) && !strcmp(y->name, tool_note))
				continue;
			same = !strcmp(x->name, y->name) && x->type == y->type && x->size == y->size &&
			       (!x->data || !memcmp(x->data, y->data, x->size));
			if (!same)
				snprintf(why, whysz, "section %s", x->name);
		}
	free(sa);
	free(sb);
	return same;
}

/* ---- the library ------------------------------------------------------------------------------------ */

typedef struct nvrtc {
	void *dl;
	int (*version)(int *major, int *minor);
	int (*create)(void **prog, const char *src, const char *name, int nheaders, const char *const *headers,
		      const char *const *includes);
	int (*compile)(void *prog, int nopts, const char *const *opts);
	int (*log_size)(void *prog, size_t *size);
	int (*log)(void *prog, char *log);
	int (*cubin_size)(void *prog, size_t *size);
	int (*cubin)(void *prog, char *cubin);
	int (*destroy)(void **prog);
} nvrtc;

static int nvrtc_open(const char *lib, nvrtc *r)
{
	*r = (nvrtc){0};
	r->dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!r->dl)
		return -1;
	*(void **)&r->version = dlsym(r->dl, "nvrtcVersion");
	*(void **)&r->create = dlsym(r->dl, "nvrtcCreateProgram");
	*(void **)&r->compile = dlsym(r->dl, "nvrtcCompileProgram");
	*(void **)&r->log_size = dlsym(r->dl, "nvrtcGetProgramLogSize");
	*(void **)&r->log = dlsym(r->dl, "nvrtcGetProgramLog");
	*(void **)&r->cubin_size = dlsym(r->dl, "nvrtcGetCUBINSize");
	*(void **)&r->cubin = dlsym(r->dl, "nvrtcGetCUBIN");
	*(void **)&r->destroy = dlsym(r->dl, "nvrtcDestroyProgram");
	if (r->version && r->create && r->compile && r->log_size && r->log && r->cubin_size && r->cubin && r->destroy)
		return 0;
	dlclose(r->dl);
	r->dl = NULL;
	return -1;
}

/* "13.0" from the identity `nvcc --version` gives ("... release 13.0, V13.0.88; ..."). */
static int nvcc_release(const char *identity, int *major, int *minor)
{
	const char *r = strstr(identity, "release ");
	return r && sscanf(r + 8, "%d.%d", major, minor) == 2 ? 0 : -1;
}

/* Where a toolkit keeps its NVRTC, relative to nvcc's directory. */
static const char *const lib_dirs[] = {"../lib64", "../lib", "../targets/x86_64-linux/lib", "../targets/sbsa-linux/lib",
				       "../lib/x86_64-linux-gnu", "../lib/aarch64-linux-gnu"};

/* The nvcc program (a path, or a name searched in PATH) with its links resolved, in its
 * toolkit's bin (owned by the caller); NULL when there is no such program. */
static char *nvcc_real(const char *nvcc)
{
	char *prog = kt_find_program(nvcc), *real = prog ? realpath(prog, NULL) : NULL;
	free(prog);
	return real;
}

/* 1 when nvcc's toolkit directory (bindir/..) holds an NVRTC library. */
static int has_library(const char *bindir)
{
	int found = 0;
	for (size_t i = 0; !found && i < sizeof lib_dirs / sizeof lib_dirs[0]; i++) {
		char *dir = kt_path_join(bindir, lib_dirs[i]), *path = kt_path_join(dir, "libnvrtc.so");
		found = access(path, R_OK) == 0;
		free(dir);
		free(path);
	}
	return found;
}

/* The first NVRTC library of release major.minor beside nvcc's toolkit, or NULL. */
static char *find_library(const char *bindir, int major, int minor, const char **why)
{
	char soname[32];
	snprintf(soname, sizeof soname, "libnvrtc.so.%d", major);
	for (size_t i = 0; i < sizeof lib_dirs / sizeof lib_dirs[0]; i++)
		for (int v = 0; v < 2; v++) {
			char *dir = kt_path_join(bindir, lib_dirs[i]), *path = kt_path_join(dir, v ? soname : "libnvrtc.so");
			free(dir);
			nvrtc r;
			int maj = -1, min = -1;
			if (access(path, R_OK) == 0 && nvrtc_open(path, &r) == 0) {
				r.version(&maj, &min);
				dlclose(r.dl);
				if (maj == major && min == minor)
					return path;
				*why = "its toolkit's NVRTC is of another release";
			}
			free(path);
		}
	return NULL;
}

char *kt_nvrtc_library(const char *nvcc, const char *const *fl, int nfl, const char **why)
{
	const char *dummy;
	why = why ? why : &dummy;
	char *args[] = {"-cubin", "-arch=sm_90", "-o", "x.cubin", "x.cu"};
	int n = nfl + 5;
	char **v = kt_xcalloc((size_t)n + 1, sizeof *v);
	memcpy(v, args, 2 * sizeof *v);
	memcpy(v + 2, fl, (size_t)nfl * sizeof *v);
	memcpy(v + 2 + nfl, args + 2, 3 * sizeof *v);
	kt_arena *a = kt_arena_new();
	const char **opts, *in, *out;
	int ok = kt_nvrtc_options(a, v, n, &opts, &in, &out) >= 0;
	kt_arena_free(a);
	free(v);
	if (!ok) {
		*why = "a flag has no NVRTC equivalent";
		return NULL;
	}
	char *prog = nvcc_real(nvcc ? nvcc : "nvcc"), *bindir = prog ? kt_path_dir(prog) : NULL, *lib = NULL;
	kt_buf id = {0};
	int major, minor;
	*why = !bindir ? "nvcc is not found" : "its toolkit has no NVRTC";
	if (bindir && has_library(bindir) && kt_key_compiler(prog, NULL, 0, &id, NULL) == 0) {
		*why = "nvcc names no release";
		if (nvcc_release(kt_buf_str(&id), &major, &minor) == 0)
			lib = find_library(bindir, major, minor, why);
	}
	kt_buf_free(&id);
	free(bindir);
	free(prog);
	return lib;
}

/* ---- kt nvrtc ------------------------------------------------------------------------------------- */

/* The C library's floating-point macros, which nvcc's units get from math.h (its implicit
 * cuda_runtime.h includes it) and NVRTC's do not: included before the unit, each only where
 * nothing defined it, as the bit patterns of glibc's values. */
#define LIBC_HEADER "kt_nvrtc_libc.h"
static const char libc_text[] = "#ifndef INFINITY\n#define INFINITY (__int_as_float(0x7f800000))\n#endif\n"
				"#ifndef NAN\n#define NAN (__int_as_float(0x7fc00000))\n#endif\n"
				"#ifndef HUGE_VALF\n#define HUGE_VALF INFINITY\n#endif\n"
				"#ifndef HUGE_VAL\n#define HUGE_VAL (__longlong_as_double(0x7ff0000000000000LL))\n#endif\n";

/* Compiles the file `in` with options opts[0..n): the cubin into *cubin, the compiler's report
 * (ptxas's -v lines, warnings, errors) into *log.  0 when it compiled. */
static int compile_unit(const nvrtc *r, const char *in, const char **opts, int n, kt_buf *cubin, kt_buf *log)
{
	kt_buf src = {0};
	kt_err e = {0};
	if (kt_read_file(in, &src, &e)) {
		kt_buf_printf(log, "%s\n", e.msg);
		return -1;
	}
	void *prog = NULL;
	const char *hdr = libc_text, *hdr_name = LIBC_HEADER;
	int rc = r->create(&prog, kt_buf_str(&src), in, 1, &hdr, &hdr_name);
	kt_buf_free(&src);
	if (rc) {
		kt_buf_puts(log, "NVRTC could not create a program\n");
		return -1;
	}
	rc = r->compile(prog, n, opts);
	size_t size = 0;
	if (r->log_size(prog, &size) == 0 && size > 1) {
		char *text = kt_xmalloc(size);
		if (r->log(prog, text) == 0)
			kt_buf_add(log, text, strlen(text));
		free(text);
	}
	if (rc == 0 && r->cubin_size(prog, &size) == 0 && size > 0) {
		char *bin = kt_xmalloc(size);
		rc = r->cubin(prog, bin);
		if (rc == 0)
			kt_buf_add(cubin, bin, size);
		free(bin);
	} else if (rc == 0) {
		rc = -1;
	}
	r->destroy(&prog);
	return rc ? -1 : 0;
}

/* The include directory of the toolkit nvcc belongs to (nvcc adds it to every compile). */
static char *toolkit_include(const char *nvcc)
{
	char *real = nvcc_real(nvcc), *bindir = real ? kt_path_dir(real) : NULL, *opt = NULL;
	free(real);
	if (bindir) {
		kt_buf b = {0};
		kt_buf_printf(&b, "-I%s/../include", bindir);
		opt = kt_buf_detach(&b);
	}
	free(bindir);
	return opt;
}

/* Starts nvcc with its arguments, its output ours.  0, or -1 when it could not start. */
static int start_nvcc(char **nvcc_argv, kt_proc *p)
{
	kt_err e = {0};
	fflush(stdout);
	fflush(stderr);
	if (kt_proc_spawn(p, nvcc_argv, 0, NULL, &e) == 0)
		return 0;
	fprintf(stderr, "kt nvrtc: %s\n", e.msg);
	return -1;
}

/* Waits for nvcc: its exit status, 2 when it did not exit. */
static int wait_nvcc(kt_proc *p)
{
	int status = 0;
	kt_proc_wait(p, -1, &status);
	return WIFEXITED(status) ? WEXITSTATUS(status) : KT_EXIT_INTERNAL;
}

/* Runs nvcc with its arguments, its output ours; its exit status (2 when it could not run). */
static int run_nvcc(char **nvcc_argv)
{
	kt_proc p;
	return start_nvcc(nvcc_argv, &p) ? KT_EXIT_INTERNAL : wait_nvcc(&p);
}

/* --verify: nvcc compiled the unit too, beside NVRTC (started before it, waited for after), with
 * exit status rc; its cubin at out stays, and the last line says whether NVRTC's (compiled,
 * cubin, log) agrees.  Returns rc. */
static int verdict(int rc, const char *out, int compiled, const kt_buf *cubin, const kt_buf *log)
{
	kt_buf theirs = {0};
	char why[128] = "";
	if (rc == 0 && !compiled) {
		kt_buf line = {0};
		kt_compile_first_error(kt_buf_str(log), &line);
		printf("%s: %s\n", KT_NVRTC_FAILED, kt_buf_str(&line));
		kt_buf_free(&line);
	} else if (rc == 0 && kt_read_file(out, &theirs, NULL) == 0) {
		if (kt_cubin_same_code(cubin->data, cubin->len, theirs.data, theirs.len, why, sizeof why))
			printf("%s\n", KT_NVRTC_SAME);
		else
			printf("%s (%s)\n", KT_NVRTC_DIFFERS, why);
	}
	kt_buf_free(&theirs);
	return rc;
}

/* NVRTC 13 loads the CUDA driver (libcuda.so.1) during a compile and initialises it, GPUs and
 * all: on a host of two H200s 0.4 s of a gelu_and_mul unit's 0.55, and concurrent units wait for
 * each other there (16 at once 1.4 s).  A unit needs no GPU.  The toolkit's stub driver (beside
 * its NVRTC, in stubs/), loaded first, is the libcuda.so.1 that NVRTC then gets: 16 units at once
 * in 0.15 s, the same cubins.  Without a stub the GPUs are hidden: 0.14 s a unit, 16 in 0.87 s. */
static void keep_driver_away(const char *lib)
{
	setenv("CUDA_VISIBLE_DEVICES", "", 1);
	char *dir = kt_path_dir(lib), *stub = kt_path_join(dir, "stubs/libcuda.so");
	dlopen(stub, RTLD_NOW | RTLD_LOCAL); /* kept: the process ends with its unit */
	free(stub);
	free(dir);
}

int kt_cmd_nvrtc(int argc, char **argv)
{
	const char *lib = NULL;
	int verifying = 0, i = 1;
	for (; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "--lib") && i + 1 < argc)
			lib = argv[++i];
		else if (!strcmp(argv[i], "--verify"))
			verifying = 1;
		else {
			fprintf(stderr, "kt nvrtc: unknown argument %s\nusage: kt nvrtc --lib LIB [--verify] -- NVCC ARGS...\n", argv[i]);
			return KT_EXIT_INPUT;
		}
	}
	if (!lib || i + 1 >= argc) {
		fprintf(stderr, "usage: kt nvrtc --lib LIB [--verify] -- NVCC ARGS...\n");
		return KT_EXIT_INPUT;
	}
	char **nvcc_argv = argv + i + 1;
	int nargs = argc - i - 2;
	keep_driver_away(lib);
	kt_arena *a = kt_arena_new();
	const char **opts, *in, *out;
	int nopts = kt_nvrtc_options(a, nvcc_argv + 1, nargs, &opts, &in, &out), compiled = 0, rc;
	nvrtc r = {0};
	kt_buf cubin = {0}, log = {0};
	kt_proc theirs;
	int started = verifying && start_nvcc(nvcc_argv, &theirs) == 0;
	if (nopts >= 0 && nvrtc_open(lib, &r) == 0) {
		char *inc = toolkit_include(nvcc_argv[0]);
		const char **all = kt_arena_alloc(a, (size_t)(nopts + 3) * sizeof *all);
		memcpy(all, opts, (size_t)nopts * sizeof *all);
		if (inc)
			all[nopts++] = kt_arena_strdup(a, inc);
		all[nopts++] = "--pre-include=" LIBC_HEADER;
		free(inc);
		compiled = compile_unit(&r, in, all, nopts, &cubin, &log) == 0;
	}
	if (verifying)
		rc = verdict(started ? wait_nvcc(&theirs) : KT_EXIT_INTERNAL, out, compiled, &cubin, &log);
	else if (compiled) {
		kt_err e = {0};
		fputs(kt_buf_str(&log), stdout);
		rc = kt_write_file(out, cubin.data, cubin.len, &e) ? KT_EXIT_INTERNAL : 0; /* ninja's edge renames it */
		if (rc)
			fprintf(stderr, "kt nvrtc: %s\n", e.msg);
		else
			printf("%s\n", KT_NVRTC_USED);
	} else
		rc = run_nvcc(nvcc_argv); /* NVRTC could not: nvcc's result and words are the unit's */
	kt_buf_free(&cubin);
	kt_buf_free(&log);
	kt_arena_free(a);
	if (r.dl)
		dlclose(r.dl);
	return rc;
}
