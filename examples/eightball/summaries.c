/* summaries.c - the demo's figures computed from the two GRPO stages: steering (P(Yes) after GRPO against each
 * judge) and quality (issue 20: judge agreement, garbled share, moves by kind of question) */
#include <stdio.h>

#include "eightball/eightball.h"

/* The steering summary: P(Yes) after GRPO against each judge. */
static void steering_summary(json_t *sum, json_t *grpo) {
    double pu = json_number_value(json_object_get(json_object_get(json_array_get(grpo, 0), "dist_after"), "Yes"));
    double pb = json_number_value(json_object_get(json_object_get(json_array_get(grpo, 1), "dist_after"), "Yes"));
    json_t *stg = json_object();
    json_object_set_new(stg, "p_yes_unbiased", json_real(pu));
    json_object_set_new(stg, "p_yes_biased", json_real(pb));
    json_object_set_new(stg, "delta", json_real(pb - pu));
    json_object_set_new(sum, "steering", stg);
}

/* Whether GRPO against the unbiased judge moved the answers by kind of question: per kind the preferred
 * label's share before / after into byk; 1 when it rose by 5 points or more within every kind. */
static int moves_by_kind(const json_t *u, json_t *byk) {
    static const char *const KINDS[3] = {"hopeful", "risky", "unsure"};
    static const char *const PREF[3] = {"Yes", "No", "Maybe"};
    json_t *kb = json_object_get(u, "kinds_before"), *ka = json_object_get(u, "kinds_after");
    int by_kind = 1;
    for (int j = 0; j < 3; j++) {
        double b = json_number_value(json_object_get(json_object_get(kb, KINDS[j]), PREF[j]));
        double a = json_number_value(json_object_get(json_object_get(ka, KINDS[j]), PREF[j]));
        json_object_set_new(byk, KINDS[j], json_pack("{s:s,s:f,s:f}", "preferred", PREF[j], "before", b, "after", a));
        if (!(a >= b + 0.05)) by_kind = 0;
    }
    return by_kind;
}

/* The demo's quality figures (issue 20): the unbiased judge's agreement with the held-out preference
 * grades against the majority class, the garbled share of the policy's samples before and after
 * GRPO, and whether GRPO against the unbiased judge moved the answers by kind of question (the
 * preferred label's share rose by 5 points or more within every kind) rather than to one label. */
static void quality_summary(json_t *sum, json_t *grpo) {
    static const char *const PREF[3] = {"Yes", "No", "Maybe"};
    json_t *u = json_array_get(grpo, 0), *q = json_object();
    double acc = json_number_value(json_object_get(u, "judge_accuracy"));
    json_object_set_new(q, "judge_agreement", json_real(acc));
    json_object_set_new(q, "majority_class", json_real(json_number_value(json_object_get(u, "judge_majority_class"))));
    double gb = json_number_value(json_object_get(json_object_get(u, "dist_before"), "other")), ga = 0;
    for (size_t i = 0; i < json_array_size(grpo); i++) {
        double g = json_number_value(json_object_get(json_object_get(json_array_get(grpo, i), "dist_after"), "other"));
        if (g > ga) ga = g;
    }
    json_object_set_new(q, "garbled_before", json_real(gb));
    json_object_set_new(q, "garbled_after_max", json_real(ga));
    json_t *byk = json_object();
    int by_kind = moves_by_kind(u, byk);
    double top = 0;
    json_t *da = json_object_get(u, "dist_after");
    for (int j = 0; j < 3; j++) {
        double v = json_number_value(json_object_get(da, PREF[j]));
        if (v > top) top = v;
    }
    json_t *kb = json_object_get(u, "kinds_before"), *ka = json_object_get(u, "kinds_after");
    json_object_set_new(q, "preferred_by_kind", byk);
    json_object_set_new(q, "preferred_before", json_real(json_number_value(json_object_get(kb, "preferred"))));
    json_object_set_new(q, "preferred_after", json_real(json_number_value(json_object_get(ka, "preferred"))));
    json_object_set_new(q, "top_label_share_after", json_real(top));
    json_object_set(q, "kinds_before", kb);
    json_object_set(q, "kinds_after", ka);
    json_t *t = json_object();
    json_object_set_new(t, "judge_agreement_90", json_boolean(acc >= 0.9));
    json_object_set_new(t, "garbled_under_5", json_boolean(gb < 0.05 && ga < 0.05));
    json_object_set_new(t, "moves_by_kind", json_boolean(by_kind));
    json_object_set_new(q, "targets", t);
    json_object_set_new(sum, "quality", q);
}

jr_status eb_stage_summaries(eb_ctx *c, const void *arg, char *note, size_t cap) {
    (void)arg;
    json_t *grpo = json_object_get(c->sum, "grpo");
    if (json_array_size(grpo) != 2) return jr_fail(JR_EINTERNAL, "the summaries need the two GRPO stages, %zu ran", json_array_size(grpo));
    steering_summary(c->sum, grpo);
    quality_summary(c->sum, grpo);
    snprintf(note, cap, "steering and quality figures");
    return JR_OK;
}
