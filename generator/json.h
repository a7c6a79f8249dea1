/* json.h - writing cJSON trees out, and reading their members.  cJSON's printers answer NULL only
 * when memory runs out; these exit through kt_oom instead, like every other allocation, so callers
 * check nothing. */
#ifndef KT_JSON_H
#define KT_JSON_H

#include <cjson/cJSON.h>

#include "util.h"

/* The text of j, indented (pretty) or on one line; the caller frees it. */
char *kt_json_text(const cJSON *j, int pretty);
/* Appends the indented text of j to b. */
void kt_buf_put_json(kt_buf *b, const cJSON *j);

/* Member name of object o: its string, or NULL when it is missing or no string; its number, or
 * dflt when it is missing or no number. */
const char *kt_json_str(const cJSON *o, const char *name);
double kt_json_num(const cJSON *o, const char *name, double dflt);

#endif
