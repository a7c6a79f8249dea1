/* test_llm.c - the chat-completions client through its seams: a scripted transport and a
 * recorded sleep (no network, no waiting).  The HTTP path itself is tested by tests/agent. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cmd_env.h"
#include "llm.h"

#define KEY "sk-unit-test-0123456789abcdef"

typedef struct step {
	int fail;          /* the transport fails (no response) */
	int timed_out;
	long status;
	const char *body;
	long retry_after_ms;
} step;

typedef struct fake {
	const step *steps;
	int n, next;
	char auth[256];
	char body[4096];
	long slept[16];
	int nslept;
} fake;

static int fake_transport(void *ctx, const kt_http_req *req, kt_http_resp *resp, int *timed_out, kt_err *err)
{
	fake *f = ctx;
	snprintf(f->auth, sizeof f->auth, "%s", req->auth_header ? req->auth_header : "(none)");
	snprintf(f->body, sizeof f->body, "%s", req->body);
	if (f->next >= f->n)
		return kt_fail(err, "script exhausted");
	const step *s = &f->steps[f->next++];
	if (s->fail) {
		*timed_out = s->timed_out;
		return kt_fail(err, "%s", s->timed_out ? "Operation timed out" : "Connection refused");
	}
	resp->status = s->status;
	resp->retry_after_ms = s->retry_after_ms ? s->retry_after_ms : -1;
	kt_buf_puts(&resp->body, s->body ? s->body : "");
	return 0;
}

static void fake_sleep(void *ctx, long ms)
{
	fake *f = ctx;
	if (f->nslept < 16)
		f->slept[f->nslept++] = ms;
}

static const char ok_body[] = "{\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":\"hello\"},"
			      "\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":3,"
			      "\"total_tokens\":13}}";

static kt_llm *client(fake *f, const char *key)
{
	kt_llm_config c;
	kt_llm_config_defaults(&c);
	c.base_url = "http://127.0.0.1:9/v1/";
	c.model = "m";
	c.api_key = key;
	c.max_retries = 3;
	c.backoff_ms = 100;
	c.max_wait_ms = 5000;
	kt_err err = {0};
	kt_llm *l = kt_llm_new(&c, &err);
	kt_llm_set_transport(l, fake_transport, f);
	kt_llm_set_sleep(l, fake_sleep, f);
	return l;
}

static int chat(kt_llm *l, kt_llm_reply *r, kt_err *err)
{
	kt_llm_msg m[] = {{"system", "be brief"}, {"user", "hi"}};
	return kt_llm_chat(l, m, 2, r, err);
}

static void test_success_and_usage(void)
{
	step s[] = {{0, 0, 200, ok_body, 0}, {0, 0, 200, ok_body, 0}};
	fake f = {s, 2, 0, "", "", {0}, 0};
	kt_llm *l = client(&f, KEY);
	kt_llm_reply r;
	kt_err err = {0};
	CHECK_INT(chat(l, &r, &err), 0);
	CHECK_STR(kt_buf_str(&r.content), "hello");
	CHECK_STR(r.finish_reason, "stop");
	CHECK_STR(f.auth, "Authorization: Bearer " KEY);
	CHECK(strstr(f.body, "\"model\":\"m\"") != NULL);
	CHECK(strstr(f.body, "{\"role\":\"user\",\"content\":\"hi\"}") != NULL);
	CHECK(strstr(f.body, KEY) == NULL);
	kt_llm_reply_free(&r);
	CHECK_INT(chat(l, &r, &err), 0);
	kt_llm_reply_free(&r);
	kt_llm_usage u = kt_llm_get_usage(l);
	CHECK_INT(u.requests, 2);
	CHECK_INT(u.prompt_tokens, 20);
	CHECK_INT(u.completion_tokens, 6);
	CHECK_INT(u.total_tokens, 26);
	CHECK_INT(u.retries, 0);
	CHECK_STR(kt_llm_base_url(l), "http://127.0.0.1:9/v1");
	kt_llm_free(l);
}

static void test_no_key(void)
{
	step s[] = {{0, 0, 200, ok_body, 0}};
	fake f = {s, 1, 0, "", "", {0}, 0};
	kt_llm *l = client(&f, NULL);
	kt_llm_reply r;
	kt_err err = {0};
	CHECK_INT(chat(l, &r, &err), 0);
	CHECK_STR(f.auth, "(none)");
	kt_llm_reply_free(&r);
	kt_llm_free(l);
}

