/* provenance.h - where a template came from: stage 1 of the agent (`kt refactor`, agent.h) as
 * the optional "refactor" field of a cache record, beside stage 2's "rounds" (rounds.h).
 *
 * kt refactor writes, as the first line of the template, one of
 *
 *   // kt: verified on GPU against the original kernel NAME (N checks); refactored by MODEL
 *   // kt: NOT VERIFIED on a GPU: refactored by MODEL with kt refactor; ...
 *
 * and its transcript beside it, as TEMPLATE.transcript.json.  The marks are defined here, for the
 * writer (cmd_refactor.c) and the reader alike.
 *
 * The field is {"provenance": the line without its "// ", "verified": true or false,
 * "transcript": the transcript, "note": why no transcript is embedded}.  A transcript is embedded
 * only when it parses as the transcript of a kt refactor that produced a template, is at most
 * KT_PROVENANCE_TRANSCRIPT_MAX bytes and holds no API key of this environment (transcripts are
 * redacted when written; this is a second look, nothing is added).  A note names the transcript
 * by its file name, not its path.
 */
#ifndef KT_PROVENANCE_H
#define KT_PROVENANCE_H

#include <stddef.h>

#include "util.h"

struct cJSON;

#define KT_PROVENANCE_VERIFIED "// kt: verified on "          /* then the GPU, the kernel, the checks */
#define KT_PROVENANCE_NOT_VERIFIED "// kt: NOT VERIFIED on a GPU" /* then what was compiled */
#define KT_PROVENANCE_BY "refactored by "                      /* then the model; in both lines */
#define KT_PROVENANCE_TRANSCRIPT ".transcript.json"           /* appended to the template's path */
#define KT_PROVENANCE_LINE_MAX 1024                           /* bytes of the line kept in a record */
#define KT_PROVENANCE_TRANSCRIPT_MAX (256 * 1024)             /* bytes of a transcript embedded */

/* When the first line of text is one that kt refactor writes: appends it without its "// " (at
 * most KT_PROVENANCE_LINE_MAX bytes) to out and returns 1; else 0, out untouched. */
int kt_provenance_line(const char *text, size_t len, kt_buf *out);

/* The "refactor" field of a record for the template at path whose text is text, as a JSON
 * document appended to out: 1 when the template has a provenance line, else 0 (out untouched).
 * secret (NULL or "": none) is a key that must not be embedded: a transcript holding it is not. */
int kt_provenance_json(const char *path, const char *text, size_t len, const char *secret, kt_buf *out);

/* Stage 1 for `kt cache show`, from a record's "refactor" field (NULL: nothing): the provenance,
 * each round's outcome, the token usage, the note; lines appended to out. */
void kt_provenance_text(const struct cJSON *refactor, kt_buf *out);

#endif
