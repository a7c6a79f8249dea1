/* test_agent.c - the agent without a network: reply parsing, GPU facts and limits, the
 * refactoring loop through a scripted transport with fake compile and verify seams, proposals
 * and their validation, and the round summary.  tests/agent drives the same over real HTTP. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "cmd_env.h"
#include "check.h"

static char *slurp(const char *dir, const char *name)
{
	char *p = kt_path_join(dir, name);
	kt_buf b = {0};
	kt_err err = {0};
	if (kt_read_file(p, &b, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		abort();
	}
	free(p);
	return kt_buf_detach(&b);
}

/* ---- a scripted server behind the transport seam ---- */

typedef struct script {
	const char *const *contents; /* reply contents; NULL: a malformed body */
	int n, next;
	char *requests[8];           /* the last user message of each request */
} script;

static int scripted(void *ctx, const kt_http_req *req, kt_http_resp *resp, int *timed_out, kt_err *err)
{
	script *s = ctx;
	(void)timed_out;
	cJSON *j = cJSON_Parse(req->body);
	const cJSON *msgs = cJSON_GetObjectItem(j, "messages");
	const cJSON *last = cJSON_GetArrayItem(msgs, cJSON_GetArraySize(msgs) - 1);
	if (s->next < 8)
		s->requests[s->next] = kt_xstrdup(cJSON_GetObjectItem(last, "content")->valuestring);
	cJSON_Delete(j);
	if (s->next >= s->n)
		return kt_fail(err, "script exhausted");
	const char *c = s->contents[s->next++];
	resp->status = 200;
	if (!c) {
		kt_buf_puts(&resp->body, "{\"choices\": [");
		return 0;
	}
	cJSON *o = cJSON_CreateObject(), *ch = cJSON_AddArrayToObject(o, "choices"), *c0 = cJSON_CreateObject();
	cJSON *m = cJSON_AddObjectToObject(c0, "message");
	cJSON_AddStringToObject(m, "role", "assistant");
	cJSON_AddStringToObject(m, "content", c);
	cJSON_AddStringToObject(c0, "finish_reason", "stop");
	cJSON_AddItemToArray(ch, c0);
	cJSON *u = cJSON_AddObjectToObject(o, "usage");
	cJSON_AddNumberToObject(u, "prompt_tokens", 100);
	cJSON_AddNumberToObject(u, "completion_tokens", 50);
	char *text = cJSON_PrintUnformatted(o);
	kt_buf_puts(&resp->body, text);
	free(text);
	cJSON_Delete(o);
	return 0;
}

static void script_free(script *s)
{
	for (int i = 0; i < 8; i++)
		free(s->requests[i]);
}

static kt_llm *scripted_client(script *s)
{
	kt_llm_config c;
	kt_llm_config_defaults(&c);
	c.base_url = "http://127.0.0.1:9/v1";
	c.model = "scripted";
	c.max_retries = 0;
	kt_err err = {0};
	kt_llm *l = kt_llm_new(&c, &err);
	kt_llm_set_transport(l, scripted, s);
	return l;
}

static char *fenced(const char *tmpl)
{
	kt_buf b = {0};
	kt_buf_printf(&b, "Here it is.\n\n```cuda\n%s```\nDone.", tmpl);
	return kt_buf_detach(&b);
}

/* ---- small parts ---- */

