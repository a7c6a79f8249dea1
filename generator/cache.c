/* cache.c - the three tiers of the tuning cache (see cache.h and docs/cache.md). */
#define _POSIX_C_SOURCE 200809L
#include "cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "json.h"
#include "remote.h"

const char *const kt_tier_names[KT_NTIERS] = {"user", "project", "remote"};

/* Test seam: a store sleeps this long between writing its temporary file and renaming it. */

struct kt_cache {
	char *dir[KT_NTIERS]; /* directory tiers; dir[KT_TIER_REMOTE] stays NULL */
	char *remote_url;
	kt_remote *remote;    /* NULL when none or switched off */
	int gpu_put;          /* this run uploaded its GPU's identity to the remote */
	int read_only;
	long store_pause_ms;
	char *retune;
	void (*warn)(void *ctx, const char *msg);
	void *warn_ctx;
	kt_cache_stats stats;
};

/* ---- paths ---- */

static char *version_dir(const char *dir)
{
	char name[16];
	snprintf(name, sizeof name, "v%d", KT_KEY_FORMAT);
	return kt_path_join(dir, name);
}

char *kt_cache_record_path(const char *dir, const char *key)
{
	kt_buf b = {0};
	kt_buf_printf(&b, "v%d/%.2s/%s.json", KT_KEY_FORMAT, key, key);
	char *p = kt_path_join(dir, b.data);
	kt_buf_free(&b);
	return p;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The names in dir that keep(name) accepts, sorted.  *n gets the count. */
static char **list_dir(const char *dir, int (*keep)(const char *name), size_t *n)
{
	*n = 0;
	DIR *d = opendir(dir);
	if (!d)
		return NULL;
	char **names = NULL;
	size_t cap = 0;
	for (struct dirent *e; (e = readdir(d));) {
		if (!keep(e->d_name))
			continue;
		if (*n == cap)
			names = kt_xrealloc(names, (cap = cap ? 2 * cap : 64) * sizeof *names);
		names[(*n)++] = kt_xstrdup(e->d_name);
	}
	closedir(d);
	if (*n)
		qsort(names, *n, sizeof *names, cmp_str);
	return names;
}

static void free_list(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

static int is_fanout(const char *name)
{
	char tmp[KT_KEY_HEX];
	if (strlen(name) != 2)
		return 0;
	snprintf(tmp, sizeof tmp, "%s%030d", name, 0);
	return kt_key_is_hex(tmp);
}

/* "K.json" with K a key; temporary files ("K.json.tmp.PID.XXXXXX") are not records. */
static int is_record(const char *name)
{
	size_t n = strlen(name);
	if (n != KT_KEY_HEX - 1 + 5 || strcmp(name + n - 5, ".json") != 0)
		return 0;
	char key[KT_KEY_HEX];
	memcpy(key, name, KT_KEY_HEX - 1);
	key[KT_KEY_HEX - 1] = '\0';
	return kt_key_is_hex(key);
}

int kt_cache_each(const char *dir, int (*visit)(void *ctx, const char *path, const char *key), void *ctx)
{
	char *vdir = version_dir(dir);
	size_t nsub;
	char **subs = list_dir(vdir, is_fanout, &nsub);
	int rc = 0;
	for (size_t i = 0; i < nsub && rc == 0; i++) {
		char *sub = kt_path_join(vdir, subs[i]);
		size_t nrec;
		char **recs = list_dir(sub, is_record, &nrec);
		for (size_t j = 0; j < nrec && rc == 0; j++) {
			char *path = kt_path_join(sub, recs[j]);
			recs[j][KT_KEY_HEX - 1] = '\0';
			rc = visit(ctx, path, recs[j]);
			free(path);
		}
		free_list(recs, nrec);
		free(sub);
	}
	free_list(subs, nsub);
	free(vdir);
	return rc;
}

/* ---- open and close ---- */

kt_cache *kt_cache_open(const kt_cache_opts *o, kt_err *err)
{
	kt_cache *c = kt_xcalloc(1, sizeof *c);
	if (!o->user_dir || !*o->user_dir) {
		free(c);
		return kt_fail(err, "no cache directory: set KT_CACHE_DIR (or XDG_CACHE_HOME or HOME)"), NULL;
	}
	c->dir[KT_TIER_USER] = kt_xstrdup(o->user_dir);
	c->store_pause_ms = o->store_pause_ms;
	if (o->project_dir && *o->project_dir)
		c->dir[KT_TIER_PROJECT] = kt_xstrdup(o->project_dir);
	const char *url = o->remote;
	c->read_only = o->read_only;
	c->retune = o->retune ? kt_xstrdup(o->retune[0] ? o->retune : "*") : NULL;
	c->warn = o->warn;
	c->warn_ctx = o->warn_ctx;
	if (url && *url) {
		/* A remote that cannot be used is reported and left out; it never fails a build. */
		kt_err why = {0};
		c->remote_url = kt_xstrdup(url);
		c->remote = kt_remote_open(url, &why);
		if (!c->remote)
			kt_say(c->warn, c->warn_ctx, "%s; the remote cache is not used", why.msg);
	}
	return c;
}

static const char *const stat_names[] = {
	"user.hits", "user.misses", "project.hits", "project.misses", "remote.hits", "remote.misses",
	"corrupt", "retuned", "stores", "remote_errors",
};
#define NSTATS (sizeof stat_names / sizeof stat_names[0])

/* The counters in stat_names order. */
static long *stat_slot(kt_cache_stats *s, size_t i)
{
	if (i < 2 * KT_NTIERS)
		return i % 2 ? &s->misses[i / 2] : &s->hits[i / 2];
	long *rest[] = {&s->corrupt, &s->retuned, &s->stores, &s->remote_errors};
	return rest[i - 2 * KT_NTIERS];
}

static void stats_parse(const char *text, size_t len, kt_cache_stats *out)
{
	cJSON *doc = cJSON_ParseWithLength(text, len);
	for (size_t i = 0; i < NSTATS; i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, stat_names[i]);
		if (cJSON_IsNumber(v))
			*stat_slot(out, i) += (long)v->valuedouble;
	}
	cJSON_Delete(doc);
}

void kt_cache_stats_load(const char *dir, kt_cache_stats *out)
{
	memset(out, 0, sizeof *out);
	char *vdir = version_dir(dir), *path = kt_path_join(vdir, "stats.json");
	kt_buf text = {0};
	if (kt_read_file(path, &text, NULL) == 0)
		stats_parse(text.data, text.len, out);
	kt_buf_free(&text);
	free(path);
	free(vdir);
}

static int stats_any(const kt_cache_stats *s)
{
	kt_cache_stats zero = {0};
	return memcmp(s, &zero, sizeof zero) != 0;
}

/* Adds s to <dir>/v<N>/stats.json under an exclusive lock, so concurrent runs add up. */
static int stats_add(const char *dir, const kt_cache_stats *s, kt_err *err)
{
	char *vdir = version_dir(dir), *lock = kt_path_join(vdir, "stats.lock"), *path = kt_path_join(vdir, "stats.json");
	int rc = kt_mkdirs(vdir, err), fd = -1;
	if (rc == 0 && ((fd = open(lock, O_RDWR | O_CREAT, 0644)) < 0 || flock(fd, LOCK_EX) != 0))
		rc = kt_fail_internal(err, "%s: cannot lock: %s", lock, strerror(errno));
	if (rc == 0) {
		kt_cache_stats total;
		kt_cache_stats_load(dir, &total);
		cJSON *doc = cJSON_CreateObject();
		for (size_t i = 0; i < NSTATS; i++)
			cJSON_AddNumberToObject(doc, stat_names[i],
						(double)(*stat_slot(&total, i) + *stat_slot((kt_cache_stats *)s, i)));
		char *text = kt_json_text(doc, 1);
		cJSON_Delete(doc);
		rc = kt_write_atomic(path, text, strlen(text), err);
		free(text);
	}
	if (fd >= 0)
		close(fd); /* releases the lock */
	free(vdir);
	free(lock);
	free(path);
	return rc;
}

int kt_cache_close(kt_cache *c, kt_err *err)
{
	if (!c)
		return 0;
	int rc = 0;
	if (!c->read_only && stats_any(&c->stats))
		rc = stats_add(c->dir[KT_TIER_USER], &c->stats, err);
	kt_remote_close(c->remote);
	for (int i = 0; i < KT_NTIERS; i++)
		free(c->dir[i]);
	free(c->remote_url);
	free(c->retune);
	free(c);
	return rc;
}

const char *kt_cache_dir(const kt_cache *c, kt_tier tier) { return c->dir[tier]; }
const kt_cache_stats *kt_cache_run_stats(const kt_cache *c) { return &c->stats; }
int kt_cache_read_only(const kt_cache *c) { return c->read_only; }
struct kt_remote *kt_cache_remote(kt_cache *c) { return c->remote; }

int kt_cache_retune(const kt_cache *c, const char *kernel)
{
	return c->retune && fnmatch(c->retune, kernel, 0) == 0;
}

/* ---- lookup ---- */

/* Switches the remote off after its first failure, saying so once. */
static void remote_failed(kt_cache *c, const char *why)
{
	kt_say(c->warn, c->warn_ctx, "remote cache %s: %s; not used for the rest of this run", c->remote_url, why);
	c->stats.remote_errors++;
	kt_remote_close(c->remote);
	c->remote = NULL;
}

/* Checks a record's text against the lookup: 0 with cfg filled, or -1 with why. */
static int check_record(const kt_buf *text, const kt_key *k, const kt_tmpl *t, const int64_t *shape,
			uint16_t *cfg, kt_err *why)
{
	kt_record r;
	int rc = kt_record_read(text->data, text->len, &r, why);
	if (rc == 0)
		rc = kt_record_match(&r, k, t, shape, cfg, why);
	kt_record_free(&r);
	return rc;
}

static void copy_up(kt_cache *c, const kt_key *k, const kt_buf *text)
{
	if (c->read_only)
		return;
	char *path = kt_cache_record_path(c->dir[KT_TIER_USER], k->hex), *dir = kt_path_dir(path);
	kt_err err = {0};
	if (kt_mkdirs(dir, &err) != 0 || kt_write_atomic(path, text->data, text->len, &err) != 0)
		kt_say(c->warn, c->warn_ctx, "cannot copy a record into the user cache: %s", err.msg);
	free(dir);
	free(path);
}

/* 1 hit, 0 miss (absent or unusable) in one directory tier. */
static int lookup_dir(kt_cache *c, kt_tier tier, const kt_key *k, const kt_tmpl *t, const int64_t *shape,
		      uint16_t *cfg, kt_buf *text)
{
	char *path = kt_cache_record_path(c->dir[tier], k->hex);
	kt_err why = {0};
	int hit = 0;
	if (kt_read_file(path, text, &why) == 0) {
		if (check_record(text, k, t, shape, cfg, &why) == 0)
			hit = 1;
		else {
			c->stats.corrupt++;
			kt_say(c->warn, c->warn_ctx, "cache record %s: %s; treated as a miss", path, why.msg);
		}
	} else if (access(path, F_OK) == 0 || errno != ENOENT) {
		kt_say(c->warn, c->warn_ctx, "%s; treated as a miss", why.msg);
	}
	free(path);
	return hit;
}

static int lookup_remote(kt_cache *c, const kt_key *k, const kt_tmpl *t, const int64_t *shape, uint16_t *cfg,
			 kt_buf *text)
{
	kt_err why = {0};
	char name[KT_KEY_HEX + 8];
	snprintf(name, sizeof name, "%s.json", k->hex);
	int rc = kt_remote_get(c->remote, name, text, &why);
	if (rc < 0) {
		remote_failed(c, why.msg);
		return 0;
	}
	if (rc == 0)
		return 0;
	if (check_record(text, k, t, shape, cfg, &why) != 0) {
		c->stats.corrupt++;
		kt_buf msg = {0};
		kt_buf_printf(&msg, "record %s is unusable: %s", k->hex, why.msg);
		remote_failed(c, msg.data);
		kt_buf_free(&msg);
		return 0;
	}
	return 1;
}

void kt_cache_problem_name(const char *fields, kt_buf *out)
{
	char problem[KT_KEY_HEX];
	kt_key_problem(fields, problem);
	kt_buf_printf(out, "problem/%s.json", problem);
}

void kt_cache_gpu_name(const char *gpu, kt_buf *out) { kt_buf_printf(out, "gpu/%s.json", gpu); }

int kt_cache_remote_other_version(kt_cache *c, const kt_key *k, kt_record *rec)
{
	if (!c->remote)
		return 0;
	kt_buf text = {0}, file = {0};
	kt_cache_problem_name(kt_buf_str(&k->fields), &file);
	const char *name = file.data;
	kt_err why = {0};
	int rc = kt_remote_get(c->remote, name, &text, &why);
	if (rc < 0)
		remote_failed(c, why.msg);
	else if (rc > 0 && kt_record_read(text.data, text.len, rec, &why) != 0) {
		kt_buf msg = {0};
		kt_buf_printf(&msg, "%s is unusable: %s", name, why.msg);
		remote_failed(c, msg.data);
		kt_buf_free(&msg);
		kt_record_free(rec);
		rc = 0;
	} else if (rc > 0 && !kt_key_same_problem(kt_buf_str(&rec->fields), kt_buf_str(&k->fields))) {
		kt_buf msg = {0};
		kt_buf_printf(&msg, "%s holds the record %s of another problem", name, rec->key);
		remote_failed(c, msg.data);
		kt_buf_free(&msg);
		kt_record_free(rec);
		rc = 0;
	} else if (rc > 0 && !strcmp(rec->key, k->hex)) {
		kt_record_free(rec); /* this version's own record: a lookup would have hit it */
		rc = 0;
	}
	kt_buf_free(&text);
	kt_buf_free(&file);
	return rc > 0;
}

int kt_cache_lookup(kt_cache *c, const kt_key *k, const kt_problem *p, uint16_t *cfg, kt_tier *tier,
		    kt_tune_result *r)
{
	const kt_tmpl *t = p->tmpl;
	const int64_t *shape = p->shape;
	if (r) {
		memset(r, 0, sizeof *r);
		r->best = -1;
	}
	if (kt_cache_retune(c, t->kernel)) {
		c->stats.retuned++;
		return 0;
	}
	kt_buf text = {0};
	int hit = 0;
	for (int i = 0; i < KT_NTIERS && !hit; i++) {
		if (i == KT_TIER_REMOTE ? !c->remote : !c->dir[i])
			continue;
		hit = i == KT_TIER_REMOTE ? lookup_remote(c, k, t, shape, cfg, &text)
					  : lookup_dir(c, (kt_tier)i, k, t, shape, cfg, &text);
		if (!hit) {
			c->stats.misses[i]++;
			continue;
		}
		c->stats.hits[i]++;
		if (tier)
			*tier = (kt_tier)i;
		if (i != KT_TIER_USER)
			copy_up(c, k, &text);
	}
	kt_record rec;
	if (hit && r && kt_record_read(text.data, text.len, &rec, NULL) == 0) /* checked by the lookup */
		kt_record_result(&rec, t, r);
	if (hit && r)
		kt_record_free(&rec);
	kt_buf_free(&text);
	return hit;
}

/* ---- store ---- */

static void store_pause(void *ctx)
{
	long ms = *(long *)ctx;
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Uploads a record, again as its problem's latest (kt_cache_remote_other_version), and once per
 * run the GPU's identity (for kt_cache_find_gpu elsewhere). */
static void store_remote(kt_cache *c, const kt_key *k, const kt_gpu_id *gpu, const char *text, size_t len)
{
	kt_err why = {0};
	kt_buf name = {0};
	kt_buf_printf(&name, "%s.json", k->hex);
	int rc = kt_remote_put(c->remote, name.data, text, len, &why);
	if (rc == 0) {
		kt_buf_reset(&name);
		kt_cache_problem_name(kt_buf_str(&k->fields), &name);
		rc = kt_remote_put(c->remote, name.data, text, len, &why);
	}
	if (rc == 0 && gpu && !c->gpu_put) {
		char *doc = kt_record_gpu_json(gpu);
		kt_buf_reset(&name);
		kt_cache_gpu_name(gpu->name, &name);
		rc = kt_remote_put(c->remote, name.data, doc, strlen(doc), &why);
		c->gpu_put = rc == 0;
		free(doc);
	}
	if (rc != 0)
		remote_failed(c, why.msg);
	kt_buf_free(&name);
}

int kt_cache_store(kt_cache *c, const kt_key *k, const kt_problem *p, const kt_tune_result *r,
		   const kt_record_history *h, kt_err *err)
{
	if (c->read_only)
		return 0;
	const kt_gpu_id *gpu = &p->target->id;
	char *text = kt_record_json(k, p, r, h, err);
	if (!text)
		return -1;
	size_t len = strlen(text);
	char *path = kt_cache_record_path(c->dir[KT_TIER_USER], k->hex), *dir = kt_path_dir(path);
	long ms = c->store_pause_ms;
	int rc = kt_mkdirs(dir, err);
	if (rc == 0)
		rc = kt_write_atomic_cb(path, text, len, ms > 0 ? store_pause : NULL, &ms, err);
	if (rc == 0)
		c->stats.stores++;
	if (rc == 0 && c->remote)
		store_remote(c, k, gpu, text, len);
	free(dir);
	free(path);
	free(text);
	return rc;
}

/* ---- the GPU of a name ---- */

struct gpu_search {
	const char *name;
	int plain;        /* name needs no escaping in JSON, so a record of it contains it verbatim */
	kt_gpu_id best;
	char date[32];
	int found;
};

static int visit_gpu(void *ctx, const char *path, const char *key)
{
	(void)key;
	struct gpu_search *s = ctx;
	kt_buf text = {0};
	kt_record r = {0};
	/* Most records are of other GPUs: a substring test spares parsing them. */
	if (kt_read_file(path, &text, NULL) == 0 && (!s->plain || strstr(text.data, s->name)) &&
	    kt_record_read_head(text.data, text.len, &r, NULL) == 0 && !strcmp(r.gpu.name, s->name)) {
		const char *date = r.date ? r.date : "";
		if (!s->found || strcmp(date, s->date) > 0) {
			s->best = r.gpu;
			snprintf(s->date, sizeof s->date, "%s", date);
			s->found = 1;
		}
	}
	kt_record_free(&r);
	kt_buf_free(&text);
	return 0;
}

/* The identity the remote keeps for a GPU name (uploaded with that GPU's records). */
static int find_gpu_remote(kt_cache *c, const char *name, kt_gpu_id *out)
{
	kt_buf path = {0}, text = {0};
	kt_err why = {0};
	kt_cache_gpu_name(name, &path);
	int rc = kt_remote_get(c->remote, path.data, &text, &why);
	if (rc > 0 && kt_record_gpu_read(text.data, text.len, name, out, &why) != 0) {
		kt_buf msg = {0};
		kt_buf_printf(&msg, "the identity of GPU '%s' is unusable: %s", name, why.msg);
		remote_failed(c, msg.data);
		kt_buf_free(&msg);
		rc = 0;
	} else if (rc < 0) {
		remote_failed(c, why.msg);
		rc = 0;
	}
	kt_buf_free(&path);
	kt_buf_free(&text);
	return rc;
}

/* The value of field name in a field text ("name=value\n" lines), or NULL; *n its length. */
static const char *field_value(const char *fields, const char *name, size_t *n)
{
	size_t nl = strlen(name);
	for (const char *p = fields; p && *p;) {
		size_t l = strcspn(p, "\n");
		if (l > nl && !strncmp(p, name, nl) && p[nl] == '=') {
			*n = l - nl - 1;
			return p + nl + 1;
		}
		p += l + (p[l] != 0);
	}
	return NULL;
}

static int same_field(const char *a, const char *b, const char *name)
{
	size_t na = 0, nb = 0;
	const char *va = field_value(a, name, &na), *vb = field_value(b, name, &nb);
	return va && vb && na == nb && !memcmp(va, vb, na);
}

struct closest {
	const char *want; /* the missing key's fields */
	kt_buf best;      /* the closest record's fields */
	int best_diff;
};

/* The fields in which two field texts differ, by name: each line of a whose value b does not share. */
static int count_diff(const char *a, const char *b, kt_buf *names)
{
	int n = 0;
	for (const char *p = a; *p;) {
		size_t l = strcspn(p, "\n"), eq = strcspn(p, "=");
		if (eq < l) {
			char name[64];
			snprintf(name, sizeof name, "%.*s", (int)(eq < sizeof name ? eq : sizeof name - 1), p);
			if (!same_field(a, b, name)) {
				n++;
				if (names)
					kt_buf_printf(names, "%s%s", names->len ? "\n" : "", name);
			}
		}
		p += l + (p[l] != 0);
	}
	return n;
}

static int visit_closest(void *ctx, const char *path, const char *key)
{
	(void)key;
	struct closest *s = ctx;
	kt_buf text = {0};
	kt_record r = {0};
	if (kt_read_file(path, &text, NULL) == 0 && kt_record_read_head(text.data, text.len, &r, NULL) == 0) {
		const char *f = kt_buf_str(&r.fields);
		if (same_field(f, s->want, "kernel") && same_field(f, s->want, "shape") && same_field(f, s->want, "gpu.name")) {
			int d = count_diff(s->want, f, NULL);
			if (d > 0 && (!s->best.len || d < s->best_diff)) {
				kt_buf_reset(&s->best);
				kt_buf_puts(&s->best, f);
				s->best_diff = d;
			}
		}
	}
	kt_record_free(&r);
	kt_buf_free(&text);
	return 0;
}

int kt_cache_closest(kt_cache *c, const kt_key *k, kt_buf *why)
{
	struct closest s = {.want = kt_buf_str(&k->fields)};
	for (int i = 0; i < KT_TIER_REMOTE; i++)
		if (c->dir[i])
			kt_cache_each(c->dir[i], visit_closest, &s);
	if (!s.best.len)
		return 0;
	kt_buf names = {0};
	count_diff(s.want, kt_buf_str(&s.best), &names);
	int first = 1;
	for (const char *p = kt_buf_str(&names); *p; first = 0) {
		size_t l = strcspn(p, "\n"), na = 0, nb = 0;
		char name[64];
		snprintf(name, sizeof name, "%.*s", (int)l, p);
		const char *va = field_value(s.want, name, &na), *vb = field_value(kt_buf_str(&s.best), name, &nb);
		if (!strncmp(name, "source", 6) || !strncmp(name, "include.", 8) || !strncmp(name, "param.", 6) ||
		    !strncmp(name, "require.", 8))
			kt_buf_printf(why, "%s%s", first ? "" : "; ", name); /* hashes and spaces: the name says enough */
		else
			kt_buf_printf(why, "%s%s: here '%.*s', in the record '%.*s'", first ? "" : "; ", name, (int)na, va ? va : "",
				      (int)nb, vb ? vb : "");
		p += l + (p[l] != 0);
	}
	kt_buf_free(&names);
	kt_buf_free(&s.best);
	return 1;
}

int kt_cache_find_gpu(kt_cache *c, const char *name, kt_gpu_id *out)
{
	struct gpu_search s = {.name = name, .plain = 1};
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		s.plain &= *p >= 0x20 && *p != '"' && *p != '\\' && *p != '/' && *p < 0x7f;
	for (int i = 0; i < KT_NTIERS; i++)
		if (c->dir[i])
			kt_cache_each(c->dir[i], visit_gpu, &s);
	if (s.found) {
		*out = s.best;
		return 1;
	}
	return c->remote ? find_gpu_remote(c, name, out) : 0;
}

/* ---- the GPU's ceilings ---- */

/* <user>/v<format>/ceilings/<hash of the GPU's identity>.json, and that identity's text. */
static char *ceilings_path(const kt_cache *c, const kt_gpu_id *id, kt_buf *ident)
{
	kt_buf_printf(ident, "gpu.name=%s\ngpu.cc=%d.%d\ngpu.sms=%d\ngpu.l2_bytes=%lld\ngpu.smem_optin=%lld\n", id->name,
		      id->cc_major, id->cc_minor, id->sms, (long long)id->l2_bytes, (long long)id->smem_optin);
	char hex[KT_KEY_HEX], name[KT_KEY_HEX + 8];
	kt_key_of_fields(ident->data, ident->len, hex);
	snprintf(name, sizeof name, "%s.json", hex);
	char *vdir = version_dir(c->dir[KT_TIER_USER]), *dir = kt_path_join(vdir, "ceilings"), *path = kt_path_join(dir, name);
	free(vdir);
	free(dir);
	return path;
}

int kt_cache_ceilings(kt_cache *c, const kt_gpu_id *id, kt_ceilings *out)
{
	kt_buf ident = {0}, text = {0};
	char *path = ceilings_path(c, id, &ident);
	kt_err e = {0};
	int rc = -1;
	*out = (kt_ceilings){0};
	cJSON *doc = kt_read_file(path, &text, &e) == 0 ? cJSON_Parse(kt_buf_str(&text)) : NULL;
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(doc, "format"), *g = cJSON_GetObjectItemCaseSensitive(doc, "gpu");
	if (cJSON_IsNumber(f) && f->valueint == KT_KEY_FORMAT && cJSON_IsString(g) && !strcmp(g->valuestring, ident.data)) {
		const cJSON *v;
		out->bw_gbs = cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(doc, "bw_gbs")) ? v->valuedouble : 0;
		out->gflops = cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(doc, "gflops")) ? v->valuedouble : 0;
		out->tensor_gflops = cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(doc, "tensor_gflops")) ? v->valuedouble : 0;
		rc = 0;
	} else if (doc) {
		kt_say(c->warn, c->warn_ctx, "%s is not a ceilings record of this GPU (or of this format); it is measured again",
		       path);
	}
	cJSON_Delete(doc);
	kt_buf_free(&text);
	kt_buf_free(&ident);
	free(path);
	return rc;
}

