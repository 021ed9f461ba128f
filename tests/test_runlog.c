/* test_runlog.c - CRC-32C vectors, TFRecord framing, metrics.jsonl contents and resume, progress lines, runlog.
 * With --write-events DIR it writes a known run with jr_runlog for tests/test_tensorboard.py to read. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <dirent.h>
#include <jansson.h>

#include "harness.h"
#include "judgerl/crc32c.h"
#include "judgerl/metrics.h"
#include "judgerl/progress.h"
#include "judgerl/runlog.h"
#include "judgerl/tensorboard.h"

static char *dir;

/* Bit-at-a-time CRC-32C straight from the definition (reflected polynomial 0x82F63B78). */
static uint32_t crc_ref(const unsigned char *p, size_t n) {
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
    }
    return ~c;
}

TEST(crc32c_vectors) {
    /* RFC 3720 appendix B.4 and the common check value */
    unsigned char buf[48];
    CHECK(jr_crc32c(0, "123456789", 9) == 0xE3069283u);
    memset(buf, 0, 32);
    CHECK(jr_crc32c(0, buf, 32) == 0x8A9136AAu);
    memset(buf, 0xff, 32);
    CHECK(jr_crc32c(0, buf, 32) == 0x62A8AB43u);
    for (int i = 0; i < 32; i++) buf[i] = (unsigned char)i;
    CHECK(jr_crc32c(0, buf, 32) == 0x46DD794Eu);
    for (int i = 0; i < 32; i++) buf[i] = (unsigned char)(31 - i);
    CHECK(jr_crc32c(0, buf, 32) == 0x113FDB5Cu);
    /* iSCSI SCSI Read(10) command PDU */
    static const unsigned char pdu[48] = {0x01, 0xc0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x14, 0, 0, 0, 0, 0, 0x04,
                                          0, 0, 0, 0, 0x14, 0, 0, 0, 0x18, 0x28, 0, 0, 0, 0, 0, 0, 0, 0x02, 0, 0, 0, 0, 0, 0, 0};
    CHECK(jr_crc32c(0, pdu, 48) == 0xD9963A56u);
    CHECK(jr_crc32c(0, "", 0) == 0);
}

TEST(crc32c_matches_reference_any_length_and_alignment) {
    unsigned char *buf = malloc(4096 + 16);
    uint32_t s = 12345;
    for (int i = 0; i < 4096 + 16; i++) { s = s * 1103515245u + 12345u; buf[i] = (unsigned char)(s >> 16); }
    for (size_t off = 0; off < 8; off++)
        for (size_t n = 0; n < 300; n += 7) CHECK(jr_crc32c(0, buf + off, n) == crc_ref(buf + off, n));
    CHECK(jr_crc32c(0, buf, 4096) == crc_ref(buf, 4096));
    /* chaining: CRC(a || b) from CRC(a) */
    CHECK(jr_crc32c(jr_crc32c(0, buf, 1000), buf + 1000, 3000) == crc_ref(buf, 4000));
    free(buf);
}

TEST(tfrecord_framing) {
    unsigned char out[64];
    size_t n = jr_tfrecord_frame(out, "hello", 5);
    CHECK(n == 21);
    CHECK(out[0] == 5 && !memcmp(out + 1, "\0\0\0\0\0\0\0", 7));
    uint32_t c = crc_ref(out, 8);
    uint32_t masked = ((c >> 15) | (c << 17)) + 0xa282ead8u;
    CHECK(out[8] == (masked & 0xff) && out[9] == ((masked >> 8) & 0xff) && out[10] == ((masked >> 16) & 0xff) &&
          out[11] == (masked >> 24));
    CHECK(!memcmp(out + 12, "hello", 5));
    c = crc_ref((const unsigned char *)"hello", 5);
    masked = ((c >> 15) | (c << 17)) + 0xa282ead8u;
    CHECK(((uint32_t)out[17] | (uint32_t)out[18] << 8 | (uint32_t)out[19] << 16 | (uint32_t)out[20] << 24) == masked);
    CHECK(jr_crc32c_mask(0) == 0xa282ead8u);
}

