#ifndef SWITCHBOARD_CLINUX_SHIM_H
#define SWITCHBOARD_CLINUX_SHIM_H
/* Swift's Glibc module does not export epoll, eventfd or accept4; this header does. */
/* No _GNU_SOURCE here: it would give these headers definitions that differ from Glibc's module. */
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

/* accept4 is declared only under _GNU_SOURCE; glibc always exports it. */
extern int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags);

/* EPOLLIN and friends are enum constants of type EPOLL_EVENTS; these give plain uint32_t. */
static inline uint32_t switchboard_epollin(void) { return EPOLLIN; }
static inline uint32_t switchboard_epollout(void) { return EPOLLOUT; }
static inline uint32_t switchboard_epollrdhup(void) { return EPOLLRDHUP; }
static inline uint32_t switchboard_epollhup(void) { return EPOLLHUP; }
static inline uint32_t switchboard_epollerr(void) { return EPOLLERR; }

/* accept4 flags are macros over enum values; Swift sees them with awkward types. */
static inline int switchboard_accept4(int fd, struct sockaddr *addr, socklen_t *len) {
    return accept4(fd, addr, len, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

static inline int switchboard_eventfd(void) {
    return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

static inline int switchboard_epoll_create(void) {
    return epoll_create1(EPOLL_CLOEXEC);
}

/* The epoll_event data union: Swift imports it, but the packed layout is easier to set here. */
static inline void switchboard_epoll_set(struct epoll_event *ev, uint32_t events, uint64_t data) {
    ev->events = events;
    ev->data.u64 = data;
}
static inline uint64_t switchboard_epoll_data(const struct epoll_event *ev) { return ev->data.u64; }
static inline uint32_t switchboard_epoll_events(const struct epoll_event *ev) { return ev->events; }

#endif
