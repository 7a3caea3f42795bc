#ifndef SWITCHBOARD_CNGHTTP2_SHIM_H
#define SWITCHBOARD_CNGHTTP2_SHIM_H

/* nghttp2 (Debian libnghttp2-dev), the HTTP/2 framing layer of the APNs emulator.
   Only SwitchboardAPNsEmulator (and its tests) import this module. */
#include <nghttp2/nghttp2.h>

/* No static inline wrappers are needed: every nghttp2 call the emulator makes is a plain C
   function, the frame union imports as a struct, and the enum constants it compares against
   (NGHTTP2_HEADERS, NGHTTP2_FLAG_END_STREAM, NGHTTP2_REFUSED_STREAM…) import with a rawValue. */

#endif
