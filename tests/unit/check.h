/* check.h - a tiny unit-test harness.  Each test file is one executable; CHECK records a
 * failure with file:line and goes on; check_done() prints "N passed, N failed" and returns the
 * exit status for ctest. */
#ifndef KT_CHECK_H
#define KT_CHECK_H

#include <stdio.h>
#include <string.h>

static int check_passed, check_failed;

#define CHECK(cond)                                                                      \
	do {                                                                             \
		if (cond) {                                                              \
			check_passed++;                                                  \
		} else {                                                                 \
			check_failed++;                                                  \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
		}                                                                        \
	} while (0)

#define CHECK_STR(got, want)                                                                      \
	do {                                                                                      \
		const char *g_ = (got), *w_ = (want);                                            \
		if (g_ && w_ && strcmp(g_, w_) == 0) {                                            \
			check_passed++;                                                           \
		} else {                                                                          \
			check_failed++;                                                           \
			fprintf(stderr, "%s:%d: got:\n%s\nwant:\n%s\n", __FILE__, __LINE__,      \
				g_ ? g_ : "(null)", w_ ? w_ : "(null)");                           \
		}                                                                                 \
	} while (0)

#define CHECK_INT(got, want)                                                                     \
	do {                                                                                     \
		long long g_ = (long long)(got), w_ = (long long)(want);                         \
		if (g_ == w_) {                                                                  \
			check_passed++;                                                          \
		} else {                                                                         \
			check_failed++;                                                          \
			fprintf(stderr, "%s:%d: %s: got %lld, want %lld\n", __FILE__, __LINE__, #got, g_, w_); \
		}                                                                                \
	} while (0)

static inline int check_done(void)
{
	printf("%d passed, %d failed\n", check_passed, check_failed);
	return check_failed ? 1 : 0;
}

#endif
