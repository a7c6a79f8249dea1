/* trace.c - the tuning run's timeline (trace.h). */
#include "trace.h"

#include <stdio.h>
#include <stdlib.h>

struct kt_trace {
	double t0;
	kt_buf events; /* ",\n{...}" each */
};

kt_trace *kt_trace_new(double t0)
{
	kt_trace *tr = kt_xcalloc(1, sizeof *tr);
	tr->t0 = t0;
	return tr;
}

void kt_trace_free(kt_trace *tr)
{
	if (!tr)
		return;
	kt_buf_free(&tr->events);
	free(tr);
}

/* s as the inside of a JSON string. */
static void put_str(kt_buf *b, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			kt_buf_printf(b, "\\%c", c);
		else if (c < 0x20)
			kt_buf_printf(b, "\\u%04x", c);
		else
			kt_buf_add(b, s, 1);
	}
}

static void begin(kt_trace *tr, const char *ph, int lane, const char *name)
{
	kt_buf_printf(&tr->events, "%s{\"ph\":\"%s\",\"pid\":1,\"tid\":%d,\"name\":\"", tr->events.len ? ",\n" : "", ph,
		      lane);
	put_str(&tr->events, name);
	kt_buf_puts(&tr->events, "\"");
}

void kt_trace_lane(kt_trace *tr, int lane, const char *name)
{
	if (!tr)
		return;
	begin(tr, "M", lane, "thread_name");
	kt_buf_puts(&tr->events, ",\"args\":{\"name\":\"");
	put_str(&tr->events, name);
	kt_buf_printf(&tr->events, "\"}},\n{\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"name\":\"thread_sort_index\","
				   "\"args\":{\"sort_index\":%d}}",
		      lane, lane);
}

void kt_trace_span(kt_trace *tr, int lane, const char *name, double t0, double t1, const char *args)
{
	if (!tr)
		return;
	double ts = (t0 - tr->t0) * 1e6, dur = (t1 - t0) * 1e6;
	begin(tr, "X", lane, name);
	kt_buf_printf(&tr->events, ",\"ts\":%.1f,\"dur\":%.1f", ts, dur < 0 ? 0 : dur);
	if (args && *args)
		kt_buf_printf(&tr->events, ",\"args\":{%s}", args);
	kt_buf_puts(&tr->events, "}");
}

int kt_trace_write(const kt_trace *tr, const char *path, kt_err *err)
{
	if (!tr)
		return 0;
	kt_buf doc = {0};
	kt_buf_puts(&doc, "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"tool\":\"kt tune\"},\"traceEvents\":[\n");
	kt_buf_add(&doc, tr->events.data ? tr->events.data : "", tr->events.len);
	kt_buf_puts(&doc, "\n]}\n");
	int rc = kt_write_atomic(path, doc.data, doc.len, err);
	kt_buf_free(&doc);
	return rc;
}
