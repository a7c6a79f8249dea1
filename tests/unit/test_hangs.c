/* test_hangs.c - what made configurations hang (hangs.h): held back only after KT_HANGS_MIN
 * timeouts, only when a configuration holds every pair they share that never ran to its end. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "hangs.h"

static const char src[] = "// @kt kernel k\n// @kt shape n\n"
			  "// @kt param STAGES in 1, 2, 4 default 2\n"
			  "// @kt param BN in 64, 128 default 64\n"
			  "// @kt param MODE in plain, swapped default plain\n"
			  "// @kt grid n\n// @kt block 32\n// @kt arg out float[n] out\n// @kt arg n int = n\n"
			  "__global__ void k(float *out, int n) {}\n";

static kt_tmpl *t;

static const uint16_t *cfg(int stages, int bn, int mode)
{
	static uint16_t c[3];
	c[0] = (uint16_t)stages, c[1] = (uint16_t)bn, c[2] = (uint16_t)mode;
	return c;
}

/* One timeout holds nothing back; the second, agreeing on STAGES=1 alone among what never ran,
 * holds back every configuration with STAGES=1 and names it. */
static void test_one_value(void)
{
	kt_hangs *h = kt_hangs_new(t);
	char why[512] = "";
	kt_hangs_saw(h, cfg(0, 0, 0), KT_TIMED_OUT);    /* STAGES=1, BN=64, plain */
	CHECK(!kt_hangs_hold(h, cfg(0, 1, 1), why, sizeof why)); /* one timeout: nothing yet */
	kt_hangs_saw(h, cfg(1, 0, 0), KT_OK);           /* STAGES=2, BN=64, plain ran */
	kt_hangs_saw(h, cfg(1, 1, 1), KT_CHECK_FAILED); /* ran to its end: BN=128, swapped ran */
	kt_hangs_saw(h, cfg(0, 1, 1), KT_TIMED_OUT);
	CHECK(kt_hangs_hold(h, cfg(0, 0, 1), why, sizeof why));
	CHECK(strstr(why, "STAGES=1") && !strstr(why, "BN=") && !strstr(why, "MODE=") && strstr(why, "the 2 configurations"));
	CHECK(kt_hangs_hold(h, cfg(0, 1, 0), why, sizeof why));
	CHECK(!kt_hangs_hold(h, cfg(1, 0, 1), why, sizeof why));
	CHECK(!kt_hangs_hold(h, cfg(2, 1, 0), why, sizeof why));
	/* One with STAGES=1 that was in flight runs to its end: STAGES=1 is not the cause after all. */
	kt_hangs_saw(h, cfg(0, 1, 0), KT_FAULTED);
	CHECK(!kt_hangs_hold(h, cfg(0, 0, 0), why, sizeof why));
	kt_hangs_free(h);
}

/* Two timeouts that share two pairs nothing else ran with: only a configuration holding both is
 * held back; a third timeout that differs at one of them leaves the other. */
static void test_conjunction(void)
{
	kt_hangs *h = kt_hangs_new(t);
	char why[512];
	kt_hangs_saw(h, cfg(1, 0, 0), KT_OK);           /* STAGES=2, BN=64, plain ran */
	kt_hangs_saw(h, cfg(0, 1, 1), KT_TIMED_OUT);    /* STAGES=1, BN=128, swapped */
	kt_hangs_saw(h, cfg(0, 1, 1), KT_TIMED_OUT);
	CHECK(kt_hangs_hold(h, cfg(0, 1, 1), why, sizeof why));
	CHECK(strstr(why, "STAGES=1, BN=128, MODE=swapped") != NULL);
	CHECK(!kt_hangs_hold(h, cfg(0, 0, 1), why, sizeof why)); /* BN=64 ran: not all of the cause */
	kt_hangs_saw(h, cfg(0, 0, 1), KT_TIMED_OUT);    /* it hangs too: BN is no part of the cause */
	CHECK(kt_hangs_hold(h, cfg(0, 0, 1), why, sizeof why));
	CHECK(strstr(why, "STAGES=1, MODE=swapped") && !strstr(why, "BN="));
	CHECK(!kt_hangs_hold(h, cfg(0, 0, 0), why, sizeof why)); /* plain ran */
	/* Timeouts that share nothing that never ran hold nothing back. */
	kt_hangs_saw(h, cfg(2, 0, 0), KT_TIMED_OUT);
	CHECK(!kt_hangs_hold(h, cfg(0, 0, 1), why, sizeof why));
	CHECK(!kt_hangs_hold(h, cfg(2, 0, 0), why, sizeof why));
	kt_hangs_free(h);
}

/* NULL (every configuration runs) holds nothing; compile failures and limits teach nothing. */
static void test_neutral(void)
{
	char why[64];
	CHECK(!kt_hangs_hold(NULL, cfg(0, 0, 0), why, sizeof why));
	kt_hangs_saw(NULL, cfg(0, 0, 0), KT_TIMED_OUT);
	kt_hangs *h = kt_hangs_new(t);
	kt_hangs_saw(h, cfg(0, 0, 0), KT_TIMED_OUT);
	kt_hangs_saw(h, cfg(0, 1, 0), KT_TIMED_OUT);
	kt_hangs_saw(h, cfg(0, 0, 0), KT_COMPILE_FAILED);
	kt_hangs_saw(h, cfg(0, 0, 0), KT_OVER_LIMITS);
	CHECK(kt_hangs_hold(h, cfg(0, 1, 0), why, sizeof why)); /* STAGES=1 and plain; a short why is cut */
	CHECK(!kt_hangs_hold(h, cfg(0, 1, 1), why, sizeof why));
	CHECK(strlen(why) == sizeof why - 1);
	kt_hangs_free(h);
}

int main(void)
{
	kt_buf diags = {0};
	kt_err err = {0};
	t = kt_tmpl_parse_text("hangs.cu.tmpl", src, sizeof src - 1, NULL, &diags, &err);
	if (!t) {
		fprintf(stderr, "%s%s\n", kt_buf_str(&diags), err.msg);
		return 1;
	}
	test_one_value();
	test_conjunction();
	test_neutral();
	kt_tmpl_free(t);
	kt_buf_free(&diags);
	return check_done();
}
