/* plan_driver.c - drives stage 2 of the agent (kt_agent_plan) against a real endpoint, for the
 * agent tests: asks for proposals about a template after a round summarised in a file, and
 * prints one line per proposal ("accepted set_values BLOCK: ..." or "rejected ...: why").
 *
 *   plan_driver TEMPLATE SUMMARY_FILE TRANSCRIPT_OUT GPU SHAPE...
 *
 * The endpoint comes from the environment like for kt (KT_LLM_BASE_URL, ...).  Exit status 0
 * when a plan came back (whatever was accepted), 1 when none did. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "cmd_env.h"

static int fail(const char *what, const kt_err *err)
{
	fprintf(stderr, "plan_driver: %s: %s\n", what, err->msg);
	return 1;
}

static void print_props(const kt_agent_props *ps)
{
	for (int i = 0; i < ps->n; i++) {
		const kt_agent_prop *p = &ps->v[i];
		kt_buf line = {0};
		kt_buf_printf(&line, "%s %s %s: %s", p->accepted ? "accepted" : "rejected", kt_agent_prop_kind_names[p->kind],
			      p->param ? p->param : p->expr ? p->expr : "-", p->accepted ? p->reason : p->why);
		for (const char *c = kt_buf_str(&line); *c; c++) /* one line per proposal, whatever it holds */
			fputs(*c == '\n' ? "\\n" : (char[]){*c, 0}, stdout);
		putchar('\n');
		kt_buf_free(&line);
	}
	kt_plan plan = {0};
	kt_agent_props_to_plan(ps, &plan);
	printf("planner proposals: %zu\n", plan.n);
	kt_plan_free(&plan);
}

int main(int argc, char **argv)
{
	if (argc < 6) {
		fputs("usage: plan_driver TEMPLATE SUMMARY_FILE TRANSCRIPT_OUT GPU SHAPE...\n", stderr);
		return 2;
	}
	kt_err err = {0};
	kt_buf diags = {0}, summary = {0}, transcript = {0};
	kt_target g;
	kt_llm_config lc;
	kt_tmpl *t = kt_tmpl_parse(argv[1], NULL, &diags, &err);
	if (!t)
		return fail(argv[1], &err);
	if (kt_read_file(argv[2], &summary, &err))
		return fail("summary", &err);
	if (kt_target_lookup(argv[4], &g, &err))
		return fail("gpu", &err);
	int nshapes = argc - 5;
	int64_t *shapes = calloc((size_t)nshapes * (size_t)(t->nshapes + 1), sizeof *shapes);
	for (int s = 0; s < nshapes; s++)
		if (kt_tmpl_parse_shape(t, argv[5 + s], shapes + (size_t)s * (size_t)t->nshapes, &err))
			return fail("shape", &err);
	if (kt_env_llm(&lc, &err))
		return fail("llm", &err);
	kt_llm *llm = kt_llm_new(&lc, &err);
	if (!llm)
		return fail("llm", &err);
	kt_plan_req req = {t, shapes, nshapes, &g, kt_buf_str(&summary), 2, 0};
	kt_agent_props props;
	int rc = kt_agent_plan(llm, &req, &props, &transcript, &err);
	kt_err werr = {0};
	if (kt_write_atomic(argv[3], transcript.data, transcript.len, &werr))
		fprintf(stderr, "plan_driver: %s\n", werr.msg);
	if (rc == 0)
		print_props(&props);
	else
		fprintf(stderr, "plan_driver: no plan: %s\n", err.msg);
	kt_llm_usage u = kt_llm_get_usage(llm);
	printf("tokens: %ld in %ld requests\n", u.total_tokens, u.requests);
	kt_agent_props_free(&props);
	kt_llm_free(llm);
	kt_tmpl_free(t);
	free(shapes);
	kt_buf_free(&diags);
	kt_buf_free(&summary);
	kt_buf_free(&transcript);
	return rc ? 1 : 0;
}
