/* fpull: storing registry credentials the way `docker login` does. */
#ifndef FPULL_LOGIN_H
#define FPULL_LOGIN_H

#include "error.h"

/* $DOCKER_CONFIG/config.json, else ~/.docker/config.json. Caller frees. */
FPULL_API char *fpull_login_config_path(void);

/* Stores base64 "user:password" under auths[REGISTRY] (Docker Hub as
 * "https://index.docker.io/v1/", as docker does), keeping every other key of the file.
 * The file is written beside its place with mode 0600 and renamed in. Errors:
 * FPULL_EUSAGE for a malformed existing file, FPULL_EFAIL for I/O. */
FPULL_API int fpull_login_save(const char *registry, const char *username, const char *password,
                               fpull_err *err);

struct fpull_registry_opts;
/* Asks REGISTRY (never a mirror; opts as for fpull_registry_open, may be NULL) whether it
 * takes username and password, as docker login does: GET /v2/ with them, through the
 * token realm when the registry names one. Stores nothing. Errors: FPULL_EAUTH when
 * refused, FPULL_ENET when the registry or its token server cannot be reached, FPULL_EUSAGE
 * for a bad registry name or a malformed credentials file. */
FPULL_API int fpull_login_check(const char *registry, const char *username, const char *password,
                                const struct fpull_registry_opts *opts, fpull_err *err);

/* Removes REGISTRY from auths; *removed (may be NULL) says whether it was there. */
FPULL_API int fpull_logout(const char *registry, int *removed, fpull_err *err);

#endif
