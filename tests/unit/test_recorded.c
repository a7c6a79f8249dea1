/* test_recorded.c - recorded spaces: the file format written and read back, answers, and every
 * malformed file rejected with path:line and what was expected. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "recorded.h"
#include "space.h"

static const char fixture[] =
	"// @kt kernel    copy\n"
	"// @kt shape     n\n"
	"// @kt type      T in float, double\n"
	"// @kt param     BLOCK in 64, 128, 256 default 128\n"
	"// @kt param     VEC   in 1, 2, 4 default 4\n"
	"// @kt param     ALGO  in plain, wide default plain\n"
	"// @kt param     U     in 1..16 default 1\n"
	"// @kt require   n % VEC == 0\n"
	"// @kt arg       out T[n] out\n"
	"// @kt arg       x   T[n] in\n"
	"// @kt arg       n   int = n\n"
	"// @kt grid      cdiv(n, BLOCK * VEC)\n"
	"// @kt block     BLOCK\n"
	"__global__ void copy(T *out, const T *x, int n) { }\n";

static char *dir;

static char *path_of(const char *name)
{
	return kt_path_join(dir, name);
}

static void put(const char *name, const char *text)
{
	char *p = path_of(name);
	CHECK(kt_write_atomic(p, text, strlen(text), NULL) == 0);
	free(p);
}

static kt_tmpl *parse(void)
{
	kt_buf diags = {0};
	kt_err err = {0};
	kt_tmpl *t = kt_tmpl_parse_text("templates/copy.cu.tmpl", fixture, strlen(fixture), NULL, &diags, &err);
	if (!t)
		fprintf(stderr, "%s\n%s\n", err.msg, kt_buf_str(&diags));
	kt_buf_free(&diags);
	return t;
}

static void test_roundtrip(kt_tmpl *t)
{
	int64_t shape[1] = {4096};
	kt_space sp;
	kt_err err = {0};
	CHECK(kt_space_enum(t, shape, &sp, &err) == 0);
	CHECK_INT(sp.count, 18 * 16); /* more rows than the loader's first allocation */
	kt_eval *ev = calloc(sp.count, sizeof *ev);
	for (size_t i = 0; i < sp.count; i++) {
		ev[i].cfg = (uint16_t *)kt_space_cfg(&sp, i);
		ev[i].status = i % 5 == 4 ? KT_OVER_LIMITS : KT_OK;
		ev[i].median_us = 10.0 + (double)i / 8;
		ev[i].spread_us = 0.0625;
	}
	kt_gpu_id gpu = {"NVIDIA H200", 9, 0, 132, 52428800, 232448};
	char *p = path_of("copy.csv");
	CHECK(kt_recorded_write(p, t, shape, &gpu, ev, sp.count, &err) == 0);
	kt_buf text = {0};
	CHECK(kt_read_file(p, &text, &err) == 0);
	const char *head = "# kt-recording v1\n"
			   "# template: templates/copy.cu.tmpl\n"
			   "# shape: n=4096\n"
			   "# types: T=float\n"
			   "# gpu: name=\"NVIDIA H200\" cc=9.0 sms=132 l2=52428800 smem_optin=232448\n"
			   "config,status,median_us,spread_us\n"
			   "\"BLOCK=64,VEC=1,ALGO=plain,U=1\",ok,10.0000,0.0625\n"
			   "\"BLOCK=64,VEC=1,ALGO=plain,U=2\",ok,10.1250,0.0625\n";
	CHECK(!strncmp(kt_buf_str(&text), head, strlen(head)));
	CHECK(strstr(kt_buf_str(&text), "\n\"BLOCK=64,VEC=1,ALGO=plain,U=5\",over-limits,,\n") != NULL);

	kt_buf tp = {0};
	CHECK(kt_recorded_template_path(p, &tp, &err) == 0);
	CHECK_STR(kt_buf_str(&tp), "templates/copy.cu.tmpl");
	CHECK_INT(kt_recorded_header(p, "types", &tp, &err), 0);
	CHECK_STR(kt_buf_str(&tp), "T=float");
	CHECK_INT(kt_recorded_header(p, "nothing", &tp, &err), 1);
	CHECK_STR(kt_buf_str(&tp), "");

	kt_recorded *r;
	CHECK(kt_recorded_load(p, t, &r, &err) == 0);
	if (r) {
		CHECK_INT(kt_recorded_count(r), sp.count);
		CHECK_INT(kt_recorded_shape(r)[0], 4096);
		CHECK_STR(kt_recorded_gpu(r)->name, "NVIDIA H200");
		CHECK_INT(kt_recorded_gpu(r)->sms, 132);
		CHECK_INT(kt_recorded_gpu(r)->smem_optin, 232448);
		CHECK_INT(kt_recorded_gpu(r)->cc_major * 10 + kt_recorded_gpu(r)->cc_minor, 90);
		for (size_t i = 0; i < sp.count; i++) {
			kt_eval e;
			CHECK(kt_recorded_eval(r, kt_space_cfg(&sp, i), &e) == 0);
			CHECK_INT(e.status, ev[i].status);
			if (e.status == KT_OK)
				CHECK(e.median_us == ev[i].median_us && e.spread_us == 0.0625);
			else
				CHECK(e.median_us < 0);
		}
		uint16_t absent[4] = {0, 0, 0, 0};
		kt_eval e;
		CHECK(kt_recorded_eval(r, absent, &e) == 0);
		absent[1] = 7;
		CHECK(kt_recorded_eval(r, absent, &e) == -1);
		kt_recorded_free(r);
	}
	/* rows in any order, comments after the header and CRLF line ends are fine; a partial
	 * recording answers what it has */
	put("partial.csv", "# kt-recording v1\r\n# template: x\r\n# shape: n=64\r\n# a note\r\n"
			   "config,status,median_us,spread_us\r\n"
			   "\"BLOCK=256,VEC=4,ALGO=wide,U=3\",ok,3.5,0.1\r\n# skipped\r\n\r\n"
			   "\"BLOCK=64,VEC=1,ALGO=plain,U=1\",timed-out,,\r\n");
	char *pp = path_of("partial.csv");
	CHECK(kt_recorded_load(pp, t, &r, &err) == 0);
	if (r) {
		CHECK_INT(kt_recorded_count(r), 2);
		CHECK_INT(kt_recorded_shape(r)[0], 64);
		CHECK_STR(kt_recorded_gpu(r)->name, "");
		uint16_t c[4] = {2, 2, 1, 2};
		kt_eval e;
		CHECK(kt_recorded_eval(r, c, &e) == 0 && e.status == KT_OK && e.median_us == 3.5);
		c[0] = 0, c[1] = 0, c[2] = 0, c[3] = 0;
		CHECK(kt_recorded_eval(r, c, &e) == 0 && e.status == KT_TIMED_OUT);
		c[0] = 1;
		CHECK(kt_recorded_eval(r, c, &e) == -1);
		kt_recorded_free(r);
	}
	free(pp);
	kt_buf_free(&tp);
	kt_buf_free(&text);
	free(p);
	free(ev);
	kt_space_free(&sp);
}