static void test_control(void)
{
	kt_agent_mode m;
	kt_err err = {0};
	CHECK_INT(kt_agent_mode_parse("llm", &m, &err), 0);
	CHECK_INT(m, KT_AGENT_LLM);
	CHECK_INT(kt_agent_mode_parse("gpt", &m, &err), -1);
	kt_agent_cfg c;
	unsetenv("KT_AGENT");
	unsetenv("KT_AGENT_REPLIES");
	unsetenv("KT_AGENT_TOKENS");
	unsetenv("KT_TUNE_ROUNDS");
	CHECK_INT(kt_env_agent(&c, &err), 0);
	CHECK_INT(c.mode, KT_AGENT_BUILTIN);
	CHECK_INT(c.replies, 4);
	setenv("KT_AGENT", "off", 1);
	setenv("KT_AGENT_REPLIES", "2", 1);
	setenv("KT_AGENT_TOKENS", "5000", 1);
	CHECK_INT(kt_env_agent(&c, &err), 0);
	CHECK_INT(c.mode, KT_AGENT_OFF);
	CHECK_INT(c.replies, 2);
	CHECK_INT(c.tokens, 5000);
	setenv("KT_AGENT_REPLIES", "0", 1);
	CHECK_INT(kt_env_agent(&c, &err), -1);
	CHECK(strstr(err.msg, "KT_AGENT_REPLIES") != NULL);
	int rounds = -1;
	CHECK_INT(kt_env_tune_rounds(&rounds, &err), 0);
	CHECK_INT(rounds, 0); /* unset: the default */
	setenv("KT_TUNE_ROUNDS", "3", 1);
	CHECK_INT(kt_env_tune_rounds(&rounds, &err), 0);
	CHECK_INT(rounds, 3);
	setenv("KT_TUNE_ROUNDS", "many", 1);
	CHECK_INT(kt_env_tune_rounds(&rounds, &err), -1);
	CHECK(strstr(err.msg, "KT_TUNE_ROUNDS='many'") != NULL);
	/* The retired name is reported, with what replaced it. */
	kt_buf retired = {0};
	setenv("KT_AGENT_ROUNDS", "2", 1);
	kt_env_retired(&retired);
	CHECK(strstr(kt_buf_str(&retired), "KT_AGENT_ROUNDS is no longer read") &&
	      strstr(kt_buf_str(&retired), "KT_TUNE_ROUNDS") && strstr(kt_buf_str(&retired), "KT_AGENT_REPLIES"));
	kt_buf_free(&retired);
	unsetenv("KT_AGENT_ROUNDS");
	unsetenv("KT_AGENT");
	unsetenv("KT_AGENT_REPLIES");
	unsetenv("KT_AGENT_TOKENS");
	unsetenv("KT_TUNE_ROUNDS");
}

static void test_extract(void)
{
	kt_buf b = {0};
	char why[128];
	CHECK_INT(kt_agent_extract_template("text\n```json\n{}\n```\n```cuda\n// @kt kernel k\nint x;\n```\n", &b, why,
					    sizeof why),
		  0);
	CHECK_STR(kt_buf_str(&b), "// @kt kernel k\nint x;\n");
	kt_buf_reset(&b);
	CHECK_INT(kt_agent_extract_template("```\nA\n```", &b, why, sizeof why), 0);
	CHECK_STR(kt_buf_str(&b), "A\n");
	kt_buf_reset(&b);
	CHECK_INT(kt_agent_extract_template("// @kt kernel k\n__global__ void k() {}\n", &b, why, sizeof why), 0);
	CHECK(strstr(kt_buf_str(&b), "__global__") != NULL);
	kt_buf_reset(&b);
	CHECK_INT(kt_agent_extract_template("```cuda\n// @kt kernel k\n__global__ void k() {", &b, why, sizeof why), -1);
	CHECK(strstr(why, "never closed") != NULL);
	CHECK_INT(kt_agent_extract_template("I cannot do that.", &b, why, sizeof why), -1);
	CHECK(strstr(why, "no template") != NULL);
	kt_buf_free(&b);
}

static void test_find_kernel(void)
{
	const char *src = "// __global__ void k(int) { decoy }\n"
			  "const char *s = \"__global__ void k(\";\n"
			  "__global__ void kk(int a) { }\n"
			  "extern \"C\" __global__ void __launch_bounds__(256) k(int a)\n{\n\tif (a) { a = '}'; }\n}\n"
			  "int after;\n";
	size_t b, e;
	CHECK_INT(kt_agent_find_kernel(src, "k", &b, &e), 0);
	CHECK(!strncmp(src + b, "__global__ void __launch_bounds__(256) k(int a)", 47));
	CHECK(!strncmp(src + e - 3, "}\n}", 3));
	CHECK_INT(kt_agent_find_kernel(src, "kk", &b, &e), 0);
	CHECK_INT(kt_agent_find_kernel(src, "missing", &b, &e), -1);
	CHECK_INT(kt_agent_find_kernel("__global__ void k(int a);\n", "k", &b, &e), -1);
}

/* ---- stage 1 ---- */

typedef struct fake_tools {
	int compiles, fail_first_compile;
	int verifies, fail_first_verify;
} fake_tools;

static int fake_compile(void *ctx, const kt_tmpl *t, const uint16_t *cfg, kt_buf *log, kt_err *err)
{
	fake_tools *f = ctx;
	(void)t, (void)cfg, (void)err;
	if (f->compiles++ == 0 && f->fail_first_compile) {
		kt_buf_puts(log, "rmsnorm.cu.tmpl(60): error: identifier \"row_scale\" is undefined\n");
		return 1;
	}
	return 0;
}

