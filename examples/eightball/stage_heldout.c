/* stage_heldout.c - the demo's stage heldout-before: the SFT policy's samples on the held-out questions (OUT/eval/before.jsonl) */
#include <limits.h>
#include <stdio.h>

#include "eightball/eightball.h"
#include "judgerl/fsutil.h"

jr_status eb_stage_heldout(eb_ctx *c, const void *arg, char *note, size_t cap) {
    (void)arg;
    char model[PATH_MAX], out[PATH_MAX];
    jr_status st = jr_mkdirs(eb_path(c, out, sizeof out, "eval"));
    if (st) return st;
    eb_path(c, model, sizeof model, "policy-sft/model");
    eb_path(c, out, sizeof out, "eval/before.jsonl");
    json_decref(c->before);
    c->before = NULL;
    if ((st = eb_generate(c, model, out, c->z.heldout_samples, &c->before))) return st;
    snprintf(note, cap, "samples of the SFT policy on the held-out questions");
    return JR_OK;
}
