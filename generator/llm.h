/* llm.h - a client for OpenAI-compatible chat-completions endpoints (a hosted API, or a local
 * llama.cpp, Ollama or vLLM server).
 *
 * One call is `POST {base}/chat/completions` with the model and the messages; the reply's first
 * choice is returned.  Requests answered 408, 409, 429 or 5xx, and connection failures and
 * timeouts, are retried with exponential backoff; a `Retry-After` header sets the wait instead.
 * All waiting of one client together is bounded (max_wait_ms); a wait that would exceed it ends
 * the call with an error instead.  Token usage is summed over the client's lifetime.
 *
 * The API key is a secret: it goes into the Authorization header and nowhere else.  Every text
 * the client hands back (replies, error messages) has any occurrence of the key replaced by
 * "[redacted]", so callers may print, log and save what they get.
 *
 * The network sits behind a seam: kt_llm_set_transport replaces libcurl with a function (unit
 * tests), kt_llm_set_sleep replaces the real sleep (tests of the backoff).
 */
#ifndef KT_LLM_H
#define KT_LLM_H

#include "util.h"

typedef struct kt_llm_config {
	const char *base_url;    /* e.g. "https://api.openai.com/v1" or "http://127.0.0.1:8080/v1" */
	const char *model;
	const char *api_key;     /* NULL or "": no Authorization header (local servers) */
	long connect_timeout_ms; /* to establish a connection */
	long timeout_ms;         /* for a whole request, connection included */
	int max_retries;         /* retries after the first attempt */
	long backoff_ms;         /* first backoff; doubles after each retry */
	long max_wait_ms;        /* bound on all backoff waits of one call */
	double temperature;      /* < 0: not sent (the server's default) */
	long max_tokens;         /* <= 0: not sent */
} kt_llm_config;

/* The defaults alone (no endpoint, no model). */
void kt_llm_config_defaults(kt_llm_config *c);

typedef struct kt_llm_msg {
	const char *role; /* "system", "user" or "assistant" */
	const char *content;
} kt_llm_msg;

/* What one HTTP exchange gives back; filled by a transport. */
typedef struct kt_http_req {
	const char *url;
	const char *auth_header; /* "Authorization: Bearer ..." or NULL; never log it */
	const char *body;        /* JSON */
	size_t len;
	long connect_timeout_ms, timeout_ms;
} kt_http_req;

typedef struct kt_http_resp {
	long status;          /* HTTP status */
	kt_buf body;
	long retry_after_ms;  /* from a Retry-After header; -1 when none */
} kt_http_resp;

/* A transport performs one request.  0 when a response arrived (whatever its status); -1 when
 * none did (connection refused, timeout, ...) with err saying why; *timed_out is set to 1 when
 * the cause was the timeout.  Transport failures are retried like 5xx answers. */
typedef int (*kt_llm_transport)(void *ctx, const kt_http_req *req, kt_http_resp *resp, int *timed_out,
				kt_err *err);
typedef void (*kt_llm_sleep)(void *ctx, long ms);

/* Totals over the client's lifetime. */
typedef struct kt_llm_usage {
	long requests;          /* HTTP attempts, retries included */
	long retries;
	long prompt_tokens, completion_tokens, total_tokens;
	long waited_ms;         /* backoff waited */
} kt_llm_usage;

/* The first choice of one completion. */
typedef struct kt_llm_reply {
	kt_buf content;
	char finish_reason[32]; /* "stop", "length" (truncated), ... or "" when the server gave none */
	long prompt_tokens, completion_tokens;
} kt_llm_reply;

typedef struct kt_llm kt_llm;

/* Why the last kt_llm_chat failed, so a caller can tell a bad answer (ask again) from a server
 * that cannot be reached or refuses (stop). */
typedef enum kt_llm_fail {
	KT_LLM_OK,
	KT_LLM_UNREACHABLE, /* connection failures or timeouts, after the retries */
	KT_LLM_REFUSED,     /* a non-retryable status, or retryable ones beyond the retries or wait budget */
	KT_LLM_BAD_ANSWER,  /* a 2xx answer that is not the chat-completions JSON */
} kt_llm_fail;

/* Copies the configuration.  NULL with err when the endpoint or the model is missing. */
kt_llm *kt_llm_new(const kt_llm_config *c, kt_err *err);
void kt_llm_free(kt_llm *l);
void kt_llm_set_transport(kt_llm *l, kt_llm_transport fn, void *ctx);
void kt_llm_set_sleep(kt_llm *l, kt_llm_sleep fn, void *ctx);

/* One completion.  0 on success with reply filled (release with kt_llm_reply_free); -1 with err
 * when no usable answer came: a non-retryable status (the server's message quoted), retries or
 * the wait budget exhausted, a body that is not the chat-completions JSON. */
int kt_llm_chat(kt_llm *l, const kt_llm_msg *msgs, int nmsgs, kt_llm_reply *reply, kt_err *err);
void kt_llm_reply_free(kt_llm_reply *r);

kt_llm_fail kt_llm_last_failure(const kt_llm *l);
kt_llm_usage kt_llm_get_usage(const kt_llm *l);
const char *kt_llm_model(const kt_llm *l);
const char *kt_llm_base_url(const kt_llm *l); /* without user:password@, if the URL held any */

/* Replaces every occurrence of the client's key in b with "[redacted]" (no-op without a key). */
void kt_llm_redact(const kt_llm *l, kt_buf *b);

/* Parses a Retry-After value (delta-seconds, fractions accepted, or an HTTP date relative to
 * now_s) into milliseconds; -1 when it does not parse. */
long kt_llm_parse_retry_after(const char *v, long long now_s);

#endif