static char *read_all(const char *p) {
    FILE *f = fopen(p, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    b[fread(b, 1, (size_t)n, f)] = 0;
    fclose(f);
    return b;
}

/* The lines of a file as parsed JSON values (array). */
static json_t *json_lines(const char *p) {
    char *t = read_all(p);
    json_t *arr = json_array();
    for (char *line = t ? strtok(t, "\n") : NULL; line; line = strtok(NULL, "\n")) {
        json_t *v = json_loads(line, 0, NULL);
        json_array_append_new(arr, v ? v : json_string("<bad>"));
    }
    free(t);
    return arr;
}

TEST(metrics_jsonl_rows) {
    char p[600];
    snprintf(p, sizeof p, "%s/metrics.jsonl", dir);
    jr_metrics *m;
    double t0 = jr_wall_time();
    CHECK_OK(jr_metrics_open(&m, p, -1));
    if (!m) return;
    const char *names[] = {"loss", "lr", "reward/mean"};
    for (int s = 1; s <= 3; s++) {
        double v[] = {2.5 / s, 1e-4 * s, s == 2 ? NAN : 0.1 * s};
        CHECK_OK(jr_metrics_log(m, s, 3, names, v));
    }
    /* reserved and repeated names are refused, nothing written */
    const char *bad[] = {"step"};
    double one = 1;
    CHECK(jr_metrics_log(m, 9, 1, bad, &one) == JR_EINVAL);
    const char *dup[] = {"a", "a"};
    double two[] = {1, 2};
    CHECK(jr_metrics_log(m, 9, 2, dup, two) == JR_EINVAL);
    CHECK_MSG(strstr(jr_errmsg(), "'a' given twice"), "%s", jr_errmsg());
    /* flushed per step: the file holds every row before close */
    json_t *rows = json_lines(p);
    CHECK(json_array_size(rows) == 3);
    json_decref(rows);
    CHECK_OK(jr_metrics_close(m));
    double t1 = jr_wall_time();
    rows = json_lines(p);
    CHECK(json_array_size(rows) == 3);
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r) {
        int s = (int)i + 1;
        CHECK(json_integer_value(json_object_get(r, "step")) == s);
        double wt = json_number_value(json_object_get(r, "wall_time"));
        CHECK(wt >= t0 - 1 && wt <= t1 + 1);
        CHECK(json_number_value(json_object_get(r, "loss")) == 2.5 / s);
        CHECK(json_number_value(json_object_get(r, "lr")) == 1e-4 * s);
        if (s == 2) CHECK(json_is_null(json_object_get(r, "reward/mean")));
        else CHECK(json_number_value(json_object_get(r, "reward/mean")) == 0.1 * s);
        const char *k;
        json_t *v;
        const char *order[] = {"step", "wall_time", "loss", "lr", "reward/mean"};
        int j = 0;
        json_object_foreach(r, k, v) { CHECK(j < 5 && !strcmp(k, order[j])); j++; }
        CHECK(j == 5);
    }
    json_decref(rows);
    char *txt = read_all(p);
    CHECK(txt && strstr(txt, "\"loss\":2.5,") && strstr(txt, "\"lr\":0.0001,")); /* short exact numbers */
    free(txt);
}

TEST(metrics_resume_drops_later_steps) {
    char p[600];
    snprintf(p, sizeof p, "%s/resume.jsonl", dir);
    jr_metrics *m;
    CHECK_OK(jr_metrics_open(&m, p, -1));
    if (!m) return;
    const char *n[] = {"x"};
    for (int s = 0; s < 10; s++) {
        double v = s;
        CHECK_OK(jr_metrics_log(m, s, 1, n, &v));
    }
    CHECK_OK(jr_metrics_close(m));
    FILE *f = fopen(p, "ab");
    fputs("{\"step\":10,\"wall", f); /* torn by a crash */
    fclose(f);
    /* resumed from the checkpoint of step 6: rows 7..9 will be redone */
    CHECK_OK(jr_metrics_open(&m, p, 6));
    if (!m) return;
    for (int s = 7; s < 9; s++) {
        double v = 100 + s;
        CHECK_OK(jr_metrics_log(m, s, 1, n, &v));
    }
    CHECK_OK(jr_metrics_close(m));
    json_t *rows = json_lines(p);
    CHECK(json_array_size(rows) == 9);
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r) {
        CHECK(json_integer_value(json_object_get(r, "step")) == (json_int_t)i);
        CHECK(json_number_value(json_object_get(r, "x")) == (i <= 6 ? (double)i : 100.0 + (double)i));
    }
    json_decref(rows);
}

static double mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int count(const char *s, char c) {
    int n = 0;
    for (; *s; s++) n += *s == c;
    return n;
}

