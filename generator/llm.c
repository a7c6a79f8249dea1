/* llm.c - the chat-completions client (see llm.h). */
#include "llm.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "json.h"

enum {
	DEFAULT_CONNECT_TIMEOUT_MS = 10000,
	DEFAULT_TIMEOUT_MS = 300000,
	DEFAULT_MAX_RETRIES = 4,
	DEFAULT_BACKOFF_MS = 1000,
	DEFAULT_MAX_WAIT_MS = 120000,
	SERVER_MSG_MAX = 400, /* how much of a server's error body an error quotes */
};

static const char REDACTED[] = "[redacted]";

struct kt_llm {
	char *base_url, *model, *api_key, *url, *auth_header;
	char *shown_url;  /* base_url without user:password@, for messages and transcripts */
	kt_llm_config cfg;
	kt_llm_transport transport;
	void *transport_ctx;
	kt_llm_sleep sleep;
	void *sleep_ctx;
	kt_llm_usage usage;
	kt_llm_fail last;
	int curl_inited;
};

/* ---- configuration ---- */

void kt_llm_config_defaults(kt_llm_config *c)
{
	*c = (kt_llm_config){
		.connect_timeout_ms = DEFAULT_CONNECT_TIMEOUT_MS,
		.timeout_ms = DEFAULT_TIMEOUT_MS,
		.max_retries = DEFAULT_MAX_RETRIES,
		.backoff_ms = DEFAULT_BACKOFF_MS,
		.max_wait_ms = DEFAULT_MAX_WAIT_MS,
		.temperature = -1.0,
	};
}


/* ---- redaction ---- */

static void redact_buf(const char *key, kt_buf *b)
{
	size_t klen = key ? strlen(key) : 0;
	if (!klen || !b->data || !strstr(b->data, key))
		return;
	kt_buf out = {0};
	const char *p = b->data, *hit;
	while ((hit = strstr(p, key))) {
		kt_buf_add(&out, p, (size_t)(hit - p));
		kt_buf_puts(&out, REDACTED);
		p = hit + klen;
	}
	kt_buf_puts(&out, p);
	kt_buf_free(b);
	*b = out;
}

void kt_llm_redact(const kt_llm *l, kt_buf *b) { redact_buf(l->api_key, b); }

static void redact_err(const kt_llm *l, kt_err *err)
{
	if (!err || !l->api_key || !strstr(err->msg, l->api_key))
		return;
	kt_buf b = {0};
	kt_buf_puts(&b, err->msg);
	redact_buf(l->api_key, &b);
	snprintf(err->msg, sizeof err->msg, "%s", kt_buf_str(&b));
	kt_buf_free(&b);
}

/* ---- the libcurl transport ---- */

struct curl_io {
	kt_http_resp *resp;
};

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
	struct curl_io *io = ud;
	kt_buf_add(&io->resp->body, p, size * n);
	return size * n;
}

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
	struct curl_io *io = ud;
	size_t len = size * n;
	static const char name[] = "retry-after:";
	if (len > sizeof name - 1 && !strncasecmp(p, name, sizeof name - 1)) {
		char v[128];
		size_t vl = len - (sizeof name - 1);
		if (vl >= sizeof v)
			vl = sizeof v - 1;
		memcpy(v, p + sizeof name - 1, vl);
		v[vl] = 0;
		io->resp->retry_after_ms = kt_llm_parse_retry_after(v, (long long)time(NULL));
	}
	return len;
}

