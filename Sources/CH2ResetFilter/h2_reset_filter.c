/*
 * A filter in front of nghttp2_submit_rst_stream, for libcurl 7.88.1 (Debian 12).
 *
 * The defect: libcurl 7.88.1 ends every HTTP/2 transfer whose response has no
 * content-length (an APNs 200 has none) through http2_handle_stream_close(), which sets
 * its `stream->closed` back to FALSE; http2_done() then sees a stream it thinks is open and
 * submits RST_STREAM(STREAM_CLOSED) for it. So after the first push on a connection,
 * every push is followed by an RST_STREAM for a stream that is already closed. RFC 9113
 * §5.1 forbids that ("An endpoint MUST NOT send frames other than PRIORITY on a closed
 * stream"), and servers with a rapid-reset guard (CVE-2023-44487) count those frames:
 * nghttp2 answers GOAWAY after 1,000 resets above 33/s. The connection then churns, the
 * reconnection stalls pushes behind it, and libcurl's retry on the dying connection
 * delivers some pushes twice. Fixed upstream by the HTTP/2 rewrite in curl 8.x, which
 * Debian 12 does not ship.
 *
 * The filter: this object defines nghttp2_submit_rst_stream itself. The executable's
 * definition comes first in the dynamic linker's global scope, so libcurl's call binds
 * here; every call is handed to libnghttp2's function (dlsym RTLD_NEXT) except one that
 * is certainly about a closed stream:
 *   - the error code is STREAM_CLOSED (libcurl's code in http2_done), and
 *   - nghttp2 has no stream of that id, or has it in state CLOSED, and
 *   - nothing is queued in the session. A request whose HEADERS still wait in nghttp2's
 *     queue (for a stream slot) has no stream object yet either; its RST_STREAM is what
 *     cancels the queued HEADERS, so with anything queued the call goes through as before.
 * A reset of a stream that is open (a timeout, a removed transfer, the emulator refusing a
 * stream) always goes through.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <nghttp2/nghttp2.h>
#include <stdatomic.h>
#include <stddef.h>

#include "h2_reset_filter.h"

typedef int (*submit_rst_stream_fn)(nghttp2_session *, uint8_t, int32_t, uint32_t);

static _Atomic(submit_rst_stream_fn) real_submit;
static _Atomic uint64_t suppressed;
static _Atomic uint64_t passed_on_closed;

static submit_rst_stream_fn real_function(void) {
    submit_rst_stream_fn function = atomic_load_explicit(&real_submit, memory_order_acquire);
    if (function == NULL) {
        function = (submit_rst_stream_fn)dlsym(RTLD_NEXT, "nghttp2_submit_rst_stream");
        atomic_store_explicit(&real_submit, function, memory_order_release);
    }
    return function;
}

int nghttp2_submit_rst_stream(nghttp2_session *session, uint8_t flags, int32_t stream_id, uint32_t error_code) {
    if (session != NULL && stream_id > 0 && error_code == NGHTTP2_STREAM_CLOSED) {
        nghttp2_stream *stream = nghttp2_session_find_stream(session, stream_id);
        int closed = stream == NULL || nghttp2_stream_get_state(stream) == NGHTTP2_STREAM_STATE_CLOSED;
        if (closed) {
            if (nghttp2_session_get_outbound_queue_size(session) == 0) {
                atomic_fetch_add_explicit(&suppressed, 1, memory_order_relaxed);
                return 0;
            }
            atomic_fetch_add_explicit(&passed_on_closed, 1, memory_order_relaxed);
        }
    }
    submit_rst_stream_fn function = real_function();
    if (function == NULL) return NGHTTP2_ERR_INVALID_STATE;
    return function(session, flags, stream_id, error_code);
}

uint64_t sb_h2_resets_suppressed(void) { return atomic_load_explicit(&suppressed, memory_order_relaxed); }

uint64_t sb_h2_resets_passed_on_closed(void) {
    return atomic_load_explicit(&passed_on_closed, memory_order_relaxed);
}

int sb_h2_reset_filter_active(void) {
    /* The address the dynamic linker gives for the name is this file's function exactly
       when the global scope binds the name here, which is what libcurl's call sees. */
    void *bound = dlsym(RTLD_DEFAULT, "nghttp2_submit_rst_stream");
    return bound == (void *)nghttp2_submit_rst_stream ? 1 : 0;
}
