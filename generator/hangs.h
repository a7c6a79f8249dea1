/* hangs.h - what made a problem's configurations hang, so that those holding it are not run.
 *
 * A configuration that hangs costs the watchdog's seconds (10 by default) before its worker is
 * killed and restarted, and a space often holds many that hang for one reason: a value the
 * hardware cannot run (a pipeline of one stage that waits on itself).  A search that proposes them
 * one by one, or a planner's round that extends a parameter to such a value, can spend a whole
 * budget on the watchdog.  So, per problem: once KT_HANGS_MIN configurations have timed out, the
 * (parameter, value) pairs that every one of them holds and that no configuration which ran to
 * its end holds (it passed, gave a wrong result or faulted) are taken for the cause, and a
 * configuration that holds all of them is not run (KT_NOT_RUN).  The more timeouts agree, the
 * fewer the pairs; a pair that is seen to run to its end (a configuration already in flight) is
 * never the cause again.  No pair left: nothing is held back.
 *
 * Ownership: the caller's; the template must outlive it. */
#ifndef KT_HANGS_H
#define KT_HANGS_H

#include <stddef.h>
#include <stdint.h>

#include "result.h"
#include "tmpl.h"

enum { KT_HANGS_MIN = 2 }; /* timeouts at one problem before any configuration is held back */

typedef struct kt_hangs kt_hangs;

kt_hangs *kt_hangs_new(const kt_tmpl *t);
/* Learns from configuration cfg's outcome: KT_TIMED_OUT, or one that ran to its end. */
void kt_hangs_saw(kt_hangs *h, const uint16_t *cfg, kt_status st);
/* 1 when cfg holds every pair taken for the cause, naming them in why ("the 2 configurations that
 * timed out at this shape all hold STAGES=1, which none that ran to its end held"); else 0. */
int kt_hangs_hold(const kt_hangs *h, const uint16_t *cfg, char *why, size_t whysz);
void kt_hangs_free(kt_hangs *h);

#endif
