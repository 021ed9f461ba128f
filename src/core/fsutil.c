/* fsutil.c - whole-file reads, atomic writes (temp file, fsync, rename) and directory helpers */
#include "judgerl/fsutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

jr_status jr_read_file(const char *path, char **out, size_t *len) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return jr_fail(errno == ENOENT ? JR_ENOTFOUND : JR_EIO, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *buf = jr_malloc(cap);
    if (!buf) { fclose(f); return JR_ENOMEM; }
    for (;;) {
        if (n + 1 >= cap) {
            cap *= 2;
            char *nb = jr_realloc(buf, cap);
            if (!nb) { free(buf); fclose(f); return JR_ENOMEM; }
            buf = nb;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) break;
    }
    int err = ferror(f);
    fclose(f);
    if (err) { free(buf); return jr_fail(JR_EIO, "%s: read error", path); }
    buf[n] = 0;
    *out = buf;
    if (len) *len = n;
    return JR_OK;
}

static char *dir_of(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return jr_strdup(".");
    if (slash == path) return jr_strdup("/");
    size_t n = (size_t)(slash - path);
    char *d = jr_malloc(n + 1);
    if (d) { memcpy(d, path, n); d[n] = 0; }
    return d;
}

jr_status jr_fsync_dir(const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0) return jr_fail(JR_EIO, "%s: cannot open directory: %s", dir, strerror(errno));
    int rc = fsync(fd);
    close(fd);
    if (rc != 0 && errno != EINVAL) return jr_fail(JR_EIO, "%s: fsync: %s", dir, strerror(errno));
    return JR_OK;
}

/* The stream under a jr_afile: stdio over the fd, remembering the errno of the first failed
 * write(2) so the error reported later is the real one (ENOSPC), not whatever errno holds then. */
struct jr_afile_io {
    int fd;
    int err;
};

static ssize_t io_write(void *c, const char *buf, size_t n) {
    struct jr_afile_io *io = c;
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(io->fd, buf + done, n - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            int e = w < 0 ? errno : ENOSPC; /* a write of nothing: the device is full */
            if (!io->err) io->err = e;
            errno = e;
            return done ? (ssize_t)done : -1;
        }
        done += (size_t)w;
    }
    return (ssize_t)done;
}

static int io_close(void *c) {
    struct jr_afile_io *io = c;
    int rc = close(io->fd);
    if (rc != 0 && !io->err) io->err = errno;
    return rc;
}

int jr_afile_errno(const jr_afile *af) { return af->io ? af->io->err : 0; }

/* The error text of a failed write: the recorded errno, else errno. */
static const char *write_error(const jr_afile *af) {
    int e = jr_afile_errno(af);
    return strerror(e ? e : errno ? errno : EIO);
}