struct bad_case {
	const char *body; /* after the magic line */
	const char *error;
};

static const struct bad_case bad_cases[] = {
	{"# shape: n=64\nconfig,status,median\n", ":3: error: expected the column row 'config,status,median_us,spread_us'"},
	{"# shape: n=64\nconfig,status,median_us,spread_us\nBLOCK=64,ok,1,1\n",
	 ":4: error: expected a quoted configuration (\"P=v,P=v\") at the start of the row"},
	{"# shape: n=64\nconfig,status,median_us,spread_us\n\"BLOCK=64,VEC=1,ALGO=plain,U=1\",fast,1,1\n",
	 ":4: error: unknown status (expected ok, compile-failed, over-limits, check-failed, faulted, timed-out or not-run)"},
	{"# shape: n=64\nconfig,status,median_us,spread_us\n\"BLOCK=64,VEC=1,ALGO=plain,U=1\",ok,,\n",
	 ":4: error: an ok row needs a median and a spread in microseconds (non-negative numbers)"},
	{"# shape: n=64\nconfig,status,median_us,spread_us\n\"BLOCK=64,VEC=1,ALGO=plain,U=1\",ok,-3,1\n",
	 ":4: error: an ok row needs a median and a spread in microseconds (non-negative numbers)"},
	{"# shape: n=64\nconfig,status,median_us,spread_us\n\"BLOCK=64,VEC=1,ALGO=plain,U=1\",ok\n",
	 ":4: error: expected 4 fields: config,status,median_us,spread_us"},
	{"# shape: n=64\nconfig,status,median_us,spread_us\n\"BLOCK=64,VEC=1,ALGO=plain,U=1\",ok,1,1\n"
	 "\"BLOCK=64,VEC=1,ALGO=plain,U=1\",ok,2,1\n",
	 ": error: configuration BLOCK=64,VEC=1,ALGO=plain,U=1 is recorded twice"},
	{"config,status,median_us,spread_us\n", ": error: no '# shape:' line"},
	{"# shape: n=64\n", ": error: no column row 'config,status,median_us,spread_us'"},
	{"# shape: n=64\nconfig,status,median_us,spread_us\n\"BLOCK=64,VEC=3,ALGO=plain,U=1\",ok,1,1\n", ":4: error: "},
	{"# shape: m=64\nconfig,status,median_us,spread_us\n", ":2: error: "},
};

static void test_bad(kt_tmpl *t)
{
	for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
		kt_buf text = {0};
		kt_buf_printf(&text, "# kt-recording v1\n%s", bad_cases[i].body);
		put("bad.csv", kt_buf_str(&text));
		char *p = path_of("bad.csv");
		kt_recorded *r = (kt_recorded *)1;
		kt_err err = {0};
		CHECK(kt_recorded_load(p, t, &r, &err) == -1);
		CHECK(r == NULL);
		CHECK_INT(err.cls, KT_E_INPUT);
		kt_buf want = {0};
		kt_buf_printf(&want, "%s%s", p, bad_cases[i].error);
		if (strncmp(err.msg, kt_buf_str(&want), want.len))
			CHECK_STR(err.msg, kt_buf_str(&want));
		kt_buf_free(&want);
		kt_buf_free(&text);
		free(p);
	}
	put("old.csv", "# kt-recording v0\n");
	char *p = path_of("old.csv");
	kt_recorded *r;
	kt_err err = {0};
	CHECK(kt_recorded_load(p, t, &r, &err) == -1);
	CHECK(strstr(err.msg, ":1: error: not a kt recording of this version (expected '# kt-recording v1'") != NULL);
	kt_buf tp = {0};
	CHECK(kt_recorded_template_path(p, &tp, &err) == -1);
	free(p);
	p = path_of("missing.csv");
	CHECK(kt_recorded_load(p, t, &r, &err) == -1);
	free(p);
	kt_buf_free(&tp);
}

int main(void)
{
	if (!(dir = kt_temp_dir(getenv("TMPDIR"), "kt-test-recorded", NULL)))
		return 1;
	kt_tmpl *t = parse();
	CHECK(t != NULL);
	if (t) {
		test_roundtrip(t);
		test_bad(t);
		kt_tmpl_free(t);
	}
	kt_remove_tree(dir);
	free(dir);
	return check_done();
}
