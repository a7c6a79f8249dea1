/* remote.h - the remote tier: records over HTTP (GET/HEAD to look up, PUT to store), as served
 * by nginx WebDAV or any server that answers GET/HEAD/PUT on plain paths.  A file called NAME
 * lives at <url>/v<format>/NAME: the record of key K is "K.json", the latest record of problem P
 * (key.h, kt_key_problem) "problem/P.json", the identity of a GPU "gpu/<its name>.json" (see
 * cache.c).  Names are percent-encoded in URLs.
 *
 * Timeouts are short (KT_REMOTE_CONNECT_MS to connect, KT_REMOTE_TOTAL_MS for a whole request)
 * because a remote cache is an optimisation: the caller treats any failure as "no remote". */
#ifndef KT_REMOTE_H
#define KT_REMOTE_H

#include <stddef.h>

#include "util.h"

#define KT_REMOTE_CONNECT_MS 1000L
#define KT_REMOTE_TOTAL_MS 3000L
#define KT_REMOTE_MAX_BYTES (16L << 20) /* a larger answer is not a record */

typedef struct kt_remote kt_remote;

/* url: http://host[:port][/prefix] (or https).  NULL with err for another scheme. */
kt_remote *kt_remote_open(const char *url, kt_err *err);
/* 1 and the body when the file exists, 0 when the server says it does not (404), -1 with err
 * when the request failed (no connection, timeout, another status). */
int kt_remote_get(kt_remote *r, const char *name, kt_buf *body, kt_err *err);
/* 1 when the file exists, 0 when not, -1 with err on failure. */
int kt_remote_head(kt_remote *r, const char *name, kt_err *err);
/* Uploads a file.  0 on success (2xx), -1 with err. */
int kt_remote_put(kt_remote *r, const char *name, const char *data, size_t len, kt_err *err);
/* The URL of a file (the caller frees it). */
char *kt_remote_url(const kt_remote *r, const char *name);
void kt_remote_close(kt_remote *r);

#endif
