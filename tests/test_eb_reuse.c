/* test_eb_reuse.c - the 8-ball demo's reuse of a trained model (eb_train_or_reuse_with): reused only
 * when the command, the config's content and the content of every file it names (data, tokenizer, the
 * model it starts from) are those it was trained on; what the training writes into its own directory
 * does not count */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "eightball/eightball.h"
#include "harness.h"
#include "judgerl/fsutil.h"
#include "judgerl/status.h"
#include "judgerl/train.h"

static char base[512], out[600];
static int trainings;

static void put(const char *rel, const char *text) {
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", base, rel);
    FILE *f = fopen(p, "w");
    if (f) { fputs(text, f); fclose(f); }
}

/* The trainer: writes a model (and, as a real training does, a metrics file) into the run directory. */
static jr_status fake_train(const char *config, int n_over, char *const *over, FILE *log, volatile sig_atomic_t *stop,
                            jr_train_result *res) {
    char p[1024];
    memset(res, 0, sizeof *res);
    trainings++;
    snprintf(p, sizeof p, "%s/model", out);
    mkdir(out, 0755);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/model/config.json", out);
    char text[64];
    snprintf(text, sizeof text, "{\"training\": %d}", trainings);
    jr_status st = jr_write_atomic(p, text, strlen(text));
    snprintf(p, sizeof p, "%s/metrics.jsonl", out);
    return st ? st : jr_write_atomic(p, text, strlen(text));
}

static eb_ctx C;
static volatile sig_atomic_t stop_flag;

/* One demo stage's call; returns 1 when it reused the model, 0 when it trained, -1 on error. */
static int stage(int n_over, char *const *over) {
    int reused = -1;
    char cfg[600];
    snprintf(cfg, sizeof cfg, "%s/cfg.yaml", base);
    if (eb_train_or_reuse_with(&C, out, "train", cfg, over, n_over, fake_train, &reused)) {
        printf("# %s\n", jr_errmsg());
        return -1;
    }
    return reused;
}

TEST(reused_only_on_the_same_inputs) {
    char tok[700], init[700], od[700];
    snprintf(tok, sizeof tok, "trainer.tokenizer=%s/tok", base);
    snprintf(init, sizeof init, "model.init=%s/init.json", base);
    snprintf(od, sizeof od, "run.out_dir=%s", out);
    char *over[] = {tok, init, od};
    CHECK(stage(3, over) == 0);
    CHECK(trainings == 1);
    CHECK(stage(3, over) == 1); /* the same: reused, though the training wrote into its own directory */
    put("data.jsonl", "{\"text\": \"regenerated\"}\n");
    CHECK_MSG(stage(3, over) == 0, "data regenerated, the model trained on the old data reused");
    CHECK(stage(3, over) == 1);
    put("tok/tokenizer.json", "{\"model\": \"other\"}");
    CHECK_MSG(stage(3, over) == 0, "a tokenizer directory's file changed (named by an override), the old model reused");
    put("init.json", "{\"hidden\": 8}");
    CHECK_MSG(stage(3, over) == 0, "the starting model changed, the old model reused");
    CHECK(stage(3, over) == 1);
    char cfg[1400];
    snprintf(cfg, sizeof cfg, "data:\n  train: %s/data.jsonl\ntrainer:\n  lr: 2e-3\nrun:\n  out_dir: %s\n", base, out);
    put("cfg.yaml", cfg);
    CHECK_MSG(stage(3, over) == 0, "the config's content changed, the old model reused");
    CHECK(stage(2, over) == 0); /* other arguments */
    CHECK(stage(2, over) == 1);
    CHECK(trainings == 6);
    char p[1024];
    snprintf(p, sizeof p, "%s/demo-args.txt", out);
    char *stamp = NULL;
    CHECK_OK(jr_read_file(p, &stamp, NULL));
    CHECK_MSG(stamp && strstr(stamp, "/data.jsonl ") && strstr(stamp, "/tok/tokenizer.json ") && !strstr(stamp, "metrics.jsonl"),
              "%s", stamp ? stamp : "");
    free(stamp);
}

int main(void) {
    snprintf(base, sizeof base, "%s/jr_eb_reuse_XXXXXX", getenv("JR_TMP") ? getenv("JR_TMP") : "/tmp");
    if (!mkdtemp(base)) { perror("mkdtemp"); return 1; }
    snprintf(out, sizeof out, "%s/run", base);
    char p[700];
    snprintf(p, sizeof p, "%s/tok", base);
    mkdir(p, 0755);
    put("tok/tokenizer.json", "{\"model\": \"bpe\"}");
    put("data.jsonl", "{\"text\": \"a\"}\n");
    put("init.json", "{\"hidden\": 4}");
    char cfg[1400];
    snprintf(cfg, sizeof cfg, "data:\n  train: %s/data.jsonl\ntrainer:\n  lr: 1e-3\nrun:\n  out_dir: %s\n", base, out);
    put("cfg.yaml", cfg);
    snprintf(p, sizeof p, "%s/log", base);
    C.out = base;
    C.logf = fopen(p, "w");
    C.stop = &stop_flag;
    RUN(reused_only_on_the_same_inputs);
    fclose(C.logf);
    jr_rmtree(base);
    return jt_done();
}