static int fake_verify(void *ctx, const kt_tmpl *t, const int64_t *shape, int samples, int *nchecked, kt_buf *log,
		       kt_err *err)
{
	fake_tools *f = ctx;
	(void)t, (void)shape, (void)err;
	if (f->verifies++ == 0 && f->fail_first_verify) {
		kt_buf_puts(log, "configuration BLOCK=64,VEC=8 at shape rows=4096,hidden=4096: check-failed: out[7]\n");
		return 1;
	}
	*nchecked += samples;
	return 0;
}

static kt_refactor_req refactor_req(const char *source, const kt_target *g, fake_tools *tools)
{
	static const char *const shapes[] = {"rows=4096,hidden=4096", "rows=7,hidden=1024"};
	kt_refactor_req r = {
		.source_path = "rmsnorm.cu",
		.source = source,
		.kernel = "rmsnorm",
		.shapes = shapes,
		.nshapes = 2,
		.tmpl_path = "out/rmsnorm.cu.tmpl",
		.lang_ref = "THE-LANGUAGE-REFERENCE",
		.gpu = g,
		.rounds = 3,
		.samples = 2,
		.compile = fake_compile,
		.compile_ctx = tools,
		.verify = fake_verify,
		.verify_ctx = tools,
	};
	return r;
}

static void test_refactor(const char *agent_dir, const char *examples_dir)
{
	char *source = slurp(examples_dir, "rmsnorm.cu");
	char *good = slurp(agent_dir, "replies/rmsnorm_good.cu.tmpl");
	char *bad = slurp(agent_dir, "replies/rmsnorm_parse_error.cu.tmpl");
	char *good_reply = fenced(good), *bad_reply = fenced(bad);
	kt_target g;
	kt_target_lookup("H200", &g, NULL);

	/* A parse error, then a fix: the second request holds the parser's exact diagnostics. */
	const char *const replies[] = {bad_reply, good_reply};
	script s = {replies, 2, 0, {0}};
	kt_llm *l = scripted_client(&s);
	fake_tools tools = {0};
	kt_refactor_req req = refactor_req(source, &g, &tools);
	kt_refactor_out out;
	kt_err err = {0};
	CHECK_INT(kt_agent_refactor(l, &req, &out, &err), 0);
	CHECK_INT(out.rounds, 2);
	CHECK(out.tmpl_text && !strcmp(out.tmpl_text, good));
	CHECK_INT(out.compiled, 3); /* the default and two samples */
	CHECK_INT(out.verified, 6); /* three configurations at two shapes */
	kt_buf diags = {0};
	kt_tmpl *t = kt_tmpl_parse_text("out/rmsnorm.cu.tmpl", bad, strlen(bad), NULL, &diags, &err);
	CHECK(t == NULL);
	CHECK(diags.len > 0 && s.requests[1] && strstr(s.requests[1], kt_buf_str(&diags)) != NULL);
	CHECK(strstr(s.requests[0], source) != NULL);
	CHECK(strstr(s.requests[0], "NVIDIA H200") != NULL);
	CHECK(strstr(out.transcript.data, "THE-LANGUAGE-REFERENCE") != NULL);
	CHECK(strstr(out.transcript.data, "\"result\":\t\"accepted\"") != NULL);
	kt_buf_free(&diags);
	kt_refactor_out_free(&out);
	kt_llm_free(l);
	script_free(&s);

	/* A compile error and a wrong answer on the GPU both go back; the rounds run out. */
	const char *const replies2[] = {good_reply, good_reply, NULL};
	script s2 = {replies2, 3, 0, {0}};
	l = scripted_client(&s2);
	fake_tools tools2 = {0, 1, 0, 1};
	req = refactor_req(source, &g, &tools2);
	CHECK_INT(kt_agent_refactor(l, &req, &out, &err), -1);
	CHECK_INT(out.rounds, 3);
	CHECK(s2.requests[1] && strstr(s2.requests[1], "identifier \"row_scale\" is undefined") != NULL);
	CHECK(s2.requests[2] && strstr(s2.requests[2], "check-failed: out[7]") != NULL);
	CHECK(strstr(err.msg, "no acceptable template after 3 rounds") != NULL);
	CHECK(strstr(err.msg, "not valid JSON") != NULL);
	CHECK(out.tmpl_text == NULL);
	CHECK(strstr(out.transcript.data, "\"result\":\t\"failed\"") != NULL);
	kt_refactor_out_free(&out);
	kt_llm_free(l);
	script_free(&s2);

	/* The reference must be the original kernel, unchanged. */
	kt_buf changed = {0};
	const char *at = strstr(good, "sum += v * v;");
	kt_buf_add(&changed, good, (size_t)(at - good));
	kt_buf_puts(&changed, "sum += v;");
	kt_buf_puts(&changed, at + strlen("sum += v * v;"));
	int nc, nv;
	kt_buf log = {0};
	CHECK_INT(kt_agent_check_template(&req, kt_buf_str(&changed), &nc, &nv, &log, &err), 1);
	CHECK(strstr(kt_buf_str(&log), "the reference kernel 'rmsnorm' differs from the original") != NULL);
	kt_buf_reset(&log);
	kt_buf_reset(&changed);
	kt_buf_printf(&changed, "%s#include \"/etc/passwd\"\n", good);
	CHECK_INT(kt_agent_check_template(&req, kt_buf_str(&changed), &nc, &nv, &log, &err), 1);
	CHECK(strstr(kt_buf_str(&log), "out/rmsnorm.cu.tmpl:83:10: error: #include \"/etc/passwd\" reads a file outside") != NULL);
	kt_buf_reset(&log);
	kt_buf_reset(&changed);
	at = strstr(good, "@kt kernel    rmsnorm_tuned");
	kt_buf_add(&changed, good, (size_t)(at - good));
	kt_buf_puts(&changed, "@kt kernel    rmsnorm_fast");
	kt_buf_puts(&changed, at + strlen("@kt kernel    rmsnorm_tuned"));
	CHECK_INT(kt_agent_check_template(&req, kt_buf_str(&changed), &nc, &nv, &log, &err), 1);
	CHECK(strstr(kt_buf_str(&log), "out/rmsnorm.cu.tmpl:5:18: error: kernel 'rmsnorm_fast' is not defined") != NULL);
	kt_buf_reset(&log);
	req.kernel = "other";
	CHECK_INT(kt_agent_check_template(&req, good, &nc, &nv, &log, &err), 1);
	CHECK(strstr(kt_buf_str(&log), "name it as the reference") != NULL);
	kt_buf_free(&log);
	kt_buf_free(&changed);

	free(source);
	free(good);
	free(bad);
	free(good_reply);
	free(bad_reply);
}