jr_status jr_afile_open(jr_afile *af, const char *path) {
    memset(af, 0, sizeof *af);
    size_t n = strlen(path) + 32;
    af->path = jr_strdup(path);
    af->tmp = jr_malloc(n);
    af->io = jr_calloc(1, sizeof *af->io);
    if (!af->path || !af->tmp || !af->io) { jr_afile_abort(af); return JR_ENOMEM; }
    snprintf(af->tmp, n, "%s.tmp.%ld", path, (long)getpid());
    af->io->fd = open(af->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    cookie_io_functions_t fns = {NULL, io_write, NULL, io_close};
    if (af->io->fd >= 0) af->f = fopencookie(af->io, "wb", fns);
    if (!af->f) {
        jr_status st = jr_fail(JR_EIO, "%s: cannot create: %s", af->tmp, strerror(errno));
        if (af->io->fd >= 0) { close(af->io->fd); unlink(af->tmp); }
        free(af->path); free(af->tmp); free(af->io);
        memset(af, 0, sizeof *af);
        return st;
    }
    return JR_OK;
}

jr_status jr_afile_commit(jr_afile *af) {
    jr_status st = JR_OK;
    if (!af->f) return jr_fail(JR_EINTERNAL, "jr_afile_commit on a file that is not open");
    if (fflush(af->f) != 0 || ferror(af->f)) st = jr_fail(JR_EIO, "%s: write failed: %s", af->path, write_error(af));
    else if (fsync(af->io->fd) != 0) st = jr_fail(JR_EIO, "%s: fsync failed: %s", af->path, strerror(errno));
    int ce = fclose(af->f) != 0 ? af->io->err : 0; /* io_close recorded why */
    if (ce && st == JR_OK) st = jr_fail(JR_EIO, "%s: close failed: %s", af->path, strerror(ce));
    af->f = NULL;
    if (st == JR_OK && rename(af->tmp, af->path) != 0)
        st = jr_fail(JR_EIO, "%s: rename from %s failed: %s", af->path, af->tmp, strerror(errno));
    if (st != JR_OK) {
        unlink(af->tmp);
    } else {
        char *d = dir_of(af->path);
        if (d) { st = jr_fsync_dir(d); free(d); }
    }
    free(af->path); free(af->tmp); free(af->io);
    af->path = af->tmp = NULL;
    af->io = NULL;
    return st;
}

void jr_afile_abort(jr_afile *af) {
    if (af->f) { fclose(af->f); af->f = NULL; }
    if (af->tmp) unlink(af->tmp);
    free(af->path); free(af->tmp); free(af->io);
    af->path = af->tmp = NULL;
    af->io = NULL;
}

jr_status jr_write_atomic(const char *path, const void *data, size_t len) {
    jr_afile af;
    jr_status st = jr_afile_open(&af, path);
    if (st) return st;
    if (len && fwrite(data, 1, len, af.f) != len) {
        st = jr_fail(JR_EIO, "%s: write failed: %s", path, write_error(&af));
        jr_afile_abort(&af);
        return st;
    }
    return jr_afile_commit(&af);
}

jr_status jr_mkdirs(const char *path) {
    char *p = jr_strdup(path);
    if (!p) return JR_ENOMEM;
    size_t n = strlen(p);
    for (size_t i = 1; i <= n; i++) {
        if (p[i] == '/' || p[i] == 0) {
            char c = p[i];
            p[i] = 0;
            if (mkdir(p, 0777) != 0 && errno != EEXIST) {
                jr_status st = jr_fail(JR_EIO, "%s: cannot create directory: %s", p, strerror(errno));
                free(p);
                return st;
            }
            p[i] = c;
        }
    }
    struct stat sb;
    int ok = stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
    free(p);
    if (!ok) return jr_fail(JR_EIO, "%s: exists and is not a directory", path);
    return JR_OK;
}

int jr_path_exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

char *jr_path_join(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    while (a > 1 && dir[a - 1] == '/') a--;
    char *p = jr_malloc(a + b + 2);
    if (!p) return NULL;
    memcpy(p, dir, a);
    p[a] = '/';
    memcpy(p + a + 1, name, b + 1);
    return p;
}

/* jr_rmtree's walk: the first error (errno and path) is kept; the walk goes on so that as much as
 * possible is removed. nftw has no user pointer: the state is per thread. */
static _Thread_local int rm_errno;
static _Thread_local char rm_path[1024];

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb; (void)ftw;
    int rc;
    if (flag == FTW_DNR || flag == FTW_NS) { rc = -1; errno = flag == FTW_DNR ? EACCES : errno ? errno : EIO; }
    else rc = flag == FTW_DP ? rmdir(p) : unlink(p); /* FTW_SL / FTW_SLN: the link itself, never its target */
    if (rc != 0 && !rm_errno) {
        rm_errno = errno ? errno : EIO;
        snprintf(rm_path, sizeof rm_path, "%s", p);
    }
    return 0;
}

jr_status jr_rmtree(const char *path) {
    struct stat sb;
    if (lstat(path, &sb) != 0) {
        if (errno == ENOENT) return JR_OK;
        return jr_fail(JR_EIO, "%s: cannot remove: %s", path, strerror(errno));
    }
    if (!S_ISDIR(sb.st_mode)) { /* a file or a symlink (to a directory too): removed itself */
        if (unlink(path) != 0) return jr_fail(JR_EIO, "%s: cannot remove: %s", path, strerror(errno));
        return JR_OK;
    }
    rm_errno = 0;
    rm_path[0] = 0;
    if (nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS) != 0 && !rm_errno) {
        rm_errno = errno ? errno : EIO;
        snprintf(rm_path, sizeof rm_path, "%s", path);
    }
    if (rm_errno) return jr_fail(JR_EIO, "%s: cannot remove %s: %s", path, rm_path, strerror(rm_errno));
    return JR_OK;
}

