/* bench_grade.c - `judgerl bench grade`: judge client throughput and CPU per request against a loopback
 * server with a fixed latency, at several in-flight levels, beside a Python ThreadPoolExecutor + urllib client
 * (bench/grade_python.py) in the same run */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "judgerl/bench.h"
#include "judgerl/clock.h"
#include "judgerl/fsutil.h"
#include "judgerl/judge.h"

static const char ANSWER[] =
    "{\"id\":\"bench\",\"object\":\"chat.completion\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\","
    "\"content\":\"Feedback: the response answers the question. [RESULT] 4\"},\"finish_reason\":\"stop\"}],"
    "\"usage\":{\"prompt_tokens\":300,\"completion_tokens\":12,\"total_tokens\":312}}";

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method, const char *version,
                                  const char *upload, size_t *upload_size, void **req_cls) {
    (void)url; (void)method; (void)version; (void)upload;
    if (!*req_cls) { *req_cls = (void *)1; return MHD_YES; }
    if (*upload_size) { *upload_size = 0; return MHD_YES; }
    usleep(*(const useconds_t *)cls);
    struct MHD_Response *r = MHD_create_response_from_buffer(sizeof ANSWER - 1, (void *)ANSWER, MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(r, "Content-Type", "application/json");
    enum MHD_Result ret = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ret;
}

/* Forks the server process (thread per connection, each answer after the fixed latency). */
static pid_t start_server(useconds_t latency_us, int *port) {
    int fds[2];
    if (pipe(fds)) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        struct sockaddr_in a = {0};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = 0;
        struct MHD_Daemon *d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL, 0, NULL, NULL,
                                                on_request, &latency_us, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&a, MHD_OPTION_CONNECTION_LIMIT,
                                                (unsigned int)4096, MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned int)4096,
                                                MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)120, MHD_OPTION_END);
        int p = 0;
        if (d) {
            const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
            p = info ? info->port : 0;
        }
        if (write(fds[1], &p, sizeof p) != sizeof p) _exit(1);
        close(fds[1]);
        if (!d || !p) _exit(1);
        for (;;) pause();
    }
    close(fds[1]);
    *port = 0;
    if (pid < 0 || read(fds[0], port, sizeof *port) != sizeof *port || !*port) {
        close(fds[0]);
        if (pid > 0) { kill(pid, SIGKILL); waitpid(pid, NULL, 0); }
        return -1;
    }
    close(fds[0]);
    return pid;
}

/* Grades n rows at `level` in flight; fills the level's figures. */
static jr_status run_level(int port, int level, int n, double lat_s, json_t *out) {
    char yaml[512];
    snprintf(yaml, sizeof yaml,
             "judge:\n  endpoints: [{url: 'http://127.0.0.1:%d/v1', model: bench-judge}]\n  cache: false\n  concurrency: %d\n"
             "  timeout_s: 60\n  max_attempts: 1\n",
             port, level);
    const jr_cfg_field *tabs[] = {jr_judge_cfg, NULL};
    jr_config cfg;
    jr_status st = jr_config_load_string(&cfg, yaml, "bench", 0, NULL, tabs);
    if (st) return st;
    jr_judge *j;
    st = jr_judge_open(&j, &cfg);
    if (st) { jr_config_free(&cfg); return st; }
    double c0 = jr_cpu_s(), t0 = jr_now_s();
    for (int i = 0; i < n && !st; i++) {
        char p[64], r[64];
        snprintf(p, sizeof p, "bench question %d", i);
        snprintf(r, sizeof r, "bench answer %d", i);
        json_t *row = json_pack("{s:i,s:s,s:s}", "id", i, "prompt", p, "response", r);
        st = jr_judge_submit(j, row, NULL, NULL);
        json_decref(row);
    }
    int ok = 0;
    jr_judge_result res[64];
    while (!st && jr_judge_pending(j) > 0) {
        int k = jr_judge_collect(j, res, 64, -1);
        for (int i = 0; i < k; i++) {
            ok += res[i].status == JR_SCORE_OK && res[i].reward == 4;
            jr_judge_result_free(&res[i]);
        }
    }
    double wall = jr_now_s() - t0, cpu = jr_cpu_s() - c0;
    jr_judge_close(j);
    jr_config_free(&cfg);
    if (st) return st;
    double ideal = level / lat_s;
    json_object_set_new(out, "in_flight", json_integer(level));
    json_object_set_new(out, "requests", json_integer(n));
    json_object_set_new(out, "wall_s", json_real(wall));
    json_object_set_new(out, "rps", json_real(n / wall));
    json_object_set_new(out, "ideal_rps", json_real(ideal));
    json_object_set_new(out, "of_ideal", json_real(n / wall / ideal));
    json_object_set_new(out, "cpu_us_per_req", json_real(cpu / n * 1e6));
    json_object_set_new(out, "ok", json_integer(ok));
    return JR_OK;
}

jr_bench_grade_opts jr_bench_grade_opts_default(void) {
    return (jr_bench_grade_opts){.latency_ms = 100, .per_level = 20, .min_requests = 30, .levels = "1,16,64,256",
                                 .python = "/usr/bin/python3"};
}

