/* test_rounds.c - the closed loop of stage 2 on the fake GPU with the fake compiler
 * (tests/unit/fake/fake_nvcc.py, generator/gpu_fake.c) and tests/agent/fake/edge.cu.tmpl, whose
 * fastest block size sits on the edge of its range and whose best unrolling is not declared:
 * the built-in planner extends the edge, the LLM planner (a scripted transport) adds the value
 * that wins, and the best result over all rounds is kept. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "agent.h"
#include "rounds.h"

static kt_tmpl *parse(void)
{
	kt_buf diags = {0};
	kt_err err = {0};
	kt_tmpl *t = kt_tmpl_parse(KT_AGENT_DIR "/fake/edge.cu.tmpl", NULL, &diags, &err);
	if (!t)
		fprintf(stderr, "%s\n%s\n", kt_buf_str(&diags), err.msg);
	kt_buf_free(&diags);
	return t;
}

static const kt_toolchain fake_tc = {KT_FAKE_DIR "/fake_nvcc.py", "", "", ""};

/* One problem's rounds. */
static int run_rounds(const kt_tmpl *t, const int64_t *shape, const kt_tune_opts *o, const kt_planner *pl,
		      const kt_target *g, int rounds, kt_rounds *out, kt_err *err)
{
	kt_rounds_task task = {.p = {.tmpl = t, .shape = shape, .target = g, .tc = &fake_tc}};
	int rc = kt_rounds_run(&task, 1, o, pl, rounds, err);
	if (rc == 0 && task.rc) {
		*err = task.err;
		rc = -1;
	}
	*out = task.out;
	return rc;
}

static kt_tune_opts fake_opts(const char *workdir)
{
	kt_tune_opts o = {0};
	o.backend = "fake";
	o.exe = KT_EXE;
	o.strategy = "exhaustive";
	o.timeout_s = 2.0;
	o.jobs = 2;
	o.seed = 7;
	o.workdir = workdir;
	o.near_floor = -1;
	return o;
}

static const char *param_value(const kt_tmpl *t, const uint16_t *cfg, const char *name, char *buf, size_t n)
{
	for (int p = 0; p < t->nparams; p++)
		if (!strcmp(t->params[p].name, name)) {
			snprintf(buf, n, "%lld", (long long)t->params[p].vals[cfg[p]]);
			return buf;
		}
	return "?";
}

/* The model's answer, whatever it is asked. */
static int one_answer(void *ctx, const kt_http_req *req, kt_http_resp *resp, int *timed_out, kt_err *err)
{
	(void)req, (void)timed_out, (void)err;
	cJSON *o = cJSON_CreateObject(), *ch = cJSON_AddArrayToObject(o, "choices"), *c0 = cJSON_CreateObject();
	cJSON_AddStringToObject(cJSON_AddObjectToObject(c0, "message"), "content", ctx);
	cJSON_AddItemToArray(ch, c0);
	char *s = cJSON_PrintUnformatted(o);
	resp->status = 200;
	kt_buf_puts(&resp->body, s);
	free(s);
	cJSON_Delete(o);
	return 0;
}

static void test_builtin(const kt_tmpl *t, const kt_target *g, const char *dir)
{
	kt_tune_opts o = fake_opts(dir);
	int64_t shape[1] = {4096};
	kt_rounds r;
	kt_err err = {0};
	int rc = run_rounds(t, shape, &o, &kt_planner_builtin, g, 3, &r, &err);
	CHECK_INT(rc, 0);
	if (rc)
		fprintf(stderr, "kt_rounds_run: %s\n", err.msg);
	/* Round 0 finds BLOCK=128 on the edge; round 1 tries 256 and it is not faster; the planner
	 * then has nothing to extend and the loop ends. */
	CHECK_INT(r.n, 2);
	CHECK(r.n >= 1 && r.v[0].plan && strstr(r.v[0].plan, "extend BLOCK with 256") != NULL);
	CHECK(r.n == 2 && r.v[1].tmpl && r.v[1].tmpl->params[0].nvals == 4);
	CHECK(r.n == 2 && r.v[1].note && strstr(r.v[1].note, "no change") != NULL);
	CHECK_INT(r.best, 0);
	const kt_eval *b = kt_rounds_best(&r);
	char v[32];
	CHECK(b && !strcmp(param_value(t, b->cfg, "BLOCK", v, sizeof v), "128"));
	uint16_t chosen[KT_MAX_SLOTS];
	kt_buf note = {0};
	CHECK_INT(kt_rounds_choose(&r, t, chosen, &note), 0);
	CHECK_INT(note.len, 0);
	kt_buf_free(&note);
	kt_rounds_free(&r);

	/* KT_AGENT=off: one round, no planner. */
	CHECK_INT(run_rounds(t, shape, &o, NULL, g, 3, &r, &err), 0);
	CHECK_INT(r.n, 1);
	CHECK(r.v[0].plan == NULL);
	kt_rounds_free(&r);
}

