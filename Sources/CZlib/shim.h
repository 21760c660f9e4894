#ifndef DAYBOOK_CZLIB_SHIM_H
#define DAYBOOK_CZLIB_SHIM_H

#include <zlib.h>

/* inflateInit2 is a macro (it passes the library's version and the stream's size); Swift
 * cannot call it. 15 + 16: a gzip wrapper only (RFC 1952), not a bare zlib stream. */
static inline int daybook_inflate_init_gzip(z_stream *stream) {
    return inflateInit2(stream, 15 + 16);
}

#endif