/* ---- stage 2 ---- */

static const char plan_tmpl[] = "// @kt kernel    k\n"
				"// @kt reference k_ref grid n block 128\n"
				"// @kt shape     n\n"
				"// @kt param     BLOCK in 64, 128, 256 default 128\n"
				"// @kt param     ALGO in a, b default a\n"
				"// @kt param     FAST bool default false\n"
				"// @kt arg       out float[n] out\n"
				"// @kt arg       n int = n\n"
				"// @kt grid      cdiv(n, BLOCK)\n"
				"// @kt block     BLOCK\n"
				"// @kt smem      BLOCK * 4\n"
				"extern \"C\" __global__ void k_ref(float *out, int n) { out[0] = 1; }\n"
				"extern \"C\" __global__ void k(float *out, int n) { out[0] = 1; }\n";

static int count_rejected(const kt_agent_props *ps)
{
	int n = 0;
	for (int i = 0; i < ps->n; i++)
		n += !ps->v[i].accepted;
	return n;
}

static void test_parse_proposals(void)
{
	kt_agent_props ps;
	kt_err err = {0};
	CHECK_INT(kt_agent_parse_proposals("BLOCK should grow", &ps, &err), -1);
	CHECK(strstr(err.msg, "not valid JSON") != NULL);
	CHECK_INT(kt_agent_parse_proposals("{\"changes\": []}", &ps, &err), -1);
	CHECK(strstr(err.msg, "expected {\"proposals\": [...]}") != NULL);
	CHECK_INT(kt_agent_parse_proposals("Sure:\n```json\n{\"proposals\": [\n"
					   "{\"kind\": \"set_values\", \"param\": \"BLOCK\", \"values\": [64, 512], \"reason\": \"r\"},\n"
					   "{\"kind\": \"set_values\", \"param\": \"BLOCK\", \"values\": [1.5], \"reason\": \"r\"},\n"
					   "{\"kind\": \"add_constraint\", \"reason\": \"r\"},\n"
					   "{\"kind\": \"revise_template\", \"template\": \"x\"},\n"
					   "{\"kind\": \"rm -rf\", \"reason\": \"r\"},\n"
					   "7\n]}\n```",
					   &ps, &err),
		  0);
	CHECK_INT(ps.n, 6);
	CHECK_INT(count_rejected(&ps), 5);
	CHECK(ps.v[0].accepted && ps.v[0].nvals == 2 && !strcmp(ps.v[0].vals[1], "512"));
	CHECK(strstr(ps.v[1].why, "not a 32-bit integer") != NULL);
	CHECK(strstr(ps.v[2].why, "needs an \"expr\"") != NULL);
	CHECK(strstr(ps.v[3].why, "needs a \"reason\"") != NULL);
	CHECK(strstr(ps.v[4].why, "unknown kind 'rm -rf'") != NULL);
	CHECK_INT(ps.v[4].kind, KT_AGENT_NPROP_KINDS);
	CHECK(strstr(ps.v[5].why, "must be a JSON object") != NULL);
	kt_agent_props_free(&ps);
}

