/* remote.c - the remote HTTP tier through libcurl (see remote.h). */
#define _POSIX_C_SOURCE 200809L
#include "remote.h"

#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "key.h"

struct kt_remote {
	char *base; /* the URL without a trailing slash */
	CURL *curl;
};

kt_remote *kt_remote_open(const char *url, kt_err *err)
{
	if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0)
		return kt_fail(err, "remote cache '%s': only http:// and https:// URLs are supported", url), NULL;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return kt_fail_internal(err, "libcurl failed to initialise"), NULL;
	kt_remote *r = kt_xcalloc(1, sizeof *r);
	r->base = kt_xstrdup(url);
	for (size_t n = strlen(r->base); n > 0 && r->base[n - 1] == '/'; n--)
		r->base[n - 1] = '\0';
	r->curl = curl_easy_init();
	if (!r->curl) {
		kt_remote_close(r);
		return kt_fail_internal(err, "libcurl failed to create a handle"), NULL;
	}
	return r;
}

void kt_remote_close(kt_remote *r)
{
	if (!r)
		return;
	if (r->curl)
		curl_easy_cleanup(r->curl);
	free(r->base);
	free(r);
	curl_global_cleanup();
}

char *kt_remote_url(const kt_remote *r, const char *name)
{
	static const char safe[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/";
	kt_buf b = {0};
	kt_buf_printf(&b, "%s/v%d/", r->base, KT_KEY_FORMAT);
	for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
		if (strchr(safe, *p))
			kt_buf_putc(&b, (char)*p);
		else
			kt_buf_printf(&b, "%%%02X", *p);
	}
	return kt_buf_detach(&b);
}

static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
	kt_buf *body = ctx;
	size_t len = size * n;
	if (body->len + len > (size_t)KT_REMOTE_MAX_BYTES)
		return 0; /* makes curl fail the transfer */
	kt_buf_add(body, p, len);
	return len;
}

static size_t discard(char *p, size_t size, size_t n, void *ctx)
{
	(void)p;
	(void)ctx;
	return size * n;
}

struct upload {
	const char *data;
	size_t left;
};

static size_t on_read(char *p, size_t size, size_t n, void *ctx)
{
	struct upload *u = ctx;
	size_t len = size * n < u->left ? size * n : u->left;
	memcpy(p, u->data, len);
	u->data += len;
	u->left -= len;
	return len;
}

/* Sets the options every request shares; the caller adds its method. */
static void prepare(kt_remote *r, const char *url)
{
	CURL *c = r->curl;
	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, KT_REMOTE_CONNECT_MS);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, KT_REMOTE_TOTAL_MS);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "kt/" KT_VERSION);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
}

/* Performs the request; the HTTP status in *status, or -1 with err. */
static int perform(kt_remote *r, const char *method, const char *url, long *status, kt_err *err)
{
	CURLcode rc = curl_easy_perform(r->curl);
	if (rc != CURLE_OK)
		return kt_fail_internal(err, "%s %s: %s", method, url, curl_easy_strerror(rc));
	curl_easy_getinfo(r->curl, CURLINFO_RESPONSE_CODE, status);
	return 0;
}

/* GET or HEAD: 1 found, 0 absent, -1 failure. */
static int fetch(kt_remote *r, const char *name, kt_buf *body, kt_err *err)
{
	const char *method = body ? "GET" : "HEAD";
	char *url = kt_remote_url(r, name);
	prepare(r, url);
	if (body) {
		curl_easy_setopt(r->curl, CURLOPT_WRITEFUNCTION, on_body);
		curl_easy_setopt(r->curl, CURLOPT_WRITEDATA, body);
	} else {
		curl_easy_setopt(r->curl, CURLOPT_NOBODY, 1L);
	}
	long status = 0;
	int rc = perform(r, method, url, &status, err);
	if (rc == 0 && status == 200)
		rc = 1;
	else if (rc == 0 && status != 404)
		rc = kt_fail_internal(err, "%s %s: HTTP status %ld", method, url, status);
	free(url);
	return rc;
}

int kt_remote_get(kt_remote *r, const char *name, kt_buf *body, kt_err *err)
{
	kt_buf_reset(body);
	int rc = fetch(r, name, body, err);
	if (rc == 1 && !body->data)
		kt_buf_add(body, "", 0);
	return rc;
}

int kt_remote_head(kt_remote *r, const char *name, kt_err *err) { return fetch(r, name, NULL, err); }

int kt_remote_put(kt_remote *r, const char *name, const char *data, size_t len, kt_err *err)
{
	char *url = kt_remote_url(r, name);
	struct upload u = {data, len};
	prepare(r, url);
	curl_easy_setopt(r->curl, CURLOPT_UPLOAD, 1L);
	curl_easy_setopt(r->curl, CURLOPT_READFUNCTION, on_read);
	curl_easy_setopt(r->curl, CURLOPT_READDATA, &u);
	curl_easy_setopt(r->curl, CURLOPT_INFILESIZE_LARGE, (curl_off_t)len);
	long status = 0;
	int rc = perform(r, "PUT", url, &status, err);
	if (rc == 0 && (status < 200 || status > 299))
		rc = kt_fail_internal(err, "PUT %s: HTTP status %ld", url, status);
	free(url);
	return rc;
}
