/* test_env.c - the environment interface (env.h) against a slow, out-of-order, sometimes-failing fake
 * environment that answers from its own thread: results land by sample id whatever the arrival order; GRPO
 * trained through it makes bit for bit the same updates as through an in-order environment; back-pressure
 * bounds what is in flight; past the deadline the missing samples are UNSCORED "deadline" and the
 * environment is canceled; a stop request cancels the work in flight ("canceled", JR_ECANCELED), also inside
 * a GRPO step, whose checkpoint then resumes to the weights of a run never stopped */
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "judgerl/fsutil.h"
#include "judgerl/grpo_trainer.h"
#include "judgerl/hfmodel.h"
#include "judgerl/run.h"

/* The reward both environments compute: 1 when the completion starts with a lowercase letter; a
 * completion whose length is 3 mod 4 "fails" (UNSCORED), as a flaky judge would. */
static double rule(const char *text, size_t len, int *scored, const char **why) {
    if (len % 4 == 3) { *scored = 0; *why = "fake failure"; return 0; }
    return len > 0 && text[0] >= 'a' && text[0] <= 'z';
}

static double in_order(void *ud, const json_t *row, const char *text, size_t len, int *scored, const char **why) {
    (void)ud; (void)row;
    return rule(text, len, scored, why);
}

/* ---- the fake environment: jobs answered by a worker thread after a delay that reverses their order ---- */

#define MAXJ 1024
typedef struct {
    pthread_mutex_t mu;
    pthread_t th;
    int quit, canceled, n, hold_every;   /* hold_every > 0: ids divisible by it never answer */
    struct { uint64_t id; double due, reward; int scored; const char *why; jr_env_queue *q; } job[MAXJ];
    int in_flight, max_in_flight, submitted;
} fake;

static double now(void) { return jr_now_s(); }

static void *worker(void *arg) {
    fake *f = arg;
    for (;;) {
        pthread_mutex_lock(&f->mu);
        if (f->quit) { pthread_mutex_unlock(&f->mu); return NULL; }
        for (int i = 0; i < f->n; i++) {
            if (f->job[i].due > now()) continue;
            jr_env_result r = {.id = f->job[i].id, .scored = f->job[i].scored, .reward = f->job[i].reward};
            if (!r.scored) { r.reward = NAN; r.reason = strdup(f->job[i].why); }
            r.cost.model_calls = 2;
            jr_env_result_parts(&r, 0);
            jr_env_queue_push(f->job[i].q, &r); /* pushed under the lock: cancel then sees no later push */
            f->job[i--] = f->job[--f->n];
            f->in_flight--;
        }
        pthread_mutex_unlock(&f->mu);
        usleep(500);
    }
}

static jr_status fake_submit(void *ctx, const json_t *row, const char *text, size_t len, uint64_t id, jr_env_queue *q) {
    fake *f = ctx;
    (void)row;
    pthread_mutex_lock(&f->mu);
    int k = f->n++;
    f->job[k].id = id;
    f->job[k].q = q;
    f->job[k].scored = 1;
    f->job[k].reward = rule(text, len, &f->job[k].scored, &f->job[k].why);
    /* later ids answer sooner: arrival order is roughly the reverse of submission */
    f->job[k].due = (f->hold_every > 0 && id % (uint64_t)f->hold_every == 0) ? INFINITY
                                                                             : now() + 0.002 * (double)(40 - id % 40);
    f->submitted++;
    if (++f->in_flight > f->max_in_flight) f->max_in_flight = f->in_flight;
    pthread_mutex_unlock(&f->mu);
    return JR_OK;
}

static void fake_cancel(void *ctx) {
    fake *f = ctx;
    pthread_mutex_lock(&f->mu);
    f->canceled++;
    f->in_flight -= f->n;
    f->n = 0;
    pthread_mutex_unlock(&f->mu);
}

