/* version.h - the version of judgerl's public C API, and the library's own at run time */
#ifndef JUDGERL_VERSION_H
#define JUDGERL_VERSION_H

/* JR_API_VERSION is raised by one whenever a public header changes in a way that breaks a program
 * built against the previous one (a removed or changed function, struct layout or enum value). It is
 * N in the shared library's soname, libjudgerl.so.N, so a program built against another API fails to
 * load instead of running with the wrong layout. */
#define JR_API_VERSION 1

/* The release (`judgerl version`, the pkg-config Version). */
#define JR_VERSION "0.1.0"

/* The JR_API_VERSION the library in use was built with: a program compares it with its header's
 * (a mismatch means a library of another API was loaded). */
int jr_api_version(void);

/* The JR_VERSION the library in use was built with (a static string). */
const char *jr_version(void);

#endif
