/* cmd_env.h - the environment, read by the commands (cmd_*.c) and nowhere else.
 *
 * Every variable kt reads is in one table (cmd_env.c) with its meaning; `kt env` prints it with
 * the values set here.  Library code gets settings as arguments: the commands resolve options
 * first, then these variables, then the defaults.
 */
#ifndef KT_CMD_ENV_H
#define KT_CMD_ENV_H

#include <stdio.h>

#include "agent.h"
#include "llm.h"
#include "util.h"

/* The value of variable name (which must be in the table), or NULL when it is unset or empty. */
const char *kt_env(const char *name);
/* given when not NULL, else the variable's value. */
const char *kt_env_or(const char *given, const char *name);
/* A boolean variable: 1 for 1/on/yes/true/y, 0 otherwise (as CMake spells them too). */
int kt_env_true(const char *name);
/* True for the false spellings ("", 0, off, no, false, n) of a value. */
int kt_env_false_value(const char *v);
/* An integer variable into *v (left alone when unset); -1 naming the variable when it is not one. */
int kt_env_long(const char *name, long long *v, kt_err *err);

/* The user's cache directory: KT_CACHE_DIR, else $XDG_CACHE_HOME/kt, else ~/.cache/kt (a new
 * string); NULL with err when none of them can be made. */
char *kt_env_cache_dir(kt_err *err);
/* Where temporary work directories go: TMPDIR, else NULL (/tmp). */
const char *kt_env_tmpdir(void);

/* The agent's settings: KT_AGENT (mode), KT_AGENT_REPLIES (model replies per task),
 * KT_AGENT_TOKENS (tokens per task), over kt_agent_cfg_defaults; -1 naming a bad variable. */
int kt_env_agent(kt_agent_cfg *c, kt_err *err);
/* Tuning rounds per shape with a planner: KT_TUNE_ROUNDS (0 when unset: the default); -1 naming it
 * when it is not a count from 1 to 20. */
int kt_env_tune_rounds(int *rounds, kt_err *err);
/* The model's endpoint: KT_LLM_BASE_URL (else OPENAI_BASE_URL), KT_LLM_MODEL, the key
 * (kt_env_llm_key), KT_LLM_TIMEOUT, KT_LLM_CONNECT_TIMEOUT, KT_LLM_MAX_WAIT (seconds) and
 * KT_LLM_RETRIES over kt_llm_config_defaults; -1 naming a bad variable, or the endpoint or the
 * model when it is not set. */
int kt_env_llm(kt_llm_config *c, kt_err *err);
/* The API key: KT_LLM_API_KEY, else OPENAI_API_KEY, or NULL. */
const char *kt_env_llm_key(void);

/* Variables that are no longer read but still set: a line saying what replaced each, for the
 * command to print as a warning (empty when none). */
void kt_env_retired(kt_buf *out);

/* The table: one line per variable, its meaning, and its value when set.  `kt env`. */
int kt_cmd_env(int argc, char **argv);

#endif