void kt_cache_ceilings_store(kt_cache *c, const kt_gpu_id *id, const kt_ceilings *in)
{
	kt_ceilings old;
	if (c->read_only || (kt_cache_ceilings(c, id, &old) == 0 && !memcmp(&old, in, sizeof old)))
		return;
	kt_buf ident = {0};
	char *path = ceilings_path(c, id, &ident), *dir = kt_path_dir(path);
	cJSON *doc = cJSON_CreateObject();
	cJSON_AddNumberToObject(doc, "format", KT_KEY_FORMAT);
	cJSON_AddStringToObject(doc, "gpu", ident.data);
	const struct {
		const char *name;
		double v;
	} kept[] = {{"bw_gbs", in->bw_gbs}, {"gflops", in->gflops}, {"tensor_gflops", in->tensor_gflops}};
	for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
		if (kept[i].v > 0) /* only what was measured */
			cJSON_AddNumberToObject(doc, kept[i].name, kept[i].v);
	char *text = kt_json_text(doc, 1);
	kt_err e = {0};
	if (kt_mkdirs(dir, &e) != 0 || kt_write_atomic(path, text, strlen(text), &e) != 0)
		kt_say(c->warn, c->warn_ctx, "the GPU's ceilings were not kept: %s", e.msg); /* they are measured again next time */
	free(text);
	cJSON_Delete(doc);
	kt_buf_free(&ident);
	free(dir);
	free(path);
}