static int curl_transport(void *ctx, const kt_http_req *req, kt_http_resp *resp, int *timed_out, kt_err *err)
{
	(void)ctx;
	CURL *h = curl_easy_init();
	if (!h)
		return kt_fail_internal(err, "libcurl could not start a request");
	struct curl_io io = {resp};
	struct curl_slist *hdrs = curl_slist_append(NULL, "Content-Type: application/json");
	hdrs = curl_slist_append(hdrs, "Accept: application/json");
	if (req->auth_header)
		hdrs = curl_slist_append(hdrs, req->auth_header);
	char ebuf[CURL_ERROR_SIZE] = "";
	curl_easy_setopt(h, CURLOPT_URL, req->url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, req->body);
	curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->len);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, req->connect_timeout_ms);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, req->timeout_ms);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_USERAGENT, "kt/" KT_VERSION);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &io);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, &io);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, ebuf);
	CURLcode rc = curl_easy_perform(h);
	int ret = 0;
	if (rc == CURLE_OK) {
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &resp->status);
	} else {
		*timed_out = rc == CURLE_OPERATION_TIMEDOUT;
		ret = kt_fail(err, "%s", ebuf[0] ? ebuf : curl_easy_strerror(rc));
	}
	curl_slist_free_all(hdrs);
	curl_easy_cleanup(h);
	return ret;
}

static void real_sleep(void *ctx, long ms)
{
	(void)ctx;
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/* ---- the client ---- */

/* The URL without credentials in its authority part (scheme://user:password@host/...). */
static char *shown_url(const char *url)
{
	const char *auth = strstr(url, "://");
	auth = auth ? auth + 3 : url;
	size_t hostlen = strcspn(auth, "/?#");
	const char *at = memchr(auth, '@', hostlen);
	kt_buf b = {0};
	if (at) {
		kt_buf_add(&b, url, (size_t)(auth - url));
		kt_buf_puts(&b, at + 1);
	} else {
		kt_buf_puts(&b, url);
	}
	return kt_buf_detach(&b);
}

kt_llm *kt_llm_new(const kt_llm_config *c, kt_err *err)
{
	if (!c->base_url || !*c->base_url) {
		kt_fail(err, "no LLM endpoint: set KT_LLM_BASE_URL (or OPENAI_BASE_URL)");
		return NULL;
	}
	if (!c->model || !*c->model) {
		kt_fail(err, "no LLM model: set KT_LLM_MODEL");
		return NULL;
	}
	kt_llm *l = kt_xcalloc(1, sizeof *l);
	l->cfg = *c;
	l->base_url = kt_xstrdup(c->base_url);
	l->model = kt_xstrdup(c->model);
	size_t n = strlen(l->base_url);
	while (n && l->base_url[n - 1] == '/')
		l->base_url[--n] = 0;
	kt_buf b = {0};
	kt_buf_printf(&b, "%s/chat/completions", l->base_url);
	l->url = kt_buf_detach(&b);
	if (c->api_key && *c->api_key) {
		l->api_key = kt_xstrdup(c->api_key);
		kt_buf_printf(&b, "Authorization: Bearer %s", c->api_key);
		l->auth_header = kt_buf_detach(&b);
	}
	l->shown_url = shown_url(l->base_url);
	l->cfg.base_url = l->base_url;
	l->cfg.model = l->model;
	l->cfg.api_key = l->api_key;
	l->transport = curl_transport;
	l->sleep = real_sleep;
	l->curl_inited = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
	return l;
}

void kt_llm_free(kt_llm *l)
{
	if (!l)
		return;
	if (l->curl_inited)
		curl_global_cleanup();
	if (l->auth_header)
		memset(l->auth_header, 0, strlen(l->auth_header));
	if (l->api_key)
		memset(l->api_key, 0, strlen(l->api_key));
	free(l->auth_header);
	free(l->api_key);
	free(l->base_url);
	free(l->shown_url);
	free(l->model);
	free(l->url);
	free(l);
}

void kt_llm_set_transport(kt_llm *l, kt_llm_transport fn, void *ctx)
{
	l->transport = fn ? fn : curl_transport;
	l->transport_ctx = ctx;
}

void kt_llm_set_sleep(kt_llm *l, kt_llm_sleep fn, void *ctx)
{
	l->sleep = fn ? fn : real_sleep;
	l->sleep_ctx = ctx;
}

kt_llm_fail kt_llm_last_failure(const kt_llm *l) { return l->last; }
kt_llm_usage kt_llm_get_usage(const kt_llm *l) { return l->usage; }
const char *kt_llm_model(const kt_llm *l) { return l->model; }
const char *kt_llm_base_url(const kt_llm *l) { return l->shown_url; }

void kt_llm_reply_free(kt_llm_reply *r) { kt_buf_free(&r->content); }

long kt_llm_parse_retry_after(const char *v, long long now_s)
{
	while (*v == ' ' || *v == '\t')
		v++;
	char tmp[128];
	size_t n = strcspn(v, "\r\n");
	if (!n || n >= sizeof tmp)
		return -1;
	memcpy(tmp, v, n);
	tmp[n] = 0;
	while (n && (tmp[n - 1] == ' ' || tmp[n - 1] == '\t'))
		tmp[--n] = 0;
	char *end;
	errno = 0;
	double s = strtod(tmp, &end);
	if (end != tmp && !*end && !errno && s >= 0 && s < 1e7)
		return (long)llround(s * 1000.0);
	time_t t = curl_getdate(tmp, NULL);
	if (t == (time_t)-1)
		return -1;
	long long d = (long long)t - now_s;
	return d <= 0 ? 0 : (long)(d * 1000);
}

static char *request_body(const kt_llm *l, const kt_llm_msg *msgs, int nmsgs)
{
	cJSON *root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "model", l->model);
	cJSON *arr = cJSON_AddArrayToObject(root, "messages");
	for (int i = 0; i < nmsgs; i++) {
		cJSON *m = cJSON_CreateObject();
		cJSON_AddStringToObject(m, "role", msgs[i].role);
		cJSON_AddStringToObject(m, "content", msgs[i].content ? msgs[i].content : "");
		cJSON_AddItemToArray(arr, m);
	}
	if (l->cfg.temperature >= 0)
		cJSON_AddNumberToObject(root, "temperature", l->cfg.temperature);
	if (l->cfg.max_tokens > 0)
		cJSON_AddNumberToObject(root, "max_tokens", (double)l->cfg.max_tokens);
	cJSON_AddBoolToObject(root, "stream", 0);
	char *s = kt_json_text(root, 0);
	cJSON_Delete(root);
	return s;
}

