#ifndef SWITCHBOARD_CCURL_SHIM_H
#define SWITCHBOARD_CCURL_SHIM_H

#include <curl/curl.h> /* easy + multi API (curl.h includes multi.h); CURLE_*, CURLOPT_*, CURLINFO_*, CURLMOPT_* */

/* curl_easy_setopt, curl_easy_getinfo and curl_multi_setopt are C variadic functions, which Swift cannot
   call. Each wrapper below fixes the third argument to one concrete type, so the option/type pairing is
   visible at the call site. Nothing else needs a wrapper: the rest of the API is plain functions, and
   the constants are enums or integer macros that Swift imports directly. */

/* curl_easy_setopt with a `long` value (flags, sizes in ms, enums such as CURL_HTTP_VERSION_*). */
static inline CURLcode sb_curl_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

/* curl_easy_setopt with a pointer value: strings (copied by libcurl), CURLOPT_POSTFIELDS (not copied),
   curl_slist lists, CURLOPT_ERRORBUFFER and the *DATA / CURLOPT_PRIVATE callback contexts. */
static inline CURLcode sb_curl_easy_setopt_pointer(CURL *handle, CURLoption option, const void *value) {
    return curl_easy_setopt(handle, option, value);
}

/* curl_easy_setopt with a curl_off_t value (CURLOPT_POSTFIELDSIZE_LARGE). */
static inline CURLcode sb_curl_easy_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

/* curl_easy_setopt for CURLOPT_WRITEFUNCTION and CURLOPT_HEADERFUNCTION (same signature). */
static inline CURLcode sb_curl_easy_setopt_write_callback(CURL *handle, CURLoption option,
                                                           curl_write_callback callback) {
    return curl_easy_setopt(handle, option, callback);
}

/* curl_easy_setopt for CURLOPT_SOCKOPTFUNCTION (called after socket(), before connect()). */
static inline CURLcode sb_curl_easy_setopt_sockopt_callback(CURL *handle, curl_sockopt_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_SOCKOPTFUNCTION, callback);
}

/* curl_easy_setopt for CURLOPT_PREREQFUNCTION (called once a connection is ready, before the request). */
static inline CURLcode sb_curl_easy_setopt_prereq_callback(CURL *handle, curl_prereq_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_PREREQFUNCTION, callback);
}

/* curl_easy_getinfo for `long` results (CURLINFO_RESPONSE_CODE, CURLINFO_HTTP_VERSION). */
static inline CURLcode sb_curl_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

/* curl_multi_setopt with a `long` value (CURLMOPT_MAX_HOST_CONNECTIONS, CURLMOPT_PIPELINING, ...). */
static inline CURLMcode sb_curl_multi_setopt_long(CURLM *handle, CURLMoption option, long value) {
    return curl_multi_setopt(handle, option, value);
}

#endif
