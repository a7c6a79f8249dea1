/* check_driver.c - parses one template and prints its diagnostics to stderr exactly as
 * `kt check` does when a template is invalid: the diagnostics, then "kt check: <summary>".
 * It calls the parser directly so that the malformed-template suite does not depend on the
 * CLI.  Exit status: 0 when the template is valid, 1 when it is not, 2 on misuse. */
#include <stdio.h>

#include "tmpl.h"

int main(int argc, char **argv)
{
	if (argc != 2) {
		fputs("usage: check_driver TEMPLATE\n", stderr);
		return 2;
	}
	kt_buf diags = {0};
	kt_err err = {0};
	kt_tmpl *t = kt_tmpl_parse(argv[1], NULL, &diags, &err);
	int rc = t ? 0 : 1;
	if (!t) {
		fputs(kt_buf_str(&diags), stderr);
		fprintf(stderr, "kt check: %s\n", err.msg);
	}
	kt_tmpl_free(t);
	kt_buf_free(&diags);
	return rc;
}
