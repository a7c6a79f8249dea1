/* report_fixture.c - writes the fixture cache of unit/report_fixture.h into DIR for the browser
 * test, and prints one line per record: its name, key, evaluations and passing evaluations
 * (the corrupt one: its name and key only).
 *
 *   usage: report_fixture DIR */
#include <stdio.h>

#include "report_fixture.h"

int main(int argc, char **argv)
{
	if (argc != 2) {
		fputs("usage: report_fixture DIR\n", stderr);
		return 1;
	}
	char keys[FX_N][KT_KEY_HEX];
	kt_err err = {0};
	if (fx_write(argv[1], keys, &err) != 0) {
		fprintf(stderr, "report_fixture: %s\n", err.msg);
		return 2;
	}
	printf("main %s %d %d\n", keys[FX_MAIN], FX_MAIN_EVALS, FX_MAIN_OK);
	printf("single %s 1 1\n", keys[FX_SINGLE]);
	printf("allfail %s %d 0\n", keys[FX_ALLFAIL], FX_ALLFAIL_EVALS);
	printf("corrupt %s\n", keys[FX_CORRUPT]);
	return 0;
}
