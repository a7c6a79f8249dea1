/* provenance.c - a template's kt refactor provenance in its cache records (see provenance.h). */
#include "provenance.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "agent.h"
#include "json.h"

#define COMMENT "// "  /* how both marks begin; the record keeps what follows */
#define SHOW_MAX 200   /* bytes of one round's detail that kt cache show prints */

/* ---- the line ---- */

/* The length of text's first line, without its line end. */
static size_t first_line(const char *text, size_t len)
{
	const char *nl = memchr(text, '\n', len);
	size_t n = nl ? (size_t)(nl - text) : len;
	return n > 0 && text[n - 1] == '\r' ? n - 1 : n;
}

static int starts_with(const char *s, size_t n, const char *prefix)
{
	size_t k = strlen(prefix);
	return n >= k && memcmp(s, prefix, k) == 0;
}

int kt_provenance_line(const char *text, size_t len, kt_buf *out)
{
	size_t n = first_line(text, len);
	if (!starts_with(text, n, KT_PROVENANCE_VERIFIED) && !starts_with(text, n, KT_PROVENANCE_NOT_VERIFIED))
		return 0;
	kt_buf line = {0};
	kt_buf_add(&line, text + strlen(COMMENT), n - strlen(COMMENT));
	int ok = strstr(kt_buf_str(&line), KT_PROVENANCE_BY) != NULL;
	if (ok)
		kt_buf_add(out, line.data, kt_utf8_cut(line.data, strlen(line.data), KT_PROVENANCE_LINE_MAX));
	kt_buf_free(&line);
	return ok;
}

/* ---- the transcript ---- */

static int str_is(const cJSON *o, const char *name, const char *want)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, name);
	return cJSON_IsString(it) && strcmp(it->valuestring, want) == 0;
}

/* Why doc is not the transcript of a kt refactor that wrote a template, or NULL when it is.  A
 * later run that failed rewrites the transcript but not the template: its result gives it away. */
static const char *not_a_transcript(const cJSON *doc)
{
	if (!cJSON_IsObject(doc))
		return "not a JSON object";
	if (!str_is(doc, "format", KT_TRANSCRIPT_FORMAT))
		return "its format is not " KT_TRANSCRIPT_FORMAT;
	if (!str_is(doc, "task", "refactor"))
		return "its task is not refactor";
	if (!str_is(doc, "result", "accepted"))
		return "its result is not accepted: a later run failed";
	return NULL;
}

/* The transcript at path (named name in notes) when it may be embedded; else NULL with a note. */
static cJSON *read_transcript(const char *path, const char *name, const char *secret, kt_buf *note)
{
	struct stat st;
	if (stat(path, &st) != 0) {
		kt_buf_printf(note, errno == ENOENT ? "no transcript %s beside the template" : "the transcript %s cannot be read",
			      name);
		return NULL;
	}
	if (!S_ISREG(st.st_mode)) { /* a FIFO or a device could block or never end */
		kt_buf_printf(note, "the transcript %s is not a regular file; not embedded", name);
		return NULL;
	}
	if (st.st_size > KT_PROVENANCE_TRANSCRIPT_MAX) {
		kt_buf_printf(note, "the transcript %s is %lld bytes, over the %d a record keeps; not embedded", name,
			      (long long)st.st_size, KT_PROVENANCE_TRANSCRIPT_MAX);
		return NULL;
	}
	kt_buf text = {0};
	cJSON *doc = NULL;
	const char *why = NULL;
	if (kt_read_file(path, &text, NULL) != 0 || text.len > KT_PROVENANCE_TRANSCRIPT_MAX)
		why = "it cannot be read whole";
	else if (secret && *secret && strstr(kt_buf_str(&text), secret))
		why = "it holds the API key of this environment";
	else if (!(doc = cJSON_ParseWithLength(text.data, text.len)))
		why = "not valid JSON";
	else
		why = not_a_transcript(doc);
	if (why)
		kt_buf_printf(note, "the transcript %s is not embedded: %s", name, why);
	kt_buf_free(&text);
	if (why)
		cJSON_Delete(doc);
	return why ? NULL : doc;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

int kt_provenance_json(const char *path, const char *text, size_t len, const char *secret, kt_buf *out)
{
	kt_buf line = {0}, tpath = {0}, note = {0};
	if (!kt_provenance_line(text, len, &line))
		return 0;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "provenance", kt_buf_str(&line));
	cJSON_AddBoolToObject(o, "verified", starts_with(text, len, KT_PROVENANCE_VERIFIED));
	kt_buf_printf(&tpath, "%s%s", path, KT_PROVENANCE_TRANSCRIPT);
	cJSON *tr = read_transcript(kt_buf_str(&tpath), base_name(kt_buf_str(&tpath)), secret, &note);
	if (tr)
		cJSON_AddItemToObject(o, "transcript", tr);
	else
		cJSON_AddStringToObject(o, "note", kt_buf_str(&note));
	kt_buf_put_json(out, o);
	cJSON_Delete(o);
	kt_buf_free(&line);
	kt_buf_free(&tpath);
	kt_buf_free(&note);
	return 1;
}

/* ---- kt cache show ---- */

/* "  round 2: rejected: the first line of why" for each round of the transcript. */
static void rounds_text(const cJSON *rounds, kt_buf *out)
{
	const cJSON *it;
	cJSON_ArrayForEach(it, rounds)
	{
		const char *outcome = kt_json_str(it, "outcome"), *detail = kt_json_str(it, "detail");
		kt_buf_printf(out, "  round %.0f: ", kt_json_num(it, "round", 0));
		kt_buf_put_line(out, outcome ? outcome : "?", SHOW_MAX);
		if (detail) {
			kt_buf_puts(out, ": ");
			if (detail[kt_buf_put_line(out, detail, SHOW_MAX)])
				kt_buf_puts(out, " ...");
		}
		kt_buf_putc(out, '\n');
	}
}

static void usage_text(const cJSON *u, kt_buf *out)
{
	if (!cJSON_IsObject(u))
		return;
	double requests = kt_json_num(u, "requests", 0);
	kt_buf_printf(out, "  tokens: %.0f prompt + %.0f completion = %.0f in %.0f request%s\n",
		      kt_json_num(u, "prompt_tokens", 0), kt_json_num(u, "completion_tokens", 0), kt_json_num(u, "total_tokens", 0),
		      requests, requests == 1 ? "" : "s");
}

void kt_provenance_text(const cJSON *refactor, kt_buf *out)
{
	const char *prov = kt_json_str(refactor, "provenance"), *note = kt_json_str(refactor, "note");
	if (!prov)
		return;
	kt_buf_puts(out, "stage 1, kt refactor: ");
	kt_buf_put_line(out, prov, KT_PROVENANCE_LINE_MAX);
	kt_buf_putc(out, '\n');
	const cJSON *tr = cJSON_GetObjectItemCaseSensitive(refactor, "transcript");
	rounds_text(cJSON_GetObjectItemCaseSensitive(tr, "rounds"), out);
	usage_text(cJSON_GetObjectItemCaseSensitive(tr, "usage"), out);
	if (note) {
		kt_buf_puts(out, "  note: ");
		kt_buf_put_line(out, note, SHOW_MAX);
		kt_buf_putc(out, '\n');
	}
}
