/* cmd_bench_grade.c - `judgerl bench grade`: judge client throughput and CPU per request against a
 * loopback server with a fixed latency, at several in-flight levels, beside a Python
 * ThreadPoolExecutor + urllib client (bench/grade_python.py) in the same run */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "judgerl/clock.h"
#include "judgerl/fsutil.h"
#include "judgerl/judge.h"

static const char ANSWER[] =
    "{\"id\":\"bench\",\"object\":\"chat.completion\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\","
    "\"content\":\"Feedback: the response answers the question. [RESULT] 4\"},\"finish_reason\":\"stop\"}],"
    "\"usage\":{\"prompt_tokens\":300,\"completion_tokens\":12,\"total_tokens\":312}}";

static useconds_t latency_us;

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method, const char *version,
                                  const char *upload, size_t *upload_size, void **req_cls) {
    (void)cls; (void)url; (void)method; (void)version; (void)upload;
    if (!*req_cls) { *req_cls = (void *)1; return MHD_YES; }
    if (*upload_size) { *upload_size = 0; return MHD_YES; }
    usleep(latency_us);
    struct MHD_Response *r = MHD_create_response_from_buffer(sizeof ANSWER - 1, (void *)ANSWER, MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(r, "Content-Type", "application/json");
    enum MHD_Result ret = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ret;
}

/* Forks the server process (thread per connection, each answer after the fixed latency). */
static pid_t start_server(int *port) {
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
                                                on_request, NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&a, MHD_OPTION_CONNECTION_LIMIT,
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

static double cpu_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
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
    double c0 = cpu_s(), t0 = jr_now_s();
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
    double wall = jr_now_s() - t0, cpu = cpu_s() - c0;
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

int cmd_bench_grade(int argc, char **argv) {
    const char *cmd = "bench grade";
    if (cli_wants_help(argc, argv)) {
        printf("usage: judgerl bench grade [--latency-ms 100] [--levels 1,16,64,256] [--per-level 20] [--min 30]\n"
               "                           [--python /usr/bin/python3 | --python none] [--script bench/grade_python.py]\n"
               "Starts a loopback judge server (libmicrohttpd, every answer after the fixed latency) in a child\n"
               "process, grades max(level*per-level, min) pointwise rows at each in-flight level with judgerl's\n"
               "client, then the same with the Python ThreadPoolExecutor + urllib client, and prints one JSON\n"
               "object: requests/s, share of the ideal (in-flight / latency) and client CPU per request.\n");
        return CLI_OK;
    }
    int lat_ms = 100, per = 20, mn = 30;
    const char *levels = "1,16,64,256", *python = "/usr/bin/python3", *script = NULL;
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc) return cli_usage(cmd, "%s needs a value", argv[i]);
        const char *a = argv[i], *v = argv[++i];
        if (!strcmp(a, "--latency-ms")) lat_ms = atoi(v);
        else if (!strcmp(a, "--levels")) levels = v;
        else if (!strcmp(a, "--per-level")) per = atoi(v);
        else if (!strcmp(a, "--min")) mn = atoi(v);
        else if (!strcmp(a, "--python")) python = v;
        else if (!strcmp(a, "--script")) script = v;
        else return cli_usage(cmd, "unknown option '%s'", a);
    }
    if (lat_ms < 0 || per < 1 || mn < 1) return cli_usage(cmd, "--latency-ms, --per-level and --min must be positive");
    latency_us = (useconds_t)lat_ms * 1000;
    int lv[16], nlv = 0;
    for (const char *p = levels; *p && nlv < 16;) {
        lv[nlv] = atoi(p);
        if (lv[nlv] < 1) return cli_usage(cmd, "--levels: expected positive integers separated by commas, got '%s'", levels);
        nlv++;
        p = strchr(p, ',');
        if (!p) break;
        p++;
    }
    int port;
    pid_t srv = start_server(&port);
    if (srv < 0) return cli_fail(cmd, jr_fail(JR_ENET, "cannot start the loopback server (libmicrohttpd)"));
    json_t *out = json_object(), *mine = json_array();
    json_object_set_new(out, "bench", json_string("grade"));
    json_object_set_new(out, "latency_ms", json_integer(lat_ms));
    json_object_set_new(out, "cpus", json_integer(sysconf(_SC_NPROCESSORS_ONLN)));
    int rc = CLI_OK;
    for (int i = 0; i < nlv; i++) {
        json_t *o = json_object();
        int n = lv[i] * per > mn ? lv[i] * per : mn;
        jr_status st = run_level(port, lv[i], n, lat_ms / 1000.0, o);
        if (st) { json_decref(o); rc = cli_fail(cmd, st); break; }
        json_array_append_new(mine, o);
    }
    json_object_set_new(out, "judgerl", mine);
    if (!rc && strcmp(python, "none")) {
        char *sp = NULL;
        if (!script) {
            char exe[4096];
            ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
            if (k > 0) {
                exe[k] = 0;
                for (int up = 0; up < 3; up++) { char *s = strrchr(exe, '/'); if (s) *s = 0; }
                sp = jr_path_join(exe, "bench/grade_python.py");
            }
        } else sp = strdup(script);
        char cmdline[8192];
        snprintf(cmdline, sizeof cmdline, "%s %s --url http://127.0.0.1:%d/v1 --levels %s --per-level %d --min %d", python, sp ? sp : "", port,
                 levels, per, mn);
        free(sp);
        FILE *f = popen(cmdline, "r");
        char buf[8192];
        size_t len = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        buf[len] = 0;
        int prc = f ? pclose(f) : -1;
        json_t *py = prc == 0 ? json_loads(buf, 0, NULL) : NULL;
        if (py) {
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
        } else {
            json_object_set_new(out, "python_threadpool_urllib", json_sprintf("not run: '%s' failed", cmdline));
        }
    }
    kill(srv, SIGKILL);
    struct rusage sru;
    int wst;
    if (wait4(srv, &wst, 0, &sru) == srv)
        json_object_set_new(out, "server_cpu_s_all_levels", json_real((double)sru.ru_utime.tv_sec + sru.ru_utime.tv_usec * 1e-6 +
                                                                      (double)sru.ru_stime.tv_sec + sru.ru_stime.tv_usec * 1e-6));
    double la[3];
    if (getloadavg(la, 3) == 3) json_object_set_new(out, "loadavg_1m_after", json_real(la[0]));
    if (!rc) {
        char *t = json_dumps(out, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(5));
        if (t) puts(t);
        free(t);
    }
    json_decref(out);
    return rc;
}
