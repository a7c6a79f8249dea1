/* json.c - writing cJSON trees out, reading their members (see json.h). */
#include "json.h"

#include <stdlib.h>

char *kt_json_text(const cJSON *j, int pretty)
{
	char *s = pretty ? cJSON_Print(j) : cJSON_PrintUnformatted(j);
	if (!s)
		kt_oom();
	return s;
}

void kt_buf_put_json(kt_buf *b, const cJSON *j)
{
	char *s = kt_json_text(j, 1);
	kt_buf_puts(b, s);
	free(s);
}

const char *kt_json_str(const cJSON *o, const char *name)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, name);
	return cJSON_IsString(it) ? it->valuestring : NULL;
}

double kt_json_num(const cJSON *o, const char *name, double dflt)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, name);
	return cJSON_IsNumber(it) ? it->valuedouble : dflt;
}
