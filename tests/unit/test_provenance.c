/* test_provenance.c - a template's kt refactor provenance as a record's "refactor" field: which
 * first lines count (the two that kt refactor writes, and nothing else), which transcripts are
 * embedded (whole, a kt refactor transcript that wrote a template, within the size limit, without
 * this environment's key) and what a note says when one is not, and what kt cache show prints. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "provenance.h"

static const char verified[] = "// kt: verified on NVIDIA H200 against the original kernel scale (6 checks); "
			       "refactored by qwen\n// @kt kernel scale_tuned\n";
static const char not_verified[] = "// kt: NOT VERIFIED on a GPU: refactored by qwen with kt refactor; 2 "
				   "configurations compiled for sm_90; check it on a GPU against scale before use\r\n"
				   "// @kt kernel scale_tuned\n";
static const char transcript[] =
	"{\"format\": \"kt-transcript-1\", \"task\": \"refactor\", \"model\": \"qwen\", \"rounds\": ["
	"{\"round\": 1, \"outcome\": \"rejected\", \"detail\": \"t.cu.tmpl:3:1: error: \\u001b[31mbad\\nline 2\"},"
	"{\"round\": 2, \"outcome\": \"accepted\"}], \"usage\": {\"requests\": 2, \"prompt_tokens\": 900, "
	"\"completion_tokens\": 200, \"total_tokens\": 1100}, \"result\": \"accepted\"}";

static char *dir;
static char tmpl_path[512], tr_path[600];

static void write_transcript(const char *text)
{
	FILE *f = fopen(tr_path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void test_line(void)
{
	kt_buf b = {0};
	CHECK_INT(kt_provenance_line(verified, strlen(verified), &b), 1);
	CHECK_STR(kt_buf_str(&b), "kt: verified on NVIDIA H200 against the original kernel scale (6 checks); refactored by qwen");
	kt_buf_reset(&b);
	CHECK_INT(kt_provenance_line(not_verified, strlen(not_verified), &b), 1);
	CHECK(!strncmp(kt_buf_str(&b), "kt: NOT VERIFIED on a GPU: refactored by qwen", 45));
	CHECK(!strchr(kt_buf_str(&b), '\r') && !strchr(kt_buf_str(&b), '\n'));
	kt_buf_free(&b);
	/* Any other first line is not one: a plain template, a mark on the second line, a look-alike
	 * without the model, the mark not at the start. */
	const char *others[] = {"// @kt kernel scale\n", "// scale\n// kt: verified on X; refactored by m\n",
				"// kt: verified on X against the original kernel k (1 checks)\n",
				" // kt: verified on X; refactored by m\n", "// kt: NOT VERIFIED", ""};
	for (size_t i = 0; i < sizeof others / sizeof *others; i++) {
		CHECK_INT(kt_provenance_line(others[i], strlen(others[i]), &b), 0);
		CHECK_INT(b.len, 0);
	}
	/* A first line longer than the limit is cut there, not inside a UTF-8 sequence. */
	kt_buf longl = {0};
	kt_buf_puts(&longl, "// kt: verified on X; refactored by ");
	while (longl.len < KT_PROVENANCE_LINE_MAX + 100)
		kt_buf_puts(&longl, "\xc3\xa9"); /* é */
	kt_buf_puts(&longl, "\nrest\n");
	CHECK_INT(kt_provenance_line(longl.data, longl.len, &b), 1);
	CHECK(b.len <= KT_PROVENANCE_LINE_MAX && b.len >= KT_PROVENANCE_LINE_MAX - 1);
	CHECK(b.len > 0 && ((unsigned char)b.data[b.len - 1] & 0xC0) == 0x80 &&
	      ((unsigned char)b.data[b.len - 2] & 0xE0) == 0xC0);
	kt_buf_free(&longl);
	kt_buf_free(&b);
}

/* kt_provenance_json of text for tmpl_path, parsed (NULL when it said 0). */
static cJSON *field(const char *text, const char *secret)
{
	kt_buf b = {0};
	int rc = kt_provenance_json(tmpl_path, text, strlen(text), secret, &b);
	cJSON *o = rc ? cJSON_Parse(kt_buf_str(&b)) : NULL;
	CHECK(rc == 0 || o != NULL);
	CHECK(rc == 1 || b.len == 0);
	kt_buf_free(&b);
	return o;
}

static const char *note_of(const cJSON *o)
{
	const cJSON *n = cJSON_GetObjectItem(o, "note");
	return cJSON_IsString(n) ? n->valuestring : "";
}

