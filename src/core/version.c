/* version.c - the API version and release the library was built with (version.h) */
#include "judgerl/version.h"

int jr_api_version(void) { return JR_API_VERSION; }

const char *jr_version(void) { return JR_VERSION; }