static void test_backoff(void)
{
	step s[] = {{0, 0, 503, "busy", 0}, {1, 0, 0, NULL, 0}, {0, 0, 200, ok_body, 0}};
	fake f = {s, 3, 0, "", "", {0}, 0};
	kt_llm *l = client(&f, KEY);
	kt_llm_reply r;
	kt_err err = {0};
	CHECK_INT(chat(l, &r, &err), 0);
	CHECK_INT(f.nslept, 2);
	CHECK_INT(f.slept[0], 100);
	CHECK_INT(f.slept[1], 200);
	kt_llm_usage u = kt_llm_get_usage(l);
	CHECK_INT(u.retries, 2);
	CHECK_INT(u.waited_ms, 300);
	kt_llm_reply_free(&r);
	kt_llm_free(l);
}

static void test_retry_after(void)
{
	step s[] = {{0, 0, 429, "{\"error\":{\"message\":\"slow down\"}}", 1500}, {0, 0, 200, ok_body, 0}};
	fake f = {s, 2, 0, "", "", {0}, 0};
	kt_llm *l = client(&f, KEY);
	kt_llm_reply r;
	kt_err err = {0};
	CHECK_INT(chat(l, &r, &err), 0);
	CHECK_INT(f.nslept, 1);
	CHECK_INT(f.slept[0], 1500);
	kt_llm_reply_free(&r);
	kt_llm_free(l);
}

static void test_wait_budget(void)
{
	step s[] = {{0, 0, 429, "{}", 60000}, {0, 0, 200, ok_body, 0}};
	fake f = {s, 2, 0, "", "", {0}, 0};
	kt_llm *l = client(&f, KEY);
	kt_llm_reply r;
	kt_err err = {0};
	CHECK_INT(chat(l, &r, &err), -1);
	CHECK(strstr(err.msg, "beyond the wait budget of 5.0 s") != NULL);
	CHECK(strstr(err.msg, "HTTP 429") != NULL);
	CHECK_INT(f.nslept, 0);
	CHECK_INT(kt_llm_last_failure(l), KT_LLM_REFUSED);
	kt_llm_free(l);
}

static void test_retries_exhausted(void)
{
	step s[] = {{1, 1, 0, NULL, 0}, {1, 1, 0, NULL, 0}, {1, 1, 0, NULL, 0}, {1, 1, 0, NULL, 0}};
	fake f = {s, 4, 0, "", "", {0}, 0};
	kt_llm *l = client(&f, KEY);
	kt_llm_reply r;
	kt_err err = {0};
	CHECK_INT(chat(l, &r, &err), -1);
	CHECK(strstr(err.msg, "after 4 attempts") != NULL);
	CHECK(strstr(err.msg, "no answer within") != NULL);
	CHECK_INT(kt_llm_last_failure(l), KT_LLM_UNREACHABLE);
	CHECK_INT(kt_llm_get_usage(l).requests, 4);
	kt_llm_free(l);
}

static void test_not_retried(void)
{
	step s[] = {{0, 0, 400, "{\"error\":{\"message\":\"bad model name\"}}", 0}, {0, 0, 200, ok_body, 0}};
	fake f = {s, 2, 0, "", "", {0}, 0};
	kt_llm *l = client(&f, KEY);
	kt_llm_reply r;
	kt_err err = {0};
	CHECK_INT(chat(l, &r, &err), -1);
	CHECK(strstr(err.msg, "HTTP 400: bad model name") != NULL);
	CHECK_INT(kt_llm_get_usage(l).requests, 1);
	kt_llm_free(l);
}

static void test_bad_answers(void)
{
	static const char *const bodies[] = {
		"{\"choices\": [",                                  /* truncated */
		"{\"choices\": []}",                                /* no choice */
		"{\"choices\": [{\"message\": {\"content\": 42}}]}", /* off-schema */
		"[1, 2]",
	};
	for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
		step s[] = {{0, 0, 200, bodies[i], 0}};
		fake f = {s, 1, 0, "", "", {0}, 0};
		kt_llm *l = client(&f, KEY);
		kt_llm_reply r;
		kt_err err = {0};
		CHECK_INT(chat(l, &r, &err), -1);
		CHECK_INT(kt_llm_last_failure(l), KT_LLM_BAD_ANSWER);
		CHECK_INT(kt_llm_get_usage(l).requests, 1);
		kt_llm_free(l);
	}
}

