/* fsutil.h - whole-file reads, atomic writes (temp file, fsync, rename) and directory helpers */
#ifndef JUDGERL_FSUTIL_H
#define JUDGERL_FSUTIL_H

#include <stddef.h>
#include <stdio.h>

#include "judgerl/status.h"

/* Reads a whole file into *out (NUL-terminated, caller frees); *len gets its size (may be NULL).
 * On error *out is NULL and the message names the path. */
jr_status jr_read_file(const char *path, char **out, size_t *len);

/* A file written under a temporary name beside `path` and renamed over it on commit, so that
 * readers see either the old file or the complete new one, never a torn one. */
typedef struct jr_afile {
    FILE *f;      /* write here */
    char *path;   /* final path */
    char *tmp;    /* temporary path */
    struct jr_afile_io *io; /* the stream's file descriptor and its first write error */
} jr_afile;

/* Opens the temporary file. On error nothing is created. */
jr_status jr_afile_open(jr_afile *af, const char *path);
/* Flushes, fsyncs, renames over the final path and fsyncs the directory. Frees af's strings
 * whether or not it succeeds; on error the temporary file is removed and `path` is unchanged. */
jr_status jr_afile_commit(jr_afile *af);
/* Drops the temporary file; the final path is unchanged. Safe on a zeroed or committed af. */
void jr_afile_abort(jr_afile *af);
/* Why a write to af->f failed: the errno of the failed write(2) itself (ENOSPC on a full disk;
 * a short write with no errno counts as ENOSPC), never a stale errno of a later call; 0 when no
 * write failed. */
int jr_afile_errno(const jr_afile *af);

/* Writes len bytes to path atomically (jr_afile under the hood). */
jr_status jr_write_atomic(const char *path, const void *data, size_t len);

/* A directory replaced as a whole: its new content is written into `tmp` (a sibling,
 * DIR/../.tmp-NAME) and jr_adir_commit swaps it in with one atomic rename (RENAME_EXCHANGE when
 * the old directory exists), so after a kill at any moment `path` is either the old complete
 * directory or the new complete one. */
typedef struct jr_adir {
    char *path;   /* final directory */
    char *tmp;    /* write the new content here */
} jr_adir;

/* Creates an empty tmp (clearing one left by an earlier crash). An existing `path` must be a
 * directory that is empty or holds `marker` (e.g. "config.json"; NULL: any directory), so a
 * wrong -o cannot replace an unrelated directory. */
jr_status jr_adir_open(jr_adir *d, const char *path, const char *marker);
/* Swaps tmp in as path, fsyncs the parent and removes the previous content. Frees d's strings;
 * on error path is unchanged and tmp is removed. */
jr_status jr_adir_commit(jr_adir *d);
/* Removes tmp; path is unchanged. Safe on a zeroed or committed d. */
void jr_adir_abort(jr_adir *d);

/* Removes path and, when it is a directory, everything under it (rm -rf without a process):
 * symlinks are removed, never followed (a link to a directory outside the tree leaves that
 * directory untouched). A missing path is JR_OK. On error the walk still removes what it can and
 * the message names the first entry that could not be removed and why. */
jr_status jr_rmtree(const char *path);

/* Creates a directory and its parents (like mkdir -p). Existing directories are fine. */
jr_status jr_mkdirs(const char *path);

/* fsyncs a directory so that a rename inside it is durable. */
jr_status jr_fsync_dir(const char *dir);

/* 1 when path exists (file or directory), else 0. */
int jr_path_exists(const char *path);

/* Joins dir and name with one '/', into a new string (NULL + message on allocation failure). */
char *jr_path_join(const char *dir, const char *name);

#endif