TEST(progress_plain_lines) {
    char p[600];
    snprintf(p, sizeof p, "%s/progress.txt", dir);
    FILE *f = fopen(p, "w+");
    jr_progress *pr = jr_progress_new("grade", 200, f, JR_PROGRESS_PLAIN);
    double t = mono();
    for (int i = 1; i <= 200; i++) {
        jr_progress_field(pr, "failures", "%d", i / 50);
        jr_progress_set_at(pr, i, t + 0.05 * i); /* 20 items a second, 10 s in all */
    }
    char line[512];
    jr_progress_set_at(pr, 100, t + 0.05 * 100);
    jr_progress_format(pr, t + 5.0, line, sizeof line);
    CHECK_MSG(!strcmp(line, "grade 100/200  50% 20.0/s elapsed 0:05 eta 0:05 failures=4"), "%s", line);
    jr_progress_finish(pr);
    fclose(f);
    char *txt = read_all(p);
    CHECK(txt && !strchr(txt, '\r') && !strchr(txt, '\033'));
    CHECK_MSG(txt && count(txt, '\n') == 11, "%s", txt ? txt : ""); /* one per 10% and the final line */
    CHECK(txt && strstr(txt, "grade 20/200  10%") && strstr(txt, "grade 200/200 100%") && strstr(txt, "(done)"));
    free(txt);
    /* no total: count and rate only */
    pr = jr_progress_new("rows", 0, stderr, JR_PROGRESS_OFF);
    jr_progress_set_at(pr, 30, mono() + 3);
    jr_progress_format(pr, mono() + 3, line, sizeof line);
    CHECK_MSG(!strncmp(line, "rows 30 10.0/s elapsed 0:03", 27), "%s", line);
    jr_progress_finish(pr);
}

TEST(progress_tty_redraws_one_line) {
    char p[600];
    snprintf(p, sizeof p, "%s/tty.txt", dir);
    FILE *f = fopen(p, "w+");
    jr_progress *pr = jr_progress_new("train", 50, f, JR_PROGRESS_TTY);
    double t = mono();
    for (int i = 1; i <= 50; i++) {
        jr_progress_field(pr, "loss", "%.2f", 3.0 / i);
        jr_progress_set_at(pr, i, t + 0.5 * i);
    }
    jr_progress_finish(pr);
    fclose(f);
    char *txt = read_all(p);
    CHECK(txt && count(txt, '\n') == 1 && txt[strlen(txt) - 1] == '\n');
    CHECK(txt && count(txt, '\r') >= 50);
    CHECK(txt && strstr(txt, "\rtrain 50/50 100%") && strstr(txt, "loss=0.06"));
    free(txt);
    jr_progress_add(NULL, 1); /* NULL is accepted everywhere */
    jr_progress_finish(NULL);
}

/* Writes the run that tests/test_tensorboard.py checks: steps 0..4 with loss = 1/(step+1), reward =
 * step - 2.5, and at step 3 an extra "eval/accuracy" = 0.75. Resumed (resume_step >= 0): the steps
 * after resume_step again, with loss 10 higher. */
static int write_events(const char *run_dir, int64_t resume_step) {
    jr_runlog *rl;
    if (jr_runlog_open(&rl, run_dir, resume_step, 1)) { fprintf(stderr, "%s\n", jr_errmsg()); return 1; }
    for (int s = (int)resume_step + 1; s < 5; s++) {
        jr_runlog_add(rl, "loss", 1.0 / (s + 1) + (resume_step >= 0 ? 10 : 0));
        jr_runlog_add(rl, "reward", s - 2.5);
        if (s == 3) jr_runlog_add(rl, "eval/accuracy", 0.75);
        if (jr_runlog_commit(rl, s)) { fprintf(stderr, "%s\n", jr_errmsg()); return 1; }
    }
    if (jr_runlog_close(rl)) { fprintf(stderr, "%s\n", jr_errmsg()); return 1; }
    return 0;
}

TEST(runlog_writes_metrics_and_events) {
    char run[600];
    snprintf(run, sizeof run, "%s/run1", dir);
    CHECK(write_events(run, -1) == 0);
    char p[700];
    snprintf(p, sizeof p, "%s/metrics.jsonl", run);
    json_t *rows = json_lines(p);
    CHECK(json_array_size(rows) == 5);
    json_t *r3 = json_array_get(rows, 3);
    CHECK(json_number_value(json_object_get(r3, "eval/accuracy")) == 0.75);
    CHECK(json_number_value(json_object_get(r3, "reward")) == 0.5);
    CHECK(json_object_get(json_array_get(rows, 2), "eval/accuracy") == NULL);
    json_decref(rows);
    DIR *d = opendir(run);
    int events = 0;
    for (struct dirent *e; d && (e = readdir(d));) events += !strncmp(e->d_name, "events.out.tfevents.", 20);
    if (d) closedir(d);
    CHECK(events == 1);
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "--write-events")) return write_events(argv[2], -1);
    if (argc == 4 && !strcmp(argv[1], "--resume-events")) return write_events(argv[2], atoi(argv[3]));
    dir = jt_tmpdir("runlog");
    RUN(crc32c_vectors);
    RUN(crc32c_matches_reference_any_length_and_alignment);
    RUN(tfrecord_framing);
    RUN(metrics_jsonl_rows);
    RUN(metrics_resume_drops_later_steps);
    RUN(progress_plain_lines);
    RUN(progress_tty_redraws_one_line);
    RUN(runlog_writes_metrics_and_events);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) printf("  could not remove %s\n", dir);
    free(dir);
    return jt_done();
}
