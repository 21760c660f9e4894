#ifndef DAYBOOK_CMICROHTTPD_SHIM_H
#define DAYBOOK_CMICROHTTPD_SHIM_H

#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <microhttpd.h>

typedef void *(*daybook_mhd_uri_logger)(void *cls, const char *uri, struct MHD_Connection *connection);

/* The server hands handlers the request-target exactly as sent (taken in the URI log
 * callback), so libmicrohttpd's own unescaping of the path and arguments is not wanted. */
static inline size_t daybook_mhd_keep_escapes(void *cls, struct MHD_Connection *connection, char *text) {
    (void) cls;
    (void) connection;
    return strlen(text);
}

/* MHD_start_daemon is variadic, which Swift cannot call: every option DaybookHTTP sets, in
 * one fixed list. The port comes from `address` (MHD ignores the port argument when
 * MHD_OPTION_SOCK_ADDR is given); `threads` 1 means the polling thread alone. */
static inline struct MHD_Daemon *daybook_mhd_start(
    unsigned int flags, const struct sockaddr *address, unsigned int threads,
    unsigned int connection_limit, unsigned int timeout_seconds, size_t memory_limit,
    MHD_AccessHandlerCallback access, MHD_RequestCompletedCallback completed,
    daybook_mhd_uri_logger uri_logger, void *cls) {
    return MHD_start_daemon(flags, 0, NULL, NULL, access, cls,
                            MHD_OPTION_SOCK_ADDR, address,
                            MHD_OPTION_THREAD_POOL_SIZE, threads,
                            MHD_OPTION_CONNECTION_LIMIT, connection_limit,
                            MHD_OPTION_CONNECTION_TIMEOUT, timeout_seconds,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, memory_limit,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, cls,
                            MHD_OPTION_URI_LOG_CALLBACK, uri_logger, cls,
                            MHD_OPTION_UNESCAPE_CALLBACK, daybook_mhd_keep_escapes, NULL,
                            MHD_OPTION_END);
}

/* MHD_get_daemon_info is variadic and answers a union: the port bound (the chosen one when
 * the address said 0), or 0 when it cannot say. */
static inline uint16_t daybook_mhd_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

#endif
