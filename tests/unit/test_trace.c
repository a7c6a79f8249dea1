/* test_trace.c - the tuning run's timeline (trace.h): spans and lanes as the Trace Event Format
 * has them, names escaped, the file written whole or not at all, a NULL trace doing nothing. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "trace.h"

static cJSON *read_json(const char *path)
{
	kt_buf text = {0};
	cJSON *doc = kt_read_file(path, &text, NULL) == 0 ? cJSON_Parse(kt_buf_str(&text)) : NULL;
	kt_buf_free(&text);
	return doc;
}

static double num(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
	return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

static const char *str(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
	return cJSON_IsString(v) ? v->valuestring : "";
}

int main(void)
{
	char *dir = kt_temp_dir(getenv("TMPDIR"), "kt-test-trace", NULL);
	CHECK(dir != NULL);
	if (!dir)
		return check_done();
	char *path = kt_path_join(dir, "run.json"), *bad = kt_path_join(dir, "no-such-dir/run.json");

	kt_trace *tr = kt_trace_new(100.0);
	kt_trace_lane(tr, 2, "workers");
	kt_trace_span(tr, 2, "measure 3", 100.5, 100.75, "\"candidates\":3");
	kt_trace_span(tr, 10, "a \"quoted\"\\name\n", 101.0, 100.9, NULL); /* ends before it starts: 0 long */
	kt_err err = {0};
	CHECK_INT(kt_trace_write(tr, path, &err), 0);
	cJSON *doc = read_json(path);
	CHECK(doc != NULL);
	const cJSON *ev = cJSON_GetObjectItemCaseSensitive(doc, "traceEvents");
	CHECK_INT(cJSON_GetArraySize(ev), 4);
	const cJSON *lane = cJSON_GetArrayItem(ev, 0), *m = cJSON_GetArrayItem(ev, 2), *q = cJSON_GetArrayItem(ev, 3);
	CHECK_STR(str(lane, "ph"), "M");
	CHECK_STR(str(lane, "name"), "thread_name");
	CHECK_STR(str(cJSON_GetObjectItemCaseSensitive(lane, "args"), "name"), "workers");
	CHECK_STR(str(m, "ph"), "X");
	CHECK_STR(str(m, "name"), "measure 3");
	CHECK(num(m, "tid") == 2);
	CHECK(num(m, "ts") == 500000 && num(m, "dur") == 250000); /* microseconds from the trace's zero */
	CHECK(num(cJSON_GetObjectItemCaseSensitive(m, "args"), "candidates") == 3);
	CHECK_STR(str(q, "name"), "a \"quoted\"\\name\n");
	CHECK(num(q, "dur") == 0);
	cJSON_Delete(doc);

	/* Where the file cannot be written: an error that names why, and nothing left behind. */
	CHECK_INT(kt_trace_write(tr, bad, &err), -1);
	CHECK(err.msg[0] != 0);
	struct stat sb;
	CHECK(stat(bad, &sb) != 0);
	kt_trace_free(tr);

	/* No trace: every call does nothing. */
	kt_trace_lane(NULL, 1, "x");
	kt_trace_span(NULL, 1, "x", 0, 1, NULL);
	CHECK_INT(kt_trace_write(NULL, bad, &err), 0);
	kt_trace_free(NULL);

	unlink(path);
	kt_remove_tree(dir);
	free(path);
	free(bad);
	free(dir);
	return check_done();
}
