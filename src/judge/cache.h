/* cache.h - the judge's response cache: SQLite, keyed by a hash of the model and the request body
 * (internal to src/judge/) */
#ifndef JUDGERL_JUDGE_CACHE_H
#define JUDGERL_JUDGE_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "judgerl/sha256.h"
#include "judgerl/status.h"

typedef struct jr_cache jr_cache;

/* Opens (creating when missing) the SQLite file at path, creating its directory. A file that is
 * not a judgerl cache (wrong application_id or schema version) is refused with a hint. */
jr_status jr_cache_open(jr_cache **out, const char *path);
void jr_cache_close(jr_cache *c);

/* The cache key of a request: SHA-256 (hex, 64 chars + NUL) of the judge's identity (who answers,
 * see identity.h, and the model name), a newline and
 * the canonical JSON of the body (keys sorted, compact) without transport-only fields
 * ("stream", "stream_options"). `body_canon` must already be that canonical text. */
void jr_cache_key(const char *identity, const char *body_canon, char key[65]);

/* Looks a key up: 1 and malloc'ed *content, *finish, *logprobs (JSON text or NULL) when
 * present, 0 when absent, -1 on a database error (treated as a miss). */
int jr_cache_get(jr_cache *c, const char *key, char **content, char **finish, char **logprobs);

/* Stores (or replaces) an entry. Returns 0, or -1 on a database error (the answer is still used). */
int jr_cache_put(jr_cache *c, const char *key, const char *model, const char *content, const char *finish,
                 const char *logprobs);


#endif