/* 1 when dir is an empty directory. */
static int dir_empty(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    struct dirent *e;
    int empty = 1;
    while (empty && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) empty = 0;
    closedir(d);
    return empty;
}

jr_status jr_adir_open(jr_adir *d, const char *path, const char *marker) {
    memset(d, 0, sizeof *d);
    struct stat sb;
    if (stat(path, &sb) == 0) {
        if (!S_ISDIR(sb.st_mode)) return jr_fail(JR_EINVAL, "%s: exists and is not a directory", path);
        if (marker && !dir_empty(path)) {
            char *m = jr_path_join(path, marker);
            int has = m && jr_path_exists(m);
            free(m);
            if (!has) return jr_fail(JR_EINVAL, "%s: refusing to replace a non-empty directory without %s (not an output of this command)", path, marker);
        }
    }
    char *parent = dir_of(path);
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t n = strlen(base) + 8;
    char *name = jr_malloc(n);
    if (name) snprintf(name, n, ".tmp-%s", base);
    d->path = jr_strdup(path);
    d->tmp = parent && name ? jr_path_join(parent, name) : NULL;
    free(parent);
    free(name);
    if (!d->path || !d->tmp) { jr_adir_abort(d); return JR_ENOMEM; }
    if (!*base) { jr_status st = jr_fail(JR_EINVAL, "%s: name the output directory without a trailing '/'", path); jr_adir_abort(d); return st; }
    jr_status st = jr_rmtree(d->tmp); /* left by an earlier crash */
    if (!st) st = jr_mkdirs(d->tmp);
    if (st) jr_adir_abort(d);
    return st;
}

jr_status jr_adir_commit(jr_adir *d) {
    jr_status st = JR_OK;
    int had_old = jr_path_exists(d->path);
    if (had_old) {
        /* atomic swap: tmp <-> path; the old content ends up at tmp */
        if (renameat2(AT_FDCWD, d->tmp, AT_FDCWD, d->path, RENAME_EXCHANGE) != 0) {
            if (errno != EINVAL && errno != ENOSYS) {
                st = jr_fail(JR_EIO, "%s: cannot swap in %s: %s", d->path, d->tmp, strerror(errno));
            } else {
                /* the file system cannot exchange: replace the old directory by two renames (a
                 * kill between them leaves no `path`, the new content stays complete at tmp) */
                size_t n = strlen(d->path) + 8;
                char *old = jr_malloc(n);
                if (!old) st = JR_ENOMEM;
                else {
                    snprintf(old, n, "%s.old", d->path);
                    st = jr_rmtree(old);
                    if (st) {
                    } else if (rename(d->path, old) || rename(d->tmp, d->path))
                        st = jr_fail(JR_EIO, "%s: cannot replace with %s: %s", d->path, d->tmp, strerror(errno));
                    else (void)jr_rmtree(old); /* the new content is in place: a leftover .old is only space */
                    free(old);
                }
            }
        }
    } else if (rename(d->tmp, d->path) != 0) {
        st = jr_fail(JR_EIO, "%s: cannot rename %s to it: %s", d->path, d->tmp, strerror(errno));
    }
    if (!st) {
        char *parent = dir_of(d->path);
        if (parent) { st = jr_fsync_dir(parent); free(parent); }
    }
    jr_adir_abort(d); /* removes tmp: the old content after a swap, the unused new one on error */
    return st;
}

void jr_adir_abort(jr_adir *d) {
    if (d->tmp) (void)jr_rmtree(d->tmp); /* cleanup: the caller's error (or success) is what counts */
    free(d->path);
    free(d->tmp);
    d->path = d->tmp = NULL;
}