/* Parses one proposal, checks it against plan_tmpl at n=4096 on an H200. */
static kt_agent_props check_one(const kt_tmpl *t, const char *json)
{
	kt_agent_props ps;
	kt_err err = {0};
	kt_target g;
	kt_target_lookup("H200", &g, NULL);
	int64_t shape[1] = {4096};
	if (kt_agent_parse_proposals(json, &ps, &err))
		abort();
	for (int i = 0; i < ps.n; i++)
		kt_agent_check_proposal(t, shape, 1, &g, &ps.v[i]);
	return ps;
}

static void test_check_proposals(void)
{
	kt_buf diags = {0};
	kt_err err = {0};
	kt_tmpl *t = kt_tmpl_parse_text("p.cu.tmpl", plan_tmpl, strlen(plan_tmpl), NULL, &diags, &err);
	CHECK(t != NULL);
	if (!t) {
		fprintf(stderr, "%s", kt_buf_str(&diags));
		return;
	}
	/* A new value and a dropped one: EXTEND 512, FORBID BLOCK != 64. */
	kt_agent_props ps = check_one(t, "{\"proposals\":[{\"kind\":\"set_values\",\"param\":\"BLOCK\","
					 "\"values\":[128,256,512],\"reason\":\"edge\"}]}");
	CHECK(ps.v[0].accepted);
	CHECK_INT(ps.v[0].plan.n, 2);
	CHECK_INT(ps.v[0].plan.props[0].kind, KT_PROP_EXTEND);
	CHECK_INT(ps.v[0].plan.props[0].value, 512);
	CHECK_INT(ps.v[0].plan.props[1].kind, KT_PROP_FORBID);
	CHECK_STR(ps.v[0].plan.props[1].require, "BLOCK != 64");
	CHECK(ps.v[0].new_src && strstr(ps.v[0].new_src, "@kt param BLOCK in 64, 128, 256, 512 default 128") != NULL);
	kt_plan all = {0};
	kt_agent_props_to_plan(&ps, &all);
	CHECK_INT(all.n, 2);
	kt_plan_free(&all);
	kt_agent_props_free(&ps);

	/* Choices: narrowing is fine, a new choice is outside the declared space. */
	ps = check_one(t, "{\"proposals\":[{\"kind\":\"set_values\",\"param\":\"ALGO\",\"values\":[\"b\"],\"reason\":\"r\"},"
			  "{\"kind\":\"set_values\",\"param\":\"ALGO\",\"values\":[\"c\"],\"reason\":\"r\"},"
			  "{\"kind\":\"set_values\",\"param\":\"FAST\",\"values\":[true],\"reason\":\"r\"},"
			  "{\"kind\":\"set_values\",\"param\":\"BLOCK\",\"values\":[128,128],\"reason\":\"r\"}]}");
	CHECK(ps.v[0].accepted);
	CHECK(ps.v[0].plan.n == 1 && !strcmp(ps.v[0].plan.props[0].require, "ALGO != \"a\""));
	CHECK(!ps.v[1].accepted && strstr(ps.v[1].why, "outside the declared space: ALGO has the choices a, b") != NULL);
	CHECK(!ps.v[2].accepted && strstr(ps.v[2].why, "is a bool") != NULL);
	CHECK(!ps.v[3].accepted && strstr(ps.v[3].why, "given twice") != NULL);
	kt_agent_props_free(&ps);

	/* Device limits: shared memory BLOCK * 4 and threads per block. */
	ps = check_one(t, "{\"proposals\":[{\"kind\":\"set_values\",\"param\":\"BLOCK\",\"values\":[64,2048],\"reason\":\"r\"},"
			  "{\"kind\":\"add_constraint\",\"expr\":\"BLOCK > 1000\",\"reason\":\"r\"},"
			  "{\"kind\":\"add_constraint\",\"expr\":\"BLOCK +\",\"reason\":\"r\"}]}");
	CHECK(!ps.v[0].accepted && strstr(ps.v[0].why, "BLOCK=2048") && strstr(ps.v[0].why, "2048 threads per block"));
	CHECK(!ps.v[1].accepted && strstr(ps.v[1].why, "leaves no configuration") != NULL);
	CHECK(!ps.v[2].accepted && strstr(ps.v[2].why, "does not parse") && strstr(ps.v[2].why, "p.cu.tmpl:12:"));
	kt_agent_props_free(&ps);

	/* Revisions keep the kernel, the reference, the shapes and the arguments. */
	kt_buf rev = {0}, js = {0};
	const char *at = strstr(plan_tmpl, "// @kt smem");
	kt_buf_add(&rev, plan_tmpl, (size_t)(at - plan_tmpl));
	kt_buf_puts(&rev, "// @kt smem      300000\n");
	kt_buf_puts(&rev, strchr(at, '\n') + 1);
	cJSON *o = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(o, "proposals");
	const char *texts[] = {kt_buf_str(&rev), plan_tmpl, "// @kt kernel k\n", "#include <cuda.h>\n  # include \"../x.h\"\n"};
	for (int i = 0; i < 4; i++) {
		cJSON *p = cJSON_CreateObject();
		cJSON_AddStringToObject(p, "kind", "revise_template");
		cJSON_AddStringToObject(p, "template", texts[i]);
		cJSON_AddStringToObject(p, "reason", "r");
		cJSON_AddItemToArray(arr, p);
	}
	char *doc = cJSON_PrintUnformatted(o);
	ps = check_one(t, doc);
	CHECK(!ps.v[0].accepted && strstr(ps.v[0].why, "300000 bytes of dynamic shared memory") != NULL);
	CHECK(ps.v[1].accepted && ps.v[1].new_src && !strcmp(ps.v[1].new_src, plan_tmpl));
	CHECK(!ps.v[2].accepted && strstr(ps.v[2].why, "does not parse") != NULL);
	CHECK(!ps.v[3].accepted && strstr(ps.v[3].why, "p.cu.tmpl:2:13: error: #include \"../x.h\"") != NULL);
	kt_agent_props_free(&ps);
	free(doc);
	cJSON_Delete(o);
	kt_buf_free(&rev);
	kt_buf_free(&js);
	kt_tmpl_free(t);
	kt_buf_free(&diags);
}

