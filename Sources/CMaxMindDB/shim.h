#ifndef SWITCHBOARD_CMAXMINDDB_SHIM_H
#define SWITCHBOARD_CMAXMINDDB_SHIM_H
#include <maxminddb.h>

/* Reads the value at a lookup path of two or three map keys (`third` may be NULL) below
 * `start`. It exists because MMDB_get_value takes its path as C variadic arguments, which Swift
 * cannot call, and MMDB_aget_value takes a NULL-terminated array of C strings, which Swift can
 * only build with nested withCString closures or copies; here the keys are plain arguments
 * (Swift passes string literals straight through) and the array lives on this stack frame. */
static inline int switchboard_mmdb_get_value(
    MMDB_entry_s *start, MMDB_entry_data_s *entry_data, const char *first, const char *second, const char *third) {
    const char *const path[] = {first, second, third, NULL};
    return MMDB_aget_value(start, entry_data, path);
}

#endif