static void test_llm(const kt_tmpl *t, const kt_target *g, const char *dir)
{
	kt_tune_opts o = fake_opts(dir);
	int64_t shape[1] = {4096};
	kt_llm_config c;
	kt_llm_config_defaults(&c);
	c.base_url = "http://127.0.0.1:9/v1";
	c.model = "scripted";
	kt_err err = {0};
	kt_llm *l = kt_llm_new(&c, &err);
	char answer[] = "{\"proposals\": [{\"kind\": \"set_values\", \"param\": \"UNROLL\", \"values\": [1, 2, 4], "
			"\"reason\": \"more work per thread\"}, {\"kind\": \"set_values\", \"param\": \"BLOCK\", "
			"\"values\": [128, 4096], \"reason\": \"huge\"}]}";
	kt_llm_set_transport(l, one_answer, answer);
	kt_rounds r;
	kt_agent_planner ap = {{KT_AGENT_LLM, 2, 0}, l};
	kt_planner pl = kt_agent_planner_seam(&ap);
	CHECK_INT(run_rounds(t, shape, &o, &pl, g, 2, &r, &err), 0);
	CHECK_INT(r.n, 2);
	CHECK(r.n >= 1 && r.v[0].note && strstr(r.v[0].note, "4096 threads per block") != NULL);
	CHECK(r.n >= 1 && r.v[0].transcript && strstr(r.v[0].transcript, "more work per thread") != NULL);
	CHECK_INT(r.best, 1);
	const kt_eval *b = kt_rounds_best(&r);
	char v[32];
	CHECK(b && r.best == 1 && !strcmp(param_value(r.v[1].tmpl, b->cfg, "UNROLL", v, sizeof v), "4"));
	CHECK(b && r.best == 1 && !strcmp(param_value(r.v[1].tmpl, b->cfg, "BLOCK", v, sizeof v), "128"));
	const kt_tune_result *r0 = &r.v[0].result;
	CHECK(b && r0->best >= 0 && b->median_us < r0->evals[r0->best].median_us);
	/* The original template cannot express UNROLL=4: the choice stays in round 0, with a note. */
	uint16_t chosen[KT_MAX_SLOTS];
	kt_buf note = {0}, cf = {0};
	CHECK_INT(kt_rounds_choose(&r, t, chosen, &note), 0);
	kt_tmpl_format_config(t, chosen, &cf);
	CHECK(!strncmp(kt_buf_str(&cf), "BLOCK=128,", 10));
	CHECK(strstr(kt_buf_str(&note), "round 1 found BLOCK=128,UNROLL=4") != NULL);
	CHECK(strstr(kt_buf_str(&note), "extend UNROLL with 4") != NULL);
	kt_buf_free(&note);
	kt_buf_free(&cf);
	/* The evaluations for a record of the original: round 0's, and round 1's that it can express
	 * once each (UNROLL=4 is not among them); best at the choice. */
	kt_tune_result merged;
	kt_rounds_result(&r, t, 0, chosen, &merged);
	CHECK(merged.best >= 0 && (size_t)merged.best < merged.nevals &&
	      !memcmp(merged.evals[merged.best].cfg, chosen, (size_t)t->nparams * sizeof *chosen));
	CHECK(merged.nevals >= r.v[0].result.nevals && merged.nevals < r.v[0].result.nevals + r.v[1].result.nevals);
	for (size_t i = 0; i < merged.nevals; i++)
		for (size_t j = i + 1; j < merged.nevals; j++)
			CHECK(memcmp(merged.evals[i].cfg, merged.evals[j].cfg, (size_t)t->nparams * sizeof *chosen) != 0);
	kt_tune_result_free(&merged);
	/* The history for the record: both rounds, the plan, the model's transcript as JSON. */
	kt_buf js = {0};
	kt_rounds_json(&r, &js);
	cJSON *h = cJSON_Parse(kt_buf_str(&js));
	const cJSON *rs = cJSON_GetObjectItem(h, "rounds");
	CHECK(h && cJSON_GetObjectItem(h, "best_round")->valueint == 1 && cJSON_GetArraySize(rs) == 2);
	const cJSON *h0 = cJSON_GetArrayItem(rs, 0), *h1 = cJSON_GetArrayItem(rs, 1);
	CHECK(h0 && !cJSON_GetObjectItem(h0, "template") && cJSON_IsObject(cJSON_GetObjectItem(h0, "transcript")));
	CHECK(h0 && strstr(cJSON_GetObjectItem(h0, "plan")->valuestring, "extend UNROLL with 4") != NULL);
	CHECK(h1 && strstr(cJSON_GetObjectItem(h1, "template")->valuestring, "UNROLL in 1, 2, 4") != NULL);
	CHECK(h1 && !strcmp(cJSON_GetObjectItem(h1, "best")->valuestring, "BLOCK=128,UNROLL=4"));
	/* What kt cache show prints of it: the best round, each round, each line of the plan. */
	kt_buf text = {0};
	kt_rounds_text(h, &text);
	const char *s = kt_buf_str(&text), *s0 = strstr(s, "\n  round 0: "), *s1 = strstr(s, "\n  round 1: ");
	CHECK(strstr(s, "stage 2, tuning rounds: best round 1\n") == s);
	CHECK(s0 && s1 && s0 < s1 && strstr(s1, "ok, best BLOCK=128,UNROLL=4 at ") != NULL);
	CHECK(s0 && s1 && strstr(s0, "\n    plan: extend UNROLL with 4") && strstr(s0, "\n    plan: extend UNROLL") < s1);
	kt_buf_free(&text);
	kt_rounds_text(NULL, &text);
	kt_rounds_text(cJSON_GetObjectItem(h, "best_round"), &text);
	CHECK_INT(text.len, 0);
	cJSON_Delete(h);
	kt_buf_free(&js);
	kt_rounds_free(&r);
	kt_llm_free(l);
}

