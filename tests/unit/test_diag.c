/* test_diag.c - diagnostics: the exact layout (source line, caret under the column with tabs
 * kept, UTF-8 counted as one column, CR and control characters), quoting, locations, and the
 * edit distance behind "did you mean". */
#include <string.h>

#include "check.h"
#include "diag.h"
#include "util.h"

static void check_error(const char *src, int line, int col, const char *want, int at)
{
	kt_buf b = {0};
	kt_diag_error(&b, "f.cu.tmpl", src, strlen(src), line, col, "bad %s", "thing");
	if (strcmp(kt_buf_str(&b), want) != 0) {
		check_failed++;
		fprintf(stderr, "%s:%d: got:\n%s\nwant:\n%s\n", __FILE__, at, kt_buf_str(&b), want);
	} else {
		check_passed++;
	}
	kt_buf_free(&b);
}
#define CHECK_ERROR(src, line, col, want) check_error(src, line, col, want, __LINE__)

static void test_layout(void)
{
	CHECK_ERROR("abc\ndef\n", 2, 2, "f.cu.tmpl:2:2: error: bad thing\ndef\n ^\n");
	CHECK_ERROR("abc", 1, 1, "f.cu.tmpl:1:1: error: bad thing\nabc\n^\n");
	/* Tabs stay tabs, so the caret lines up whatever the tab width. */
	CHECK_ERROR("\tx\t= y\n", 1, 5, "f.cu.tmpl:1:5: error: bad thing\n\tx\t= y\n\t \t ^\n");
	/* A UTF-8 character is one column of the caret line (its bytes are columns of the position). */
	CHECK_ERROR("// \xc3\xa9t\xc3\xa9 x\n", 1, 10, "f.cu.tmpl:1:10: error: bad thing\n// \xc3\xa9t\xc3\xa9 x\n       ^\n");
	/* CRLF line ends: the CR is not printed. */
	CHECK_ERROR("a\r\nbc\r\n", 2, 3, "f.cu.tmpl:2:3: error: bad thing\nbc\n  ^\n");
	/* The end of a line, and past the end of the file. */
	CHECK_ERROR("ab\n", 1, 3, "f.cu.tmpl:1:3: error: bad thing\nab\n  ^\n");
	CHECK_ERROR("ab\n", 2, 1, "f.cu.tmpl:2:1: error: bad thing\n\n^\n");
	/* Control characters in the line become '?', so the diagnostic stays three lines. */
	CHECK_ERROR("a\001b\n", 1, 3, "f.cu.tmpl:1:3: error: bad thing\na?b\n  ^\n");

	kt_buf b = {0};
	kt_diag_error(&b, "f", "x", 1, 1, 1, "found %s", "a\nb");
	CHECK_STR(b.data, "f:1:1: error: found a?b\nx\n^\n");
	kt_buf_free(&b);
}

static void test_locate_quote(void)
{
	int line, col;
	const char *s = "ab\ncd\n\nef";
	kt_diag_locate(s, strlen(s), 0, &line, &col);
	CHECK(line == 1 && col == 1);
	kt_diag_locate(s, strlen(s), 4, &line, &col);
	CHECK(line == 2 && col == 2);
	kt_diag_locate(s, strlen(s), 7, &line, &col);
	CHECK(line == 4 && col == 1);
	kt_diag_locate(s, strlen(s), 100, &line, &col);
	CHECK(line == 4 && col == 3);

	char q[64];
	kt_diag_quote(q, sizeof q, "a\tb\0c", 5);
	CHECK_STR(q, "'a\\x09b\\x00c'");
	kt_diag_quote(q, sizeof q, "\xc3\xa9", 2);
	CHECK_STR(q, "'\xc3\xa9'");
}

static void test_distance(void)
{
	CHECK_INT(kt_diag_distance("hidden", 6, "hidden", 2), 0);
	CHECK_INT(kt_diag_distance("hiden", 5, "hidden", 2), 1);
	CHECK_INT(kt_diag_distance("hdiden", 6, "hidden", 2), 1); /* a transposition is one edit */
	CHECK_INT(kt_diag_distance("kernal", 6, "kernel", 2), 1);
	CHECK_INT(kt_diag_distance("blk", 3, "block", 2), 2);
	CHECK_INT(kt_diag_distance("columns", 7, "rows", 2), 3); /* capped: cap + 1 */
	CHECK_INT(kt_diag_distance("", 0, "ab", 2), 2);

	const char *const names[] = {"rows", "hidden", "BLOCK", NULL, "VEC"};
	CHECK_STR(kt_diag_closest("hiden", 5, names, 5), "hidden");
	CHECK_STR(kt_diag_closest("BLOK", 4, names, 5), "BLOCK");
	CHECK(kt_diag_closest("hidden", 6, names, 5) == NULL); /* the name itself is not a suggestion */
	CHECK(kt_diag_closest("x", 1, names, 5) == NULL);
	CHECK_STR(kt_diag_closest("VE", 2, names, 5), "VEC");
	CHECK(kt_diag_closest("V", 1, names, 5) == NULL); /* an edit distance as long as the name */
	CHECK_STR(kt_diag_closest("VECS", 4, names, 5), "VEC");
	CHECK(kt_diag_closest("columns", 7, names, 5) == NULL);
}

int main(void)
{
	test_layout();
	test_locate_quote();
	test_distance();
	return check_done();
}