static void test_redaction(void)
{
	step s[] = {{0, 0, 200,
		     "{\"choices\":[{\"message\":{\"content\":\"your key is " KEY "!\"},\"finish_reason\":\"length\"}]}",
		     0},
		    {0, 0, 401, "{\"error\":{\"message\":\"invalid key " KEY "\"}}", 0}};
	fake f = {s, 2, 0, "", "", {0}, 0};
	kt_llm *l = client(&f, KEY);
	kt_llm_reply r;
	kt_err err = {0};
	CHECK_INT(chat(l, &r, &err), 0);
	CHECK_STR(kt_buf_str(&r.content), "your key is [redacted]!");
	CHECK_STR(r.finish_reason, "length");
	kt_llm_reply_free(&r);
	CHECK_INT(chat(l, &r, &err), -1);
	CHECK(strstr(err.msg, KEY) == NULL);
	CHECK(strstr(err.msg, "invalid key [redacted]") != NULL);
	kt_buf b = {0};
	kt_buf_puts(&b, KEY "+" KEY);
	kt_llm_redact(l, &b);
	CHECK_STR(kt_buf_str(&b), "[redacted]+[redacted]");
	kt_buf_free(&b);
	kt_llm_free(l);
}

static void test_url_credentials(void)
{
	step st[] = {{0, 0, 403, "{}", 0}};
	fake f = {st, 1, 0, "", "", {0}, 0};
	kt_llm_config c;
	kt_llm_config_defaults(&c);
	c.base_url = "https://me:s3cret@llm.example/v1";
	c.model = "m";
	kt_err err = {0};
	kt_llm *l = kt_llm_new(&c, &err);
	kt_llm_set_transport(l, fake_transport, &f);
	CHECK_STR(kt_llm_base_url(l), "https://llm.example/v1");
	kt_llm_reply r;
	CHECK_INT(chat(l, &r, &err), -1);
	CHECK(strstr(err.msg, "https://llm.example/v1") != NULL && strstr(err.msg, "s3cret") == NULL);
	kt_llm_free(l);
}

static void test_retry_after_parse(void)
{
	CHECK_INT(kt_llm_parse_retry_after("2", 0), 2000);
	CHECK_INT(kt_llm_parse_retry_after(" 1.5\r\n", 0), 1500);
	CHECK_INT(kt_llm_parse_retry_after("0", 0), 0);
	CHECK_INT(kt_llm_parse_retry_after("soon", 0), -1);
	CHECK_INT(kt_llm_parse_retry_after("-3", 0), -1);
	CHECK_INT(kt_llm_parse_retry_after("", 0), -1);
	/* Wed, 21 Oct 2015 07:28:00 GMT is 1445412480. */
	CHECK_INT(kt_llm_parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", 1445412470LL), 10000);
	CHECK_INT(kt_llm_parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", 1445412490LL), 0);
}

static void test_config(void)
{
	kt_llm_config c;
	kt_err err = {0};
	unsetenv("KT_LLM_BASE_URL");
	unsetenv("OPENAI_BASE_URL");
	unsetenv("KT_LLM_API_KEY");
	unsetenv("OPENAI_API_KEY");
	setenv("KT_LLM_MODEL", "m", 1);
	CHECK_INT(kt_env_llm(&c, &err), -1);
	CHECK(strstr(err.msg, "KT_LLM_BASE_URL") != NULL);
	setenv("OPENAI_BASE_URL", "http://b/v1", 1);
	setenv("OPENAI_API_KEY", "k1", 1);
	setenv("KT_LLM_TIMEOUT", "2.5", 1);
	setenv("KT_LLM_RETRIES", "7", 1);
	CHECK_INT(kt_env_llm(&c, &err), 0);
	CHECK_STR(c.base_url, "http://b/v1");
	CHECK_STR(c.api_key, "k1");
	CHECK_INT(c.timeout_ms, 2500);
	CHECK_INT(c.max_retries, 7);
	setenv("KT_LLM_BASE_URL", "http://a/v1", 1);
	setenv("KT_LLM_API_KEY", "k2", 1);
	CHECK_INT(kt_env_llm(&c, &err), 0);
	CHECK_STR(c.base_url, "http://a/v1");
	CHECK_STR(c.api_key, "k2");
	setenv("KT_LLM_TIMEOUT", "ten", 1);
	CHECK_INT(kt_env_llm(&c, &err), -1);
	CHECK(strstr(err.msg, "KT_LLM_TIMEOUT='ten'") != NULL);
	unsetenv("KT_LLM_TIMEOUT");
	unsetenv("KT_LLM_MODEL");
	CHECK_INT(kt_env_llm(&c, &err), -1);
	CHECK(strstr(err.msg, "KT_LLM_MODEL") != NULL);
	CHECK(kt_llm_new(&c, &err) == NULL);
}

int main(void)
{
	test_success_and_usage();
	test_no_key();
	test_backoff();
	test_retry_after();
	test_wait_budget();
	test_retries_exhausted();
	test_not_retried();
	test_bad_answers();
	test_redaction();
	test_url_credentials();
	test_retry_after_parse();
	test_config();
	return check_done();
}