static void fake_close(void *ctx) {
    fake *f = ctx;
    pthread_mutex_lock(&f->mu);
    f->quit = 1;
    pthread_mutex_unlock(&f->mu);
    pthread_join(f->th, NULL);
    pthread_mutex_destroy(&f->mu);
}

static const jr_env_ops fake_ops = {"fake", fake_submit, NULL, fake_cancel, fake_close};

static void fake_open(fake *f, jr_env *e, int hold_every) {
    memset(f, 0, sizeof *f);
    f->hold_every = hold_every;
    pthread_mutex_init(&f->mu, NULL);
    pthread_create(&f->th, NULL, worker, f);
    *e = (jr_env){&fake_ops, f, 0, NULL, NULL};
}

/* Submits n samples whose completions are "a", "Bb", "ccc", ... and finishes the batch. */
static jr_status run_batch(jr_env *e, int n, jr_env_result *out, const jr_env_batch_opts *o) {
    jr_env_batch *b;
    jr_status st = jr_env_batch_open(&b, e, (size_t)n, out, o);
    char text[64];
    for (int i = 0; i < n && !st; i++) {
        int len = 1 + i % 10;
        for (int k = 0; k < len; k++) text[k] = (char)((i % 2 ? 'A' : 'a') + i % 26);
        json_t *row = json_pack("{s:i}", "i", i);
        st = jr_env_batch_submit(b, (size_t)i, row, text, (size_t)len);
        json_decref(row);
    }
    jr_status st2 = jr_env_batch_finish(b);
    return st ? st : st2;
}

TEST(results_by_sample_id_whatever_the_arrival_order) {
    fake f;
    jr_env a, b;
    fake_open(&f, &a, 0);
    CHECK_OK(jr_env_from_fn(&b, in_order, NULL));
    jr_env_result ra[80], rb[80];
    CHECK_OK(run_batch(&a, 80, ra, NULL));
    CHECK_OK(run_batch(&b, 80, rb, NULL));
    int failed = 0;
    for (int i = 0; i < 80; i++) {
        CHECK(ra[i].id == (uint64_t)i && rb[i].id == (uint64_t)i);
        CHECK(ra[i].scored == rb[i].scored);
        if (ra[i].scored) CHECK(ra[i].reward == rb[i].reward);
        else { CHECK_STR(ra[i].reason, "fake failure"); failed++; }
        CHECK(ra[i].cost.model_calls == 2);
        jr_env_result_free(&ra[i]);
        jr_env_result_free(&rb[i]);
    }
    CHECK(failed == 16); /* lengths 3 and 7 of every 10 */
    jr_env_close(&a);
    jr_env_close(&b);
}

TEST(back_pressure_bounds_in_flight) {
    fake f;
    jr_env a;
    fake_open(&f, &a, 0);
    jr_env_result r[60];
    jr_env_batch_opts o = {.max_in_flight = 4};
    CHECK_OK(run_batch(&a, 60, r, &o));
    CHECK_MSG(f.max_in_flight <= 4 && f.max_in_flight >= 2, "max in flight %d", f.max_in_flight);
    for (int i = 0; i < 60; i++) {
        CHECK(r[i].scored || r[i].reason);
        jr_env_result_free(&r[i]);
    }
    jr_env_close(&a);
}

TEST(deadline_leaves_late_samples_unscored_and_cancels) {
    fake f;
    jr_env a;
    fake_open(&f, &a, 5); /* ids 0, 5, 10, ... never answer */
    jr_env_result r[40];
    jr_env_batch_opts o = {.deadline_s = 0.3};
    double t0 = now();
    CHECK_OK(run_batch(&a, 40, r, &o));
    CHECK(now() - t0 < 5);
    CHECK(f.canceled == 1);
    for (int i = 0; i < 40; i++) {
        if (i % 5 == 0) CHECK_MSG(!r[i].scored && r[i].reason && !strcmp(r[i].reason, "deadline"), "id %d", i);
        else CHECK_MSG(r[i].scored || (r[i].reason && !strcmp(r[i].reason, "fake failure")), "id %d", i);
        jr_env_result_free(&r[i]);
    }
    jr_env_close(&a);
}

