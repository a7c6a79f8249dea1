/* agent_int.h - what agent.c (stage 1) and agent_plan.c (stage 2) share; not a public contract. */
#ifndef KT_AGENT_INT_H
#define KT_AGENT_INT_H

#include <cjson/cJSON.h>

#include "agent.h"
#include "space.h"

/* A conversation: messages whose contents it owns. */
typedef struct kt_convo {
	kt_llm_msg *v;
	int n, cap;
} kt_convo;

void kt_convo_add(kt_convo *c, const char *role, const char *content);
void kt_convo_free(kt_convo *c);

/* Transcripts: a JSON object started with the task, one entry per round, finished with the
 * messages, the client's usage and the result, printed and redacted into out. */
cJSON *kt_transcript_start(kt_llm *llm, const char *task);
cJSON *kt_transcript_round(int round, const char *outcome, const char *detail, const kt_llm_reply *r);
void kt_transcript_finish(kt_llm *llm, cJSON *root, const kt_convo *c, const char *result, const char *error,
			  kt_buf *out);

/* The feasible configurations at shape whose launch fits the device; why gets the first
 * configuration that did not fit and the reason.  -1 with err when a constraint cannot be
 * evaluated. */
int kt_agent_fitting_space(const kt_tmpl *t, const int64_t *shape, const kt_target *g, kt_space *out,
			   char *why, size_t whysz, kt_err *err);

/* a[0..an) and b[0..bn) are the same up to the amount of white space between tokens. */
int kt_agent_same_text(const char *a, size_t an, const char *b, size_t bn);

/* 0 when every #include of text names a header by a relative path without "..", else -1 with a
 * diagnostic appended to why (a model's template must not read files of the host). */
int kt_agent_check_includes(const char *text, const char *path, kt_buf *why);

#endif