/* The in-flight levels of o->levels into lv: their count, or -1 when one is not an integer in [1, 4096]
 * (the loopback server's connection limit) or there are more than 16. */
static int parse_levels(const char *levels, int *lv) {
    int n = 0;
    for (const char *p = levels;; p++) {
        char *end;
        long x = strtol(p, &end, 10);
        if (n == 16 || end == p || x < 1 || x > 4096 || (*end && *end != ',')) return -1;
        lv[n++] = (int)x;
        if (!*(p = end)) return n;
    }
}

jr_status jr_bench_grade_check(const jr_bench_grade_opts *o) {
    int lv[16];
    if (o->latency_ms < 0 || o->per_level < 1 || o->per_level > 1 << 16 || o->min_requests < 1)
        return jr_fail(JR_EINVAL, "--latency-ms must be >= 0, --per-level in [1, 65536], --min positive");
    if (parse_levels(o->levels, lv) < 0)
        return jr_fail(JR_EINVAL, "--levels: expected at most 16 integers in [1, 4096] separated by commas, got '%s'", o->levels);
    return JR_OK;
}

/* Runs the Python client against the same server and adds its levels and the ratios to out (or why it
 * did not run). */
static void python_levels(const jr_bench_grade_opts *o, int port, json_t *mine, json_t *out) {
    char *sp = NULL;
    if (!o->script) {
        char exe[4096];
        ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (k > 0) {
            exe[k] = 0;
            for (int up = 0; up < 3; up++) { char *s = strrchr(exe, '/'); if (s) *s = 0; }
            sp = jr_path_join(exe, "bench/grade_python.py");
        }
    } else sp = strdup(o->script);
    char cmdline[8192];
    snprintf(cmdline, sizeof cmdline, "%s %s --url http://127.0.0.1:%d/v1 --levels %s --per-level %d --min %d", o->python,
             sp ? sp : "", port, o->levels, o->per_level, o->min_requests);
    free(sp);
    FILE *f = popen(cmdline, "r");
    char buf[8192];
    size_t len = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    buf[len] = 0;
    int prc = f ? pclose(f) : -1;
    json_t *py = prc == 0 ? json_loads(buf, 0, NULL) : NULL;
    if (!py) {
        json_object_set_new(out, "python_threadpool_urllib", json_sprintf("not run: '%s' failed", cmdline));
        return;
    }
    json_t *pl = json_object_get(py, "levels");
    json_object_set(out, "python_threadpool_urllib", pl);
    json_t *ratio = json_array();
    for (size_t i = 0; i < json_array_size(pl) && i < json_array_size(mine); i++) {
        json_t *a = json_array_get(mine, i), *b = json_array_get(pl, i);
        double ra = json_number_value(json_object_get(a, "rps")), rb = json_number_value(json_object_get(b, "rps"));
        double ca = json_number_value(json_object_get(a, "cpu_us_per_req")), cb = json_number_value(json_object_get(b, "cpu_us_per_req"));
        json_array_append_new(ratio, json_pack("{s:O,s:f,s:f}", "in_flight", json_object_get(a, "in_flight"), "rps_judgerl_over_python",
                                               rb > 0 ? ra / rb : 0.0, "cpu_python_over_judgerl", ca > 0 ? cb / ca : 0.0));
    }
    json_object_set_new(out, "ratio", ratio);
    json_decref(py);
}

jr_status jr_bench_grade(const jr_bench_grade_opts *o, json_t **out) {
    *out = NULL;
    int lv[16], nlv = parse_levels(o->levels, lv), port;
    jr_status st = jr_bench_grade_check(o);
    if (st) return st;
    pid_t srv = start_server((useconds_t)o->latency_ms * 1000, &port);
    if (srv < 0) return jr_fail(JR_ENET, "cannot start the loopback server (libmicrohttpd)");
    json_t *res = json_object(), *mine = json_array();
    json_object_set_new(res, "bench", json_string("grade"));
    json_object_set_new(res, "latency_ms", json_integer(o->latency_ms));
    json_object_set_new(res, "cpus", json_integer(sysconf(_SC_NPROCESSORS_ONLN)));
    for (int i = 0; i < nlv && !st; i++) {
        json_t *lo = json_object();
        int n = lv[i] * o->per_level > o->min_requests ? lv[i] * o->per_level : o->min_requests;
        st = run_level(port, lv[i], n, o->latency_ms / 1000.0, lo);
        if (st) json_decref(lo);
        else json_array_append_new(mine, lo);
    }
    json_object_set_new(res, "judgerl", mine);
    if (!st && strcmp(o->python, "none")) python_levels(o, port, mine, res);
    kill(srv, SIGKILL);
    struct rusage sru;
    int wst;
    if (wait4(srv, &wst, 0, &sru) == srv)
        json_object_set_new(res, "server_cpu_s_all_levels", json_real((double)sru.ru_utime.tv_sec + sru.ru_utime.tv_usec * 1e-6 +
                                                                      (double)sru.ru_stime.tv_sec + sru.ru_stime.tv_usec * 1e-6));
    double la[3];
    if (getloadavg(la, 3) == 3) json_object_set_new(res, "loadavg_1m_after", json_real(la[0]));
    if (st) json_decref(res);
    else *out = res;
    return st;
}
