#ifndef SWITCHBOARD_H2_RESET_FILTER_H
#define SWITCHBOARD_H2_RESET_FILTER_H

#include <stdint.h>

/* How many RST_STREAM frames for already-closed streams the filter kept off the wire
   (see h2_reset_filter.c), and how many it had to let through because frames were still
   queued in the session. Both only grow; any thread may read them. */
uint64_t sb_h2_resets_suppressed(void);
uint64_t sb_h2_resets_passed_on_closed(void);

/* 1 when this process's calls to nghttp2_submit_rst_stream (libcurl's included) go through
   the filter, 0 when the dynamic linker bound them elsewhere (then the filter does nothing). */
int sb_h2_reset_filter_active(void);

#endif