static volatile sig_atomic_t stop_flag;
/* Raises the stop once the environment has work in flight (a state, not a time: on a loaded
 * machine a timed stop could come before the first submission). */
static void *raise_stop(void *arg) {
    fake *f = arg;
    for (int submitted = 0; !submitted; usleep(1000)) {
        pthread_mutex_lock(&f->mu);
        submitted = f->submitted > 0;
        pthread_mutex_unlock(&f->mu);
    }
    usleep(20000);
    stop_flag = 1;
    return NULL;
}

TEST(stop_cancels_in_flight_work) {
    fake f;
    jr_env a;
    fake_open(&f, &a, 2); /* half never answer: only the stop ends the wait */
    jr_env_result r[20];
    stop_flag = 0;
    jr_env_batch_opts o = {.stop = &stop_flag};
    pthread_t th;
    pthread_create(&th, NULL, raise_stop, &f);
    jr_status st = run_batch(&a, 20, r, &o);
    pthread_join(th, NULL);
    CHECK(st == JR_ECANCELED);
    CHECK_MSG(f.canceled == 1 && f.n == 0, "canceled %d, pending %d", f.canceled, f.n);
    for (int i = 0; i < 20; i++) {
        if (i % 2 == 0) CHECK_MSG(!r[i].scored && r[i].reason && !strcmp(r[i].reason, "canceled"), "id %d", i);
        jr_env_result_free(&r[i]);
    }
    jr_env_close(&a);
}

static jr_status tiny_policy(void *ud, jr_model *m) {
    jr_model_config cfg;
    jr_status st = jr_model_config_load(&cfg, ud);
    if (!st) st = jr_model_init_random(m, &cfg, 3, 0.02f);
    jr_model_config_free(&cfg);
    return st;
}

/* `steps` GRPO steps through env (resuming run `out` when resume), the final weights into *w (caller
 * frees; w NULL: not read). */
static jr_status grpo_n(jr_env *env, const char *out, const char *prompts, int steps, int resume,
                        volatile sig_atomic_t *stop, char **w, size_t *n) {
    char model_json[1024], path[1200];
    snprintf(model_json, sizeof model_json, "%s/configs/models/tiny-byte.json", jt_root());
    jr_grpo_setup s = {0};
    s.run = (jr_run_opts){.seed = 7, .out_dir = out};
    s.trainer = (jr_trainer_opts){.algo = "grpo", .steps = steps, .resume = resume, .batch_size = 32, .tokenizer = "byte", .lr = 1e-2,
                                  .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .max_grad_norm = 1.0, .log_every = 1};
    s.grpo = (jr_grpo_opts){.num_generations = 4, .prompts_per_step = 8, .max_prompt_length = 16,
                            .max_completion_length = 8, .temperature = 1, .top_p = 1, .epsilon = 0.2,
                            .epsilon_high = -1, .num_iterations = 1, .max_unscored_frac = 0.9, .max_in_flight = 5};
    s.policy = (jr_model_source){.load = tiny_policy, .ud = model_json};
    s.data = (jr_data_opts){.train = prompts, .shuffle = 1, .seed = 7};
    s.env = env;
    s.stop = stop;
    jr_grpo_trainer *t = NULL;
    jr_status st = jr_grpo_open(&t, &s);
    while (!st && !jr_grpo_done(t)) st = jr_grpo_step(t);
    st = jr_grpo_close(t, st);
    snprintf(path, sizeof path, "%s/model/model.safetensors", out);
    return st || !w ? st : jr_read_file(path, w, n);
}

static char *dir, prompts[1200];