/* Two shapes of one template whose plans agree: their round-1 template is one file (named by
 * its text's hash) and its variants are compiled once for both, as for one shape alone. */
static void test_shared_round(const kt_tmpl *t, const kt_target *g, const char *dir)
{
	kt_tune_opts o = fake_opts(dir);
	kt_tune_stats st = {0}, one = {0};
	o.stats = &st;
	int64_t s1[1] = {4096}, s2[1] = {8192};
	kt_rounds_task tasks[2] = {{.p = {.tmpl = t, .shape = s1, .target = g, .tc = &fake_tc}},
				   {.p = {.tmpl = t, .shape = s2, .target = g, .tc = &fake_tc}}};
	kt_err err = {0};
	CHECK_INT(kt_rounds_run(tasks, 2, &o, &kt_planner_builtin, 2, &err), 0);
	const kt_rounds *a = &tasks[0].out, *b = &tasks[1].out;
	CHECK(tasks[0].rc == 0 && tasks[1].rc == 0);
	CHECK(a->n == 2 && b->n == 2);
	if (a->n == 2 && b->n == 2 && a->v[1].tmpl && b->v[1].tmpl) {
		CHECK_STR(a->v[1].tmpl_text, b->v[1].tmpl_text);
		CHECK_STR(a->v[1].tmpl->path, b->v[1].tmpl->path);
		char want[600];
		snprintf(want, sizeof want, "%s/rounds/round-", dir);
		CHECK(strncmp(a->v[1].tmpl->path, want, strlen(want)) == 0);
		CHECK(strstr(a->v[1].tmpl->path, "/edge.cu.tmpl") != NULL);
		/* Both shapes measured the new block size in round 1. */
		for (int i = 0; i < 2; i++) {
			const kt_rounds *r = &tasks[i].out;
			int seen = 0;
			char v[32];
			for (size_t e = 0; e < r->v[1].result.nevals; e++)
				seen |= !strcmp(param_value(r->v[1].tmpl, r->v[1].result.evals[e].cfg, "BLOCK", v, sizeof v), "256");
			CHECK(seen);
		}
	}
	kt_rounds_free(&tasks[0].out);
	kt_rounds_free(&tasks[1].out);
	/* One directory per round template. */
	char rounds_dir[600];
	snprintf(rounds_dir, sizeof rounds_dir, "%s/rounds", dir);
	DIR *d = opendir(rounds_dir);
	int nround = 0;
	for (struct dirent *e; d && (e = readdir(d));)
		nround += !strncmp(e->d_name, "round-", 6);
	if (d)
		closedir(d);
	CHECK_INT(nround, 1);
	/* The same rounds for one shape compile as many units: the other shape compiled nothing. */
	o.stats = &one;
	CHECK_INT(kt_rounds_run(tasks, 1, &o, &kt_planner_builtin, 2, &err), 0);
	CHECK_INT(tasks[0].out.n, 2);
	kt_rounds_free(&tasks[0].out);
	CHECK_INT(st.compiled, one.compiled);
	CHECK(st.reused > one.reused);
}