static void test_plan_loop(void)
{
	kt_buf diags = {0};
	kt_err err = {0};
	kt_tmpl *t = kt_tmpl_parse_text("p.cu.tmpl", plan_tmpl, strlen(plan_tmpl), NULL, &diags, &err);
	if (!t)
		return;
	kt_target g;
	kt_target_lookup("H200", &g, NULL);
	int64_t shape[1] = {4096};
	const char *const replies[] = {"```json\n{\"proposals\": [\n```", NULL,
				       "{\"proposals\":[{\"kind\":\"add_constraint\",\"expr\":\"FAST\",\"reason\":\"r\"}]}"};
	script s = {replies, 3, 0, {0}};
	kt_llm *l = scripted_client(&s);
	kt_plan_req req = {t, shape, 1, &g, "SUMMARY-TEXT", 3, 0};
	kt_agent_props ps;
	kt_buf tr = {0};
	CHECK_INT(kt_agent_plan(l, &req, &ps, &tr, &err), 0);
	CHECK_INT(ps.n, 1);
	CHECK(ps.n == 1 && ps.v[0].accepted);
	CHECK(strstr(s.requests[0], "SUMMARY-TEXT") != NULL);
	CHECK(s.requests[1] && strstr(s.requests[1], "kt could not use the answer: the answer is not valid JSON") != NULL);
	CHECK(strstr(kt_buf_str(&tr), "\"outcome\":\t\"accepted\"") != NULL);
	kt_agent_props_free(&ps);
	kt_buf_free(&tr);
	kt_llm_free(l);
	script_free(&s);

	/* The token budget stops the loop before another request. */
	const char *const junk[] = {"no", "no", "no"};
	script s2 = {junk, 3, 0, {0}};
	l = scripted_client(&s2);
	req.tokens = 100;
	CHECK_INT(kt_agent_plan(l, &req, &ps, NULL, &err), -1);
	CHECK(strstr(err.msg, "token budget of 100 is spent") != NULL);
	CHECK_INT(s2.next, 1);
	kt_agent_props_free(&ps);
	kt_llm_free(l);
	script_free(&s2);
	kt_tmpl_free(t);
	kt_buf_free(&diags);
}