TEST(grpo_through_out_of_order_env_makes_the_same_updates) {
    char oa[1200], ob[1200];
    snprintf(oa, sizeof oa, "%s/fake", dir);
    snprintf(ob, sizeof ob, "%s/inorder", dir);
    fake f;
    jr_env a, b;
    fake_open(&f, &a, 0);
    CHECK_OK(jr_env_from_fn(&b, in_order, NULL));
    char *wa = NULL, *wb = NULL;
    size_t na = 0, nb = 0;
    CHECK_OK(grpo_n(&a, oa, prompts, 3, 0, NULL, &wa, &na));
    CHECK_OK(grpo_n(&b, ob, prompts, 3, 0, NULL, &wb, &nb));
    CHECK(f.submitted == 3 * 32 && f.max_in_flight <= 5);
    CHECK_MSG(wa && wb && na == nb && !memcmp(wa, wb, na), "final weights differ (%zu vs %zu bytes)", na, nb);
    /* and the updates were real: some step had a gradient */
    char mp[1300], *m = NULL;
    snprintf(mp, sizeof mp, "%s/metrics.jsonl", oa);
    CHECK_OK(jr_read_file(mp, &m, NULL));
    CHECK(m && strstr(m, "\"grad_norm\":") && !strstr(m, "\"grad_norm\":0,"));
    free(m);
    free(wa);
    free(wb);
    jr_env_close(&a);
    jr_env_close(&b);
}

/* A stop while rewards are pending: the environment is canceled, the state before the step is
 * checkpointed, and the resumed run ends with the weights of a run never stopped. */
TEST(grpo_stop_cancels_pending_rewards_then_resumes_exactly) {
    char oc[1200], ob[1200], latest[1300];
    snprintf(oc, sizeof oc, "%s/stopped", dir);
    snprintf(ob, sizeof ob, "%s/inorder", dir); /* the 3-step in-order run of the test above */
    fake f;
    jr_env a, b;
    fake_open(&f, &a, 1); /* never answers */
    CHECK_OK(jr_env_from_fn(&b, in_order, NULL));
    stop_flag = 0;
    pthread_t th;
    pthread_create(&th, NULL, raise_stop, &f);
    jr_status st = grpo_n(&a, oc, prompts, 3, 0, &stop_flag, NULL, NULL);
    pthread_join(th, NULL);
    CHECK_MSG(st == JR_ECANCELED && strstr(jr_errmsg(), "during step 1"), "%d: %s", st, jr_errmsg());
    CHECK_MSG(f.canceled == 1 && f.n == 0, "canceled %d, pending %d", f.canceled, f.n);
    snprintf(latest, sizeof latest, "%s/checkpoints/step-00000000/trainer_state.json", oc);
    CHECK(jr_path_exists(latest));
    char *wc = NULL, *wb = NULL, mb[1300];
    size_t nc = 0, nb = 0;
    CHECK_OK(grpo_n(&b, oc, prompts, 3, 1, NULL, &wc, &nc));
    snprintf(mb, sizeof mb, "%s/model/model.safetensors", ob);
    CHECK_OK(jr_read_file(mb, &wb, &nb));
    CHECK_MSG(wc && wb && nc == nb && !memcmp(wc, wb, nc), "resumed weights differ from the uninterrupted run");
    free(wc);
    free(wb);
    jr_env_close(&a);
    jr_env_close(&b);
}

int main(void) {
    dir = jt_tmpdir("env");
    snprintf(prompts, sizeof prompts, "%s/prompts.jsonl", dir);
    FILE *fp = fopen(prompts, "w");
    for (int i = 0; fp && i < 24; i++) fprintf(fp, "{\"prompt\": \"Q%d:\"}\n", i);
    if (fp) fclose(fp);
    RUN(results_by_sample_id_whatever_the_arrival_order);
    RUN(back_pressure_bounds_in_flight);
    RUN(deadline_leaves_late_samples_unscored_and_cancels);
    RUN(stop_cancels_in_flight_work);
    RUN(grpo_through_out_of_order_env_makes_the_same_updates);
    RUN(grpo_stop_cancels_pending_rewards_then_resumes_exactly);
    free(dir);
    return jt_done();
}
