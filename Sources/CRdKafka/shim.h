#ifndef DAYBOOK_CRDKAFKA_SHIM_H
#define DAYBOOK_CRDKAFKA_SHIM_H

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

/* rd_kafka_producev is variadic and its arguments are macros; Swift calls this instead.
 * The payload and key are copied (RD_KAFKA_MSG_F_COPY). On success librdkafka owns
 * `headers` (which may be NULL); on failure the caller still owns them. A `timestamp` of 0
 * (ms since 1970) lets librdkafka stamp the message with the time it is produced. */
static inline rd_kafka_resp_err_t daybook_produce(rd_kafka_t *rk, const char *topic,
                                                  const void *key, size_t key_len,
                                                  const void *value, size_t value_len,
                                                  void *opaque, rd_kafka_headers_t *headers,
                                                  int64_t timestamp) {
    rd_kafka_vu_t vus[7];
    size_t n = 0;
    vus[n].vtype = RD_KAFKA_VTYPE_TOPIC;
    vus[n++].u.cstr = topic;
    vus[n].vtype = RD_KAFKA_VTYPE_KEY;
    vus[n].u.mem.ptr = (void *)key;
    vus[n++].u.mem.size = key_len;
    vus[n].vtype = RD_KAFKA_VTYPE_VALUE;
    vus[n].u.mem.ptr = (void *)value;
    vus[n++].u.mem.size = value_len;
    vus[n].vtype = RD_KAFKA_VTYPE_OPAQUE;
    vus[n++].u.ptr = opaque;
    vus[n].vtype = RD_KAFKA_VTYPE_MSGFLAGS;
    vus[n++].u.i = RD_KAFKA_MSG_F_COPY;
    if (timestamp > 0) {
        vus[n].vtype = RD_KAFKA_VTYPE_TIMESTAMP;
        vus[n++].u.i64 = timestamp;
    }
    if (headers) {
        vus[n].vtype = RD_KAFKA_VTYPE_HEADERS;
        vus[n++].u.headers = headers;
    }
    rd_kafka_error_t *error = rd_kafka_produceva(rk, vus, n);
    if (!error) return RD_KAFKA_RESP_ERR_NO_ERROR;
    rd_kafka_resp_err_t code = rd_kafka_error_code(error);
    rd_kafka_error_destroy(error);
    return code;
}

/* RD_KAFKA_OFFSET_* and RD_KAFKA_PARTITION_UA are macros Swift cannot import as typed constants. */
static inline int64_t daybook_offset_beginning(void) { return RD_KAFKA_OFFSET_BEGINNING; }
static inline int64_t daybook_offset_end(void) { return RD_KAFKA_OFFSET_END; }
static inline int64_t daybook_offset_invalid(void) { return RD_KAFKA_OFFSET_INVALID; }

#endif