static void test_summary(void)
{
	kt_buf diags = {0};
	kt_err err = {0};
	kt_tmpl *t = kt_tmpl_parse_text("p.cu.tmpl", plan_tmpl, strlen(plan_tmpl), NULL, &diags, &err);
	if (!t)
		return;
	uint16_t c[4][3] = {{0, 0, 0}, {1, 0, 0}, {2, 0, 0}, {2, 1, 1}};
	kt_eval ev[4] = {
		{c[0], KT_OK, 20.0, 0.5, 16, 0, 0, NULL, 0, 0},
		{c[1], KT_OK, 12.0, 0.2, 18, 0, 0, NULL, 0, 0},
		{c[2], KT_OK, 10.0, 0.1, 20, 0, 8, NULL, 0, 0},
		{c[3], KT_CHECK_FAILED, 0, 0, -1, -1, -1, "out[3]: 1.5 vs 2.0\nmore", 0, 0},
	};
	kt_tune_result r = {.nparams = 3, .nevals = 4, .evals = ev, .best = 2, .floor_us = 8.0, .bw_gbs = 4000,
			    .strategy = "exhaustive", .budget = 10};
	int64_t shape[1] = {4096};
	kt_buf out = {0};
	kt_agent_summary(t, shape, &r, &out);
	const char *s = kt_buf_str(&out);
	CHECK(strstr(s, "shape n=4096: 4 evaluated (strategy exhaustive, budget 10), 3 ok, 1 check-failed") != NULL);
	CHECK(strstr(s, "1. BLOCK=256,ALGO=a,FAST=false: 10.00 us (+-0.10), 80% of the floor, 20 registers") != NULL);
	CHECK(strstr(s, "8 B local (spills)") != NULL);
	CHECK(strstr(s, "the best BLOCK, 256, is the largest declared value") != NULL);
	CHECK(strstr(s, "failures:\n  BLOCK=256,ALGO=b,FAST=true: check-failed: out[3]: 1.5 vs 2.0\n") != NULL);
	kt_buf_free(&out);
	kt_tmpl_free(t);
	kt_buf_free(&diags);
}

static void test_propose(void)
{
	kt_buf diags = {0}, note = {0};
	kt_err err = {0};
	kt_tmpl *t = kt_tmpl_parse_text("p.cu.tmpl", plan_tmpl, strlen(plan_tmpl), NULL, &diags, &err);
	if (!t)
		return;
	kt_target g;
	kt_target_lookup("H200", &g, NULL);
	uint16_t c[3][3] = {{0, 0, 0}, {1, 0, 0}, {2, 0, 0}};
	kt_eval ev[3] = {{c[0], KT_OK, 30.0, 0.1, 16, 0, 0, NULL, 0, 0}, {c[1], KT_OK, 20.0, 0.1, 16, 0, 0, NULL, 0, 0},
			 {c[2], KT_OK, 10.0, 0.1, 16, 0, 0, NULL, 0, 0}};
	kt_tune_result r = {.nparams = 3, .nevals = 3, .evals = ev, .best = 2, .strategy = "exhaustive", .budget = 3};
	int64_t shape[1] = {4096};
	kt_plan plan;
	char *rev;
	kt_toolchain tc = {0};
	kt_problem p = {.tmpl = t, .shape = shape, .target = &g, .tc = &tc};
	/* builtin: BLOCK's best is its largest value, so the planner extends it. */
	CHECK_INT(kt_planner_builtin.plan(NULL, &p, &r, &plan, &rev, &note, NULL, &err), 0);
	CHECK(plan.n >= 1 && plan.props[0].kind == KT_PROP_EXTEND && plan.props[0].value == 512);
	kt_plan_free(&plan);
	/* llm: the model's proposals, in the planner's structure; a revision comes back as text. */
	const char *const replies[] = {"{\"proposals\":[{\"kind\":\"set_values\",\"param\":\"BLOCK\",\"values\":[256,"
				       "1024],\"reason\":\"edge\"},{\"kind\":\"set_values\",\"param\":\"X\",\"values\":[1],"
				       "\"reason\":\"r\"}]}"};
	script s = {replies, 1, 0, {0}};
	kt_llm *l = scripted_client(&s);
	kt_agent_planner ap = {{KT_AGENT_LLM, 2, 0}, l};
	kt_planner llm = kt_agent_planner_seam(&ap);
	kt_buf tr = {0};
	CHECK_INT(llm.plan(llm.ctx, &p, &r, &plan, &rev, &note, &tr, &err), 0);
	CHECK(strstr(s.requests[0], "the best BLOCK, 256, is the largest declared value") != NULL);
	CHECK_INT(plan.n, 3); /* extend 1024, forbid 64 and 128 */
	CHECK(plan.n == 3 && plan.props[0].kind == KT_PROP_EXTEND && plan.props[0].value == 1024);
	CHECK(rev == NULL);
	CHECK(strstr(kt_buf_str(&note), "rejected set_values: 'X' is outside the declared space") != NULL);
	kt_plan_free(&plan);
	kt_llm_free(l);
	script_free(&s);
	/* llm that fails: the built-in planner answers, and the note says why. */
	script s2 = {replies, 0, 0, {0}};
	l = scripted_client(&s2);
	kt_buf_reset(&note);
	ap.llm = l;
	CHECK_INT(llm.plan(llm.ctx, &p, &r, &plan, &rev, &note, NULL, &err), 0);
	CHECK(plan.n >= 1 && plan.props[0].kind == KT_PROP_EXTEND && plan.props[0].value == 512);
	CHECK(strstr(kt_buf_str(&note), "the LLM planner failed") != NULL);
	kt_plan_free(&plan);
	kt_llm_free(l);
	script_free(&s2);
	kt_buf_free(&tr);
	kt_buf_free(&note);
	kt_buf_free(&diags);
	kt_tmpl_free(t);
}

