/* reward_service.h - `judgerl serve-reward`: the reward registry as an HTTP service for distributed
 * RL engines (OpenRLHF's and slime's remote-reward protocols, and a batch API) */
#ifndef JUDGERL_REWARD_SERVICE_H
#define JUDGERL_REWARD_SERVICE_H

#include <stddef.h>
#include <stdio.h>
#include <jansson.h>

#include "judgerl/config.h"
#include "judgerl/reward.h"
#include "judgerl/status.h"

/* The service's options in the reward config (service.*), documented in docs/REWARD_SERVICE.md. */
extern const jr_cfg_field jr_reward_service_cfg[];

typedef struct jr_rsvc_opts {
    const char *host;          /* IPv4 address, "127.0.0.1" */
    int port;                  /* 0 = a free port (jr_rsvc_port) */
    const char *api_key;       /* NULL = no auth; else "Authorization: Bearer <key>" on the POST routes */
    const char *openrlhf_path; /* the OpenRLHF route ("/get_reward") */
    const char *slime_path;    /* the slime route ("/slime") */
    int unscored_value_set;    /* 0: an unscored row fails an OpenRLHF/slime request with 503 (on_unscored: error) */
    double unscored_value;     /* 1: the value answered for it instead (on_unscored: value), each one logged */
    int slime_object;          /* 1: /slime answers {"reward": r, component: value, ...} (slime's --reward-key reward) */
    int max_rows;              /* rows per request; more: 413 */
    int max_inflight_rows;     /* rows being scored at once over every request; more: 429 */
    size_t max_body;           /* bytes; more: 413 */
    int max_connections, max_per_client;
    double header_timeout, body_timeout;
    int log_requests;          /* one line per request on stderr (route, status, rows, time; never a body or header) */
    int allow_code;            /* 1: code-running components (code_tests) without api_key (service.allow_code) */
} jr_rsvc_opts;

/* Fills o from a config loaded with jr_reward_service_cfg (host, port and api_key are left for
 * the command line: host "127.0.0.1", port 8100, no key). Fails naming the key when the two
 * protocols' routes clash with each other or with /health, /metrics, /v1/rewards. */
jr_status jr_rsvc_opts_from_config(jr_rsvc_opts *o, const jr_config *c);

/* The protocols, for jr_rsvc_parse_rows. */
typedef enum { JR_RSVC_OPENRLHF = 0, JR_RSVC_SLIME, JR_RSVC_BATCH } jr_rsvc_protocol;

/* Parses a request body (len bytes) of protocol p into rows (a new JSON array of row objects with
 * prompt, response, reference and label mapped as docs/REWARD_SERVICE.md says). Returns 0, or 400
 * with the message in msg naming the field ("prompts: a list as long as query (2) is required")
 * and *rows NULL. */
int jr_rsvc_parse_rows(jr_rsvc_protocol p, const char *body, size_t len, json_t **rows, char *msg, size_t msz);

typedef struct jr_rsvc jr_rsvc;

/* Starts serving `r` (borrowed until jr_rsvc_stop; started for shared scoring here). On failure
 * *out is NULL and the message names the address. */
jr_status jr_rsvc_start(jr_rsvc **out, jr_reward *r, const jr_rsvc_opts *o);
int jr_rsvc_port(const jr_rsvc *s);
/* Stops taking requests (503, /health 503), waits up to timeout_s for the rows being scored,
 * then stops the HTTP layer (which waits for request threads still scoring: the judge's timeouts
 * bound them), closes every connection and frees s (not the registry). */
void jr_rsvc_stop(jr_rsvc *s, double timeout_s);

/* The default state directory of the config at cfg_path: its path without the extension, plus ".state". */
void jr_rsvc_default_state_dir(const char *cfg_path, char *out, size_t n);

/* `judgerl serve-reward`'s start: opens the registry of ro into *r with its judge cache in state_dir
 * (made if missing; it must outlive the registry), starts serving it into *s, and describes both (judge
 * endpoints, components, unscored rows, state, address) in lines on `log`. Refuses a code-running
 * component (code_tests) unless so->api_key or so->allow_code is set. On failure nothing is left
 * open (*s and *r NULL). */
jr_status jr_rsvc_open(jr_rsvc **s, jr_reward **r, jr_reward_opts ro, const jr_rsvc_opts *so, const char *state_dir, FILE *log);

#endif