static int retryable_status(long st) { return st == 408 || st == 409 || st == 429 || (st >= 500 && st <= 599); }

/* A short quote of a server's error: error.message from an OpenAI-style body, else the body. */
static void server_message(const kt_buf *body, char *out, size_t outsz)
{
	cJSON *j = cJSON_ParseWithLength(kt_buf_str(body), body->len);
	const cJSON *e = j ? cJSON_GetObjectItemCaseSensitive(j, "error") : NULL;
	const cJSON *m = cJSON_IsObject(e) ? cJSON_GetObjectItemCaseSensitive(e, "message") : e;
	const char *s = cJSON_IsString(m) ? m->valuestring : kt_buf_str(body);
	size_t len = strlen(s), n = len > SERVER_MSG_MAX ? SERVER_MSG_MAX : len;
	snprintf(out, outsz, "%.*s%s", (int)n, s, len > n ? "..." : "");
	for (char *p = out; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	cJSON_Delete(j);
}

static long json_long(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
	return cJSON_IsNumber(v) && v->valuedouble >= 0 ? (long)v->valuedouble : 0;
}

/* Reads choices[0].message.content, finish_reason and usage from a 2xx body. */
static int parse_completion(kt_llm *l, const kt_buf *body, kt_llm_reply *r, kt_err *err)
{
	cJSON *j = cJSON_ParseWithLength(kt_buf_str(body), body->len);
	if (!j)
		return kt_fail(err, "the server's answer is not valid JSON (%zu bytes)", body->len);
	const cJSON *ch = cJSON_GetObjectItemCaseSensitive(j, "choices");
	const cJSON *c0 = cJSON_IsArray(ch) ? cJSON_GetArrayItem(ch, 0) : NULL;
	const cJSON *msg = c0 ? cJSON_GetObjectItemCaseSensitive(c0, "message") : NULL;
	const cJSON *content = msg ? cJSON_GetObjectItemCaseSensitive(msg, "content") : NULL;
	if (!cJSON_IsString(content)) {
		cJSON_Delete(j);
		return kt_fail(err, "the server's answer has no choices[0].message.content string");
	}
	kt_buf_puts(&r->content, content->valuestring);
	const cJSON *fr = cJSON_GetObjectItemCaseSensitive(c0, "finish_reason");
	snprintf(r->finish_reason, sizeof r->finish_reason, "%s", cJSON_IsString(fr) ? fr->valuestring : "");
	const cJSON *u = cJSON_GetObjectItemCaseSensitive(j, "usage");
	if (cJSON_IsObject(u)) {
		r->prompt_tokens = json_long(u, "prompt_tokens");
		r->completion_tokens = json_long(u, "completion_tokens");
		long total = json_long(u, "total_tokens");
		l->usage.prompt_tokens += r->prompt_tokens;
		l->usage.completion_tokens += r->completion_tokens;
		l->usage.total_tokens += total ? total : r->prompt_tokens + r->completion_tokens;
	}
	cJSON_Delete(j);
	redact_buf(l->api_key, &r->content);
	return 0;
}

/* One attempt: 1 = done (success or final failure in *rc), 0 = retry after *wait_ms. */
static int attempt(kt_llm *l, const kt_http_req *req, kt_llm_reply *reply, long *wait_ms, int *rc, char *why,
		   size_t whysz, kt_err *err)
{
	kt_http_resp resp = {.retry_after_ms = -1};
	kt_err terr = {0};
	int timed_out = 0;
	l->usage.requests++;
	*wait_ms = -1;
	if (l->transport(l->transport_ctx, req, &resp, &timed_out, &terr)) {
		l->last = KT_LLM_UNREACHABLE;
		if (timed_out)
			snprintf(why, whysz, "no answer within %.1f s (%.500s)", l->cfg.timeout_ms / 1000.0, terr.msg);
		else
			snprintf(why, whysz, "connection failed: %.500s", terr.msg);
		kt_buf_free(&resp.body);
		return 0;
	}
	if (resp.status >= 200 && resp.status <= 299) {
		*rc = parse_completion(l, &resp.body, reply, err);
		l->last = *rc ? KT_LLM_BAD_ANSWER : KT_LLM_OK;
		kt_buf_free(&resp.body);
		return 1;
	}
	char smsg[SERVER_MSG_MAX + 8];
	server_message(&resp.body, smsg, sizeof smsg);
	snprintf(why, whysz, "HTTP %ld%s%s", resp.status, smsg[0] ? ": " : "", smsg);
	*wait_ms = resp.retry_after_ms;
	l->last = KT_LLM_REFUSED;
	kt_buf_free(&resp.body);
	if (retryable_status(resp.status))
		return 0;
	*rc = kt_fail(err, "the LLM server at %s refused the request: %s", l->shown_url, why);
	return 1;
}

int kt_llm_chat(kt_llm *l, const kt_llm_msg *msgs, int nmsgs, kt_llm_reply *reply, kt_err *err)
{
	*reply = (kt_llm_reply){0};
	char *body = request_body(l, msgs, nmsgs);
	kt_http_req req = {l->url, l->auth_header, body, strlen(body), l->cfg.connect_timeout_ms, l->cfg.timeout_ms};
	long waited = 0;
	int rc = -1;
	char why[1024] = "";
	for (int n = 0;; n++) {
		long wait;
		if (attempt(l, &req, reply, &wait, &rc, why, sizeof why, err))
			break;
		if (n >= l->cfg.max_retries) {
			rc = kt_fail(err, "the LLM server at %s gave no usable answer after %d attempts; last: %s",
				     l->shown_url, n + 1, why);
			break;
		}
		if (wait < 0)
			wait = l->cfg.backoff_ms << (n < 20 ? n : 20);
		if (waited + wait > l->cfg.max_wait_ms) {
			rc = kt_fail(err, "the LLM server at %s asks to wait %.1f s more, beyond the wait budget of %.1f s; "
					  "last: %s",
				     l->shown_url, wait / 1000.0, l->cfg.max_wait_ms / 1000.0, why);
			break;
		}
		l->sleep(l->sleep_ctx, wait);
		waited += wait;
		l->usage.waited_ms += wait;
		l->usage.retries++;
	}
	free(body);
	if (rc)
		kt_llm_reply_free(reply);
	redact_err(l, err);
	return rc;
}
