/* trace.h - a timeline of a tuning run in the Trace Event Format, which Perfetto's UI
 * (ui.perfetto.dev) and Chrome's about:tracing open: the setup, each compile batch and each
 * variant's compile in its slot, the workers' measuring, the final re-timings and the loop's waits
 * for the compiler.  `kt tune --trace FILE` writes one; it shows where a run's seconds went.
 *
 * Every function takes a NULL trace and then does nothing, so the tuner calls them unconditionally.
 * Times are kt_now() seconds; the file gives microseconds since the trace began. */
#ifndef KT_TRACE_H
#define KT_TRACE_H

#include "util.h"

typedef struct kt_trace kt_trace;

/* A trace whose time zero is t0 (kt_now seconds). */
kt_trace *kt_trace_new(double t0);
void kt_trace_free(kt_trace *tr);
/* Names lane (a row of the timeline). */
void kt_trace_lane(kt_trace *tr, int lane, const char *name);
/* A span [t0, t1] named name on lane; args, when not NULL, the members of a JSON object
 * ("\"units\":12,\"nvrtc\":1"), written as they are. */
void kt_trace_span(kt_trace *tr, int lane, const char *name, double t0, double t1, const char *args);
/* The trace as a JSON document to path, atomically.  0, or -1 with err set. */
int kt_trace_write(const kt_trace *tr, const char *path, kt_err *err);

#endif