/* A round whose only new configuration does not compile still says why it stopped: every
 * round's result has a stop reason, whatever the strategy. */
static void test_round_fails(const kt_target *g, const char *dir)
{
	kt_buf text = {0};
	kt_err err = {0};
	char path[600];
	snprintf(path, sizeof path, "%s.cu.tmpl", dir);
	CHECK_INT(kt_read_file(KT_AGENT_DIR "/fake/edge.cu.tmpl", &text, &err), 0);
	kt_buf_puts(&text, "// fake-compile-error: BLOCK=256\n");
	CHECK_INT(kt_write_atomic(path, text.data, text.len, &err), 0);
	kt_buf_free(&text);
	kt_buf diags = {0};
	kt_tmpl *t = kt_tmpl_parse(path, NULL, &diags, &err);
	kt_buf_free(&diags);
	CHECK(t != NULL);
	if (!t)
		return;
	for (int k = 0; k < 2; k++) {
		kt_tune_opts o = fake_opts(dir);
		o.strategy = k ? "bestfirst" : "exhaustive";
		int64_t shape[1] = {4096};
		kt_rounds r;
		CHECK_INT(run_rounds(t, shape, &o, &kt_planner_builtin, g, 2, &r, &err), 0);
		CHECK_INT(r.n, 2);
		/* round 1 evaluated BLOCK=256, which did not compile */
		int failed = 0;
		for (size_t e = 0; r.n == 2 && e < r.v[1].result.nevals; e++)
			failed += r.v[1].result.evals[e].status == KT_COMPILE_FAILED;
		CHECK(failed > 0);
		for (int i = 0; i < r.n; i++)
			CHECK(r.v[i].result.stop[0] != 0);
		kt_rounds_free(&r);
	}
	kt_tmpl_free(t);
}

int main(void)
{
	kt_tmpl *t = parse();
	if (!t)
		return 1;
	kt_target g;
	kt_target_lookup("H200", &g, NULL);
	char *dir = kt_temp_dir(getenv("TMPDIR"), "kt-test-rounds", NULL);
	if (!dir)
		return 1;
	char a[512], b[512], c[512];
	snprintf(a, sizeof a, "%s/builtin", dir);
	snprintf(b, sizeof b, "%s/llm", dir);
	snprintf(c, sizeof c, "%s/shared", dir);
	test_builtin(t, &g, a);
	test_llm(t, &g, b);
	test_shared_round(t, &g, c);
	snprintf(c, sizeof c, "%s/fails", dir);
	test_round_fails(&g, c);
	kt_tmpl_free(t);
	kt_remove_tree(dir);
	free(dir);
	return check_done();
}
