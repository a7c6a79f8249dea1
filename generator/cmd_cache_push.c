/* cmd_cache_push.c - `kt cache push`: the records of a directory tier uploaded to the remote
 * cache as a tuning run stores them there (cache.c): each under its key, again as its problem's
 * latest (kt_key_problem) when it is later than the one the remote holds, and each GPU's
 * identity once.  So a remote can start from a project's committed cache/, and the records tuned
 * before the remote kept problems' latest serve the stand-ins and warm starts of an edited
 * template (docs/cache.md).  Unlike a build, a push stops at the remote's first failure, with
 * an error: nothing else depends on it. */
#define _POSIX_C_SOURCE 200809L
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "cmd_cache.h"
#include "cmd_env.h"
#include "record.h"
#include "remote.h"

struct push {
	kt_remote *remote;
	const char *kernel, *gpu;
	char **gpus; /* the GPUs whose identity was uploaded */
	size_t ngpus;
	long pushed, latest, skipped;
	kt_err err; /* the remote's failure */
};

/* 1 when rec is later than the record the remote holds at name (or there is none, or it cannot
 * be read), 0 when not, -1 when the remote failed. */
static int later_than_remote(struct push *p, const char *name, const kt_record *rec)
{
	kt_buf text = {0};
	kt_record there;
	int rc = kt_remote_get(p->remote, name, &text, &p->err);
	if (rc > 0) {
		rc = kt_record_read(text.data, text.len, &there, NULL) != 0 ||
		     kt_record_later(rec->date ? rec->date : "", rec->key, there.date ? there.date : "", there.key);
		kt_record_free(&there);
	} else if (rc == 0)
		rc = 1;
	kt_buf_free(&text);
	return rc;
}

/* The identity of rec's GPU, the first time the push meets that GPU. */
static int push_gpu(struct push *p, const kt_record *rec)
{
	for (size_t i = 0; i < p->ngpus; i++)
		if (!strcmp(p->gpus[i], rec->gpu.name))
			return 0;
	p->gpus = kt_xrealloc(p->gpus, (p->ngpus + 1) * sizeof *p->gpus);
	p->gpus[p->ngpus++] = kt_xstrdup(rec->gpu.name);
	char *doc = kt_record_gpu_json(&rec->gpu);
	kt_buf name = {0};
	kt_cache_gpu_name(rec->gpu.name, &name);
	int rc = kt_remote_put(p->remote, name.data, doc, strlen(doc), &p->err);
	kt_buf_free(&name);
	free(doc);
	return rc;
}

static int visit(void *ctx, const char *path, const char *key)
{
	struct push *p = ctx;
	kt_buf text = {0};
	kt_record rec;
	kt_err why = {0};
	(void)key;
	memset(&rec, 0, sizeof rec);
	if (kt_read_file(path, &text, &why) != 0 || kt_record_read(text.data, text.len, &rec, &why) != 0) {
		fprintf(stderr, "kt: warning: %s: not pushed: %s\n", path, why.msg);
		p->skipped++;
		kt_record_free(&rec);
		kt_buf_free(&text);
		return 0;
	}
	int rc = 0, later = 0;
	if (!(p->kernel && fnmatch(p->kernel, rec.kernel, 0) != 0) && !(p->gpu && strcmp(p->gpu, rec.gpu.name) != 0)) {
		kt_buf name = {0};
		kt_buf_printf(&name, "%s.json", rec.key);
		rc = kt_remote_put(p->remote, name.data, text.data, text.len, &p->err);
		kt_buf_reset(&name);
		kt_cache_problem_name(kt_buf_str(&rec.fields), &name);
		if (rc == 0 && (later = later_than_remote(p, name.data, &rec)) > 0)
			rc = kt_remote_put(p->remote, name.data, text.data, text.len, &p->err);
		kt_buf_free(&name);
		if (rc == 0 && later >= 0)
			rc = push_gpu(p, &rec);
		if (rc == 0 && later >= 0) {
			printf("%s  %s %s %s%s\n", rec.key, rec.kernel, rec.shape, rec.gpu.name,
			       later ? " (its problem's latest)" : "");
			p->pushed++;
			p->latest += later;
		}
		rc = rc == 0 && later >= 0 ? 0 : -1;
	}
	kt_record_free(&rec);
	kt_buf_free(&text);
	return rc;
}

int kt_cache_cmd_push(int argc, char **argv)
{
	struct push p = {0};
	const char *from = NULL, *url = NULL;
	const kt_opt opts[] = {
		{"from", KT_OPT_STR, &from, "DIR", "the directory tier whose records go (default: ./cache)"},
		{"remote", KT_OPT_STR, &url, "URL", "the remote cache (else $KT_REMOTE_CACHE)"},
		{"kernel", KT_OPT_STR, &p.kernel, "PATTERN", "only kernels whose name matches (fnmatch)"},
		{"gpu", KT_OPT_STR, &p.gpu, "NAME", "only records of this GPU"},
		{0},
	};
	const char *pos[1];
	int npos, rc = kt_cache_cmd_parse(opts, argc, argv, pos, 0, &npos,
					  "kt cache push [--from DIR] [--remote URL] [--kernel PATTERN] [--gpu NAME]",
					  "Uploads the whole records of a cache directory (the project's cache/, or a user\n"
					  "cache) to the remote cache, as a tuning run stores them: under their keys, as\n"
					  "their problem's latest where they are later than the remote's (what an edited\n"
					  "template's stand-ins read), and each GPU's identity.");
	if (rc >= 0)
		return rc;
	url = kt_env_or(url, "KT_REMOTE_CACHE");
	if (!url || !url[0]) {
		kt_fail(&p.err, "no remote cache: give --remote URL or set KT_REMOTE_CACHE");
		return kt_cache_cmd_fail(&p.err);
	}
	if (!from)
		from = "cache";
	p.remote = kt_remote_open(url, &p.err);
	if (!p.remote)
		return kt_cache_cmd_fail(&p.err);
	rc = kt_cache_each(from, visit, &p);
	kt_remote_close(p.remote);
	for (size_t i = 0; i < p.ngpus; i++)
		free(p.gpus[i]);
	free(p.gpus);
	if (rc != 0) {
		kt_err e = {0};
		kt_fail(&e, "remote cache %s: %s; %ld record%s pushed before it failed", url, p.err.msg, p.pushed,
			p.pushed == 1 ? "" : "s");
		return kt_cache_cmd_fail(&e);
	}
	printf("pushed %ld record%s from %s to %s (%ld as their problem's latest, %ld unreadable skipped)\n", p.pushed,
	       p.pushed == 1 ? "" : "s", from, url, p.latest, p.skipped);
	return KT_EXIT_OK;
}
