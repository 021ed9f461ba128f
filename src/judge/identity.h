/* identity.h - who answers a judge's requests: GET {base}/models once per endpoint, turned into the
 * identity the cache keys carry (internal to src/judge/) */
#ifndef JUDGERL_JUDGE_IDENTITY_H
#define JUDGERL_JUDGE_IDENTITY_H

#include <curl/curl.h>

#include "judgerl/status.h"

/* Asks GET {base}/models of each endpoint (post_urls[i] ends in /chat/completions or
 * /completions; `hdrs` carries the Authorization header) and builds *identity (malloc'ed):
 *   - "fingerprint:F" when every endpoint that answered reports the same judgerl_fingerprint
 *     (judgerl serve: a hash of its weights and chat template);
 *   - else, per endpoint in order, "URL id=ID root=ROOT max_model_len=N" from the entry whose id
 *     is the configured model (else the first entry; `created` is never used), or "URL model=NAME"
 *     when the server has no /models; an endpoint that could not be reached adds "URL unreachable".
 * *max_model_len gets the smallest max_model_len reported (0 when none).
 * Errors (nothing allocated): every endpoint refused the connection or has no such host (no server
 * is running there), or one answered 401/403 (the key). A timeout is not an error here. *warning (malloc'ed, may be NULL) holds one line when a
 * server's model id differs from the configured name. */
jr_status jr_judge_identity(const char *const *post_urls, const char *const *models, int n, struct curl_slist *hdrs,
                            long connect_ms, long timeout_ms, char **identity, long *max_model_len, char **warning);

#endif
