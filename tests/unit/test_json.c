/* test_json.c - writing cJSON trees out: compact and indented text, appended to a kt_buf. */
#include <stdlib.h>

#include "check.h"
#include "json.h"

int main(void)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "n", 3);
	cJSON_AddStringToObject(o, "s", "a\"b");
	char *s = kt_json_text(o, 0);
	CHECK_STR(s, "{\"n\":3,\"s\":\"a\\\"b\"}");
	free(s);
	s = kt_json_text(o, 1);
	CHECK_STR(s, "{\n\t\"n\":\t3,\n\t\"s\":\t\"a\\\"b\"\n}");
	free(s);
	kt_buf b = {0};
	kt_buf_puts(&b, "x=");
	kt_buf_put_json(&b, cJSON_GetObjectItemCaseSensitive(o, "n"));
	CHECK_STR(kt_buf_str(&b), "x=3");
	kt_buf_free(&b);
	cJSON_Delete(o);
	return check_done();
}
