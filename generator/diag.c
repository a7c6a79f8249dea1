/* diag.c - diagnostics with a source line and a caret; name suggestions (see diag.h). */
#include "diag.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define DIAG_MAX_NAME 64       /* longer names get no suggestion */
#define DIAG_SUGGEST_DISTANCE 2 /* "did you mean" only for names this close */

void kt_diag_locate(const char *src, size_t srclen, size_t off, int *line, int *col)
{
	int ln = 1;
	size_t bol = 0;
	if (off > srclen)
		off = srclen;
	for (size_t i = 0; i < off; i++)
		if (src[i] == '\n') {
			ln++;
			bol = i + 1;
		}
	*line = ln;
	*col = (int)(off - bol) + 1;
}

/* Start and length of line `line` (1-based) of src, without its newline. */
static const char *line_span(const char *src, size_t srclen, int line, size_t *len)
{
	size_t i = 0;
	for (int ln = 1; ln < line && i < srclen; i++)
		if (src[i] == '\n')
			ln++;
	size_t end = i;
	while (end < srclen && src[end] != '\n')
		end++;
	if (end > i && src[end - 1] == '\r')
		end--;
	*len = end - i;
	return src + i;
}

void kt_diag_error(kt_buf *out, const char *path, const char *src, size_t srclen, int line, int col,
		   const char *fmt, ...)
{
	va_list ap;
	kt_buf_printf(out, "%s:%d:%d: error: ", path, line, col);
	size_t msg_at = out->len;
	va_start(ap, fmt);
	kt_buf_vprintf(out, fmt, ap);
	va_end(ap);
	for (size_t i = msg_at; i < out->len; i++) /* the message stays one line */
		if ((unsigned char)out->data[i] < 0x20 || out->data[i] == 0x7f)
			out->data[i] = '?';
	kt_buf_putc(out, '\n');
	size_t n;
	const char *s = line_span(src, srclen, line, &n);
	for (size_t i = 0; i < n; i++) /* control characters would garble a terminal: one '?' each */
		kt_buf_putc(out, ((unsigned char)s[i] < 0x20 && s[i] != '\t') || s[i] == 0x7f ? '?' : s[i]);
	kt_buf_putc(out, '\n');
	/* The caret line: tabs stay tabs, a UTF-8 sequence counts as one column, the rest is blank. */
	for (size_t i = 0; i + 1 < (size_t)col && i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '\t')
			kt_buf_putc(out, '\t');
		else if ((c & 0xC0) != 0x80)
			kt_buf_putc(out, ' ');
	}
	for (size_t i = n; i + 1 < (size_t)col; i++)
		kt_buf_putc(out, ' ');
	kt_buf_puts(out, "^\n");
}

void kt_diag_quote(char *out, size_t outsz, const char *s, size_t n)
{
	kt_buf b = {0};
	kt_buf_putc(&b, '\'');
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c == 0x7f)
			kt_buf_printf(&b, "\\x%02x", c);
		else
			kt_buf_putc(&b, (char)c);
	}
	kt_buf_putc(&b, '\'');
	snprintf(out, outsz, "%s", b.data);
	kt_buf_free(&b);
}

static int min3(int a, int b, int c) { return a < b ? (a < c ? a : c) : (b < c ? b : c); }

int kt_diag_distance(const char *a, size_t an, const char *b, int cap)
{
	size_t bn = strlen(b);
	if (an > DIAG_MAX_NAME || bn > DIAG_MAX_NAME)
		return cap + 1;
	if ((an > bn ? an - bn : bn - an) > (size_t)cap)
		return cap + 1;
	/* Optimal string alignment distance over three rows of the table. */
	int rows[3][DIAG_MAX_NAME + 1];
	int *prev2 = rows[0], *prev = rows[1], *cur = rows[2];
	for (size_t j = 0; j <= bn; j++)
		prev[j] = (int)j;
	for (size_t i = 1; i <= an; i++) {
		cur[0] = (int)i;
		for (size_t j = 1; j <= bn; j++) {
			int cost = a[i - 1] != b[j - 1];
			cur[j] = min3(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost);
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && prev2[j - 2] + 1 < cur[j])
				cur[j] = prev2[j - 2] + 1;
		}
		int *t = prev2;
		prev2 = prev;
		prev = cur;
		cur = t;
	}
	return prev[bn] > cap ? cap + 1 : prev[bn];
}

const char *kt_diag_closest(const char *name, size_t n, const char *const *cands, int ncands)
{
	const char *best = NULL;
	int bestd = DIAG_SUGGEST_DISTANCE + 1;
	for (int i = 0; i < ncands; i++) {
		if (!cands[i])
			continue;
		int d = kt_diag_distance(name, n, cands[i], DIAG_SUGGEST_DISTANCE);
		if (d < bestd && (size_t)d < n && d > 0) {
			bestd = d;
			best = cands[i];
		}
	}
	return best;
}
