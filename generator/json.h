/* json.h - writing cJSON trees out.  cJSON's printers answer NULL only when memory runs out;
 * these exit through kt_oom instead, like every other allocation, so callers check nothing. */
#ifndef KT_JSON_H
#define KT_JSON_H

#include <cjson/cJSON.h>

#include "util.h"

/* The text of j, indented (pretty) or on one line; the caller frees it. */
char *kt_json_text(const cJSON *j, int pretty);
/* Appends the indented text of j to b. */
void kt_buf_put_json(kt_buf *b, const cJSON *j);

#endif
