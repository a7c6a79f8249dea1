/* json.c - writing cJSON trees out (see json.h). */
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