static void test_json(void)
{
	/* A plain template has no such field. */
	CHECK(field("// @kt kernel scale\n", NULL) == NULL);
	/* No transcript beside the template: the provenance and a note. */
	unlink(tr_path);
	cJSON *o = field(verified, NULL);
	CHECK(o && !strcmp(cJSON_GetObjectItem(o, "provenance")->valuestring,
			   "kt: verified on NVIDIA H200 against the original kernel scale (6 checks); refactored by qwen"));
	CHECK(o && cJSON_IsTrue(cJSON_GetObjectItem(o, "verified")));
	CHECK(o && !cJSON_GetObjectItem(o, "transcript"));
	CHECK(strstr(note_of(o), "no transcript t.cu.tmpl.transcript.json beside the template") != NULL);
	CHECK(strstr(note_of(o), dir) == NULL); /* records hold no paths */
	cJSON_Delete(o);
	/* A good transcript is embedded whole. */
	write_transcript(transcript);
	o = field(not_verified, "sk-elsewhere");
	const cJSON *tr = cJSON_GetObjectItem(o, "transcript");
	CHECK(o && cJSON_IsFalse(cJSON_GetObjectItem(o, "verified")));
	CHECK(cJSON_IsObject(tr) && cJSON_GetArraySize(cJSON_GetObjectItem(tr, "rounds")) == 2);
	CHECK(cJSON_IsObject(tr) && cJSON_GetObjectItem(cJSON_GetObjectItem(tr, "usage"), "total_tokens")->valueint == 1100);
	CHECK(o && !cJSON_GetObjectItem(o, "note"));
	cJSON_Delete(o);
	/* Not embedded, with the reason: the key of this environment, not JSON, not a kt refactor
	 * transcript, one of a run that failed, over the size limit. */
	struct {
		const char *text, *secret, *why;
	} bad[] = {
		{transcript, "900, \"completion", "it holds the API key of this environment"},
		{"{\"format\": \"kt-transcript-1\",", NULL, "not valid JSON"},
		{"[1, 2]", NULL, "not a JSON object"},
		{"{\"format\": \"kt-transcript-2\", \"task\": \"refactor\", \"result\": \"accepted\"}", NULL,
		 "its format is not kt-transcript-1"},
		{"{\"format\": \"kt-transcript-1\", \"task\": \"plan\", \"result\": \"planned\"}", NULL,
		 "its task is not refactor"},
		{"{\"format\": \"kt-transcript-1\", \"task\": \"refactor\", \"result\": \"failed\"}", NULL,
		 "its result is not accepted"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		write_transcript(bad[i].text);
		o = field(verified, bad[i].secret);
		CHECK(o && !cJSON_GetObjectItem(o, "transcript") && cJSON_GetObjectItem(o, "provenance"));
		CHECK(strstr(note_of(o), "the transcript t.cu.tmpl.transcript.json is not embedded: ") != NULL);
		CHECK(strstr(note_of(o), bad[i].why) != NULL);
		if (!strstr(note_of(o), bad[i].why))
			fprintf(stderr, "  note: %s\n  want: %s\n", note_of(o), bad[i].why);
		cJSON_Delete(o);
	}
	kt_buf big = {0};
	kt_buf_puts(&big, "{\"format\": \"kt-transcript-1\", \"task\": \"refactor\", \"result\": \"accepted\", \"pad\": \"");
	while (big.len <= KT_PROVENANCE_TRANSCRIPT_MAX)
		kt_buf_puts(&big, "0123456789abcdef");
	kt_buf_puts(&big, "\"}");
	write_transcript(big.data);
	o = field(verified, NULL);
	CHECK(o && !cJSON_GetObjectItem(o, "transcript"));
	CHECK(strstr(note_of(o), "bytes, over the 262144 a record keeps; not embedded") != NULL);
	cJSON_Delete(o);
	kt_buf_free(&big);
	/* Something that is not a regular file (it could block or never end) is not read. */
	unlink(tr_path);
	CHECK(mkdir(tr_path, 0700) == 0);
	o = field(verified, NULL);
	CHECK(o && !cJSON_GetObjectItem(o, "transcript"));
	CHECK(strstr(note_of(o), "t.cu.tmpl.transcript.json is not a regular file; not embedded") != NULL);
	cJSON_Delete(o);
	rmdir(tr_path);
}

static void test_text(void)
{
	write_transcript(transcript);
	cJSON *o = field(verified, NULL);
	kt_buf b = {0};
	kt_provenance_text(o, &b);
	CHECK_STR(kt_buf_str(&b),
		  "stage 1, kt refactor: kt: verified on NVIDIA H200 against the original kernel scale (6 checks); "
		  "refactored by qwen\n"
		  "  round 1: rejected: t.cu.tmpl:3:1: error: ?[31mbad ...\n"
		  "  round 2: accepted\n"
		  "  tokens: 900 prompt + 200 completion = 1100 in 2 requests\n");
	cJSON_Delete(o);
	/* Without a transcript: the provenance and the note. */
	unlink(tr_path);
	o = field(verified, NULL);
	kt_buf_reset(&b);
	kt_provenance_text(o, &b);
	CHECK(strstr(kt_buf_str(&b), "(6 checks); refactored by qwen\n  note: no transcript t.cu.tmpl.transcript.json") !=
	      NULL);
	CHECK(strstr(kt_buf_str(&b), "round") == NULL && strstr(kt_buf_str(&b), "tokens") == NULL);
	cJSON_Delete(o);
	/* Nothing for a record without the field, or with one of the wrong shape. */
	kt_buf_reset(&b);
	kt_provenance_text(NULL, &b);
	cJSON *odd = cJSON_Parse("{\"provenance\": 7, \"transcript\": {\"rounds\": 3}}");
	kt_provenance_text(odd, &b);
	CHECK_INT(b.len, 0);
	cJSON_Delete(odd);
	kt_buf_free(&b);
}

int main(void)
{
	if (!(dir = kt_temp_dir(getenv("TMPDIR"), "kt-test-provenance", NULL)))
		return 1;
	snprintf(tmpl_path, sizeof tmpl_path, "%s/t.cu.tmpl", dir);
	snprintf(tr_path, sizeof tr_path, "%s" KT_PROVENANCE_TRANSCRIPT, tmpl_path);
	test_line();
	test_json();
	test_text();
	kt_remove_tree(dir);
	free(dir);
	return check_done();
}