/* Mutated replies (truncated, bytes replaced by JSON and fence punctuation) are rejected or
 * parsed into consistent proposals, and validating those never breaks the template. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static int consistent(const kt_agent_prop *p)
{
	if (!p->accepted)
		return p->why != NULL;
	switch (p->kind) {
	case KT_AGENT_SET_VALUES:
		return p->param && p->nvals > 0 && p->reason && p->reason[0];
	case KT_AGENT_ADD_CONSTRAINT:
		return p->expr != NULL && p->reason && p->reason[0];
	case KT_AGENT_REVISE_TEMPLATE:
		return p->tmpl != NULL && p->reason && p->reason[0];
	default:
		return 0;
	}
}

static void test_mutated_replies(void)
{
	static const char doc[] = "```json\n{\"proposals\": [{\"kind\": \"set_values\", \"param\": \"BLOCK\", "
				  "\"values\": [64, 128, 512], \"reason\": \"edge\"}, {\"kind\": \"add_constraint\", "
				  "\"expr\": \"BLOCK >= 128 || ALGO == \\\"b\\\"\", \"reason\": \"r\"}, {\"kind\": "
				  "\"set_values\", \"param\": \"ALGO\", \"values\": [\"b\"], \"reason\": \"r\"}]}\n```\n";
	static const char punct[] = "{}[]\":,\n\\`0123456789abBLOCK -";
	kt_buf diags = {0};
	kt_err err = {0};
	kt_tmpl *t = kt_tmpl_parse_text("p.cu.tmpl", plan_tmpl, strlen(plan_tmpl), NULL, &diags, &err);
	if (!t)
		return;
	kt_target g;
	kt_target_lookup("H200", &g, NULL);
	int64_t shape[1] = {4096};
	int parsed = 0, bad = 0, accepted = 0;
	for (int it = 0; it < 3000; it++) {
		char m[sizeof doc];
		memcpy(m, doc, sizeof doc);
		size_t n = sizeof doc - 1;
		if (it % 3 == 0)
			m[rng() % n] = 0; /* truncated */
		for (int k = (int)(rng() % 4); k >= 0; k--)
			m[rng() % n] = punct[rng() % (sizeof punct - 1)];
		kt_agent_props ps;
		if (kt_agent_parse_proposals(m, &ps, &err) == 0) {
			parsed++;
			for (int i = 0; i < ps.n; i++) {
				bad += !consistent(&ps.v[i]);
				kt_agent_check_proposal(t, shape, 1, &g, &ps.v[i]);
				bad += !consistent(&ps.v[i]) || (ps.v[i].accepted && !ps.v[i].new_src);
				accepted += ps.v[i].accepted;
			}
		}
		kt_agent_props_free(&ps);
		kt_buf out = {0};
		char why[128];
		if (kt_agent_extract_template(m, &out, why, sizeof why) == 0)
			bad += out.len > strlen(m);
		kt_buf_free(&out);
	}
	CHECK_INT(bad, 0);
	CHECK(parsed > 100 && accepted > 100); /* the mutations leave many documents usable */
	kt_tmpl_free(t);
	kt_buf_free(&diags);
}

int main(void)
{
	test_control();
	test_extract();
	test_find_kernel();
	test_refactor(KT_AGENT_DIR, KT_EXAMPLES_DIR);
	test_parse_proposals();
	test_check_proposals();
	test_plan_loop();
	test_summary();
	test_propose();
	test_mutated_replies();
	return check_done();
}
