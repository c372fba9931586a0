// The event loop's poller, three ways behind one interface: epoll (Linux), kqueue (macOS and the BSDs) and
// poll(2), which any POSIX system has (COOKIE_PROXY_POLLER=poll selects it at run time, so the portable path is
// exercised on Linux too). All three are level-triggered: a ready descriptor is reported by every wait until it is
// drained, which is what the loop's handlers expect.
#define _GNU_SOURCE
#include "CProxyShims.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__linux__)
#include <sys/epoll.h>
#include <sys/eventfd.h>
#define CPROXY_HAVE_EPOLL 1
#endif
#if defined(__APPLE__) || defined(__FreeBSD__) || defined(__OpenBSD__) || defined(__NetBSD__)
#include <sys/event.h>
#include <sys/time.h>
#define CPROXY_HAVE_KQUEUE 1
#endif

// The interface's own bits. They are epoll's values, so that the epoll backend passes them through unchanged.
const uint32_t CProxy_EV_IN = 0x001;
const uint32_t CProxy_EV_OUT = 0x004;
const uint32_t CProxy_EV_ERR = 0x008;
const uint32_t CProxy_EV_HUP = 0x010;
const uint32_t CProxy_EV_RDHUP = 0x2000;

static const uint64_t wake_token = UINT64_MAX;

struct CProxy_Poller {
    int kind;
    int fd;       // epoll or kqueue descriptor; -1 for poll
    int wake[2];  // eventfd in wake[0] (epoll), else a non-blocking pipe
    // poll(2): the registered descriptors, their tokens, and each descriptor's index (-1: none).
    struct pollfd *fds;
    uint64_t *tokens;
    int count, capacity;
    int *index;
    int index_capacity;
};

static int set_flags(int fd) {
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) return -errno;
    if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) return -errno;
    return 0;
}

static int open_wake_pipe(CProxy_Poller *p) {
    if (pipe(p->wake) < 0) return -errno;
    int rc = set_flags(p->wake[0]);
    if (rc == 0) rc = set_flags(p->wake[1]);
    return rc;
}

// MARK: poll(2)

static int poll_add(CProxy_Poller *p, int fd, uint32_t events, uint64_t token) {
    if (fd < 0) return -EBADF;
    if (fd >= p->index_capacity) {
        int capacity = p->index_capacity ? p->index_capacity : 256;
        while (capacity <= fd) capacity *= 2;
        int *index = realloc(p->index, sizeof(int) * (size_t)capacity);
        if (!index) return -ENOMEM;
        for (int i = p->index_capacity; i < capacity; i++) index[i] = -1;
        p->index = index;
        p->index_capacity = capacity;
    }
    if (p->index[fd] >= 0) return -EEXIST;
    if (p->count == p->capacity) {
        int capacity = p->capacity ? p->capacity * 2 : 64;
        struct pollfd *fds = realloc(p->fds, sizeof(struct pollfd) * (size_t)capacity);
        if (!fds) return -ENOMEM;
        p->fds = fds;
        uint64_t *tokens = realloc(p->tokens, sizeof(uint64_t) * (size_t)capacity);
        if (!tokens) return -ENOMEM;
        p->tokens = tokens;
        p->capacity = capacity;
    }
    int i = p->count++;
    p->fds[i].fd = fd;
    p->fds[i].events = (short)(((events & CProxy_EV_IN) ? POLLIN : 0) | ((events & CProxy_EV_OUT) ? POLLOUT : 0));
    p->fds[i].revents = 0;
    p->tokens[i] = token;
    p->index[fd] = i;
    return 0;
}

static int poll_modify(CProxy_Poller *p, int fd, uint32_t events, uint64_t token) {
    if (fd < 0 || fd >= p->index_capacity || p->index[fd] < 0) return -ENOENT;
    int i = p->index[fd];
    p->fds[i].events = (short)(((events & CProxy_EV_IN) ? POLLIN : 0) | ((events & CProxy_EV_OUT) ? POLLOUT : 0));
    p->tokens[i] = token;
    return 0;
}

static int poll_remove(CProxy_Poller *p, int fd) {
    if (fd < 0 || fd >= p->index_capacity || p->index[fd] < 0) return -ENOENT;
    int i = p->index[fd];
    int last = --p->count;
    if (i != last) {
        p->fds[i] = p->fds[last];
        p->tokens[i] = p->tokens[last];
        p->index[p->fds[i].fd] = i;
    }
    p->index[fd] = -1;
    return 0;
}

static int poll_wait(CProxy_Poller *p, CProxy_Event *out, int max, int timeout_ms) {
    int n = poll(p->fds, (nfds_t)p->count, timeout_ms);
    if (n < 0) return -errno;
    int filled = 0;
    for (int i = 0; i < p->count && filled < max && n > 0; i++) {
        short r = p->fds[i].revents;
        if (r == 0) continue;
        n--;
        uint32_t events = 0;
        if (r & POLLIN) events |= CProxy_EV_IN;
        if (r & POLLOUT) events |= CProxy_EV_OUT;
        // poll has no "peer shut its side" bit of its own: a read then sees the end of file (POLLIN is set).
        if (r & POLLHUP) events |= CProxy_EV_HUP | CProxy_EV_IN;
        if (r & (POLLERR | POLLNVAL)) events |= CProxy_EV_ERR;
        out[filled].token = p->tokens[i];
        out[filled].events = events;
        filled++;
    }
    return filled;
}

// MARK: kqueue

#if CPROXY_HAVE_KQUEUE
// One change per call: with no room for results, kevent stops at the first change that fails, so the other would
// be lost. The write filter is deleted rather than disabled when unwanted (a listening socket never needs one);
// deleting one that is not there (ENOENT) is not an error.
static int kqueue_change(CProxy_Poller *p, int fd, short filter, unsigned short flags, uint64_t token) {
    struct kevent change;
    EV_SET(&change, fd, filter, flags, 0, 0, (void *)(uintptr_t)token);
    if (kevent(p->fd, &change, 1, NULL, 0, NULL) < 0 && !(errno == ENOENT && (flags & EV_DELETE))) return -errno;
    return 0;
}

static int kqueue_set(CProxy_Poller *p, int fd, uint32_t events, uint64_t token) {
    int rc = kqueue_change(p, fd, EVFILT_READ, EV_ADD | ((events & CProxy_EV_IN) ? EV_ENABLE : EV_DISABLE), token);
    if (rc == 0) {
        rc = kqueue_change(p, fd, EVFILT_WRITE, (events & CProxy_EV_OUT) ? EV_ADD | EV_ENABLE : EV_DELETE, token);
    }
    return rc;
}

static int kqueue_wait(CProxy_Poller *p, CProxy_Event *out, int max, int timeout_ms) {
    struct kevent evs[256];
    if (max > 256) max = 256;
    struct timespec ts = {.tv_sec = timeout_ms / 1000, .tv_nsec = (long)(timeout_ms % 1000) * 1000000L};
    int n = kevent(p->fd, NULL, 0, evs, max, timeout_ms < 0 ? NULL : &ts);
    if (n < 0) return -errno;
    for (int i = 0; i < n; i++) {
        uint32_t events = 0;
        if (evs[i].filter == EVFILT_READ) {
            events |= CProxy_EV_IN;
            // EV_EOF on the read filter: the peer shut its side (epoll's RDHUP); fflags holds a socket error.
            if (evs[i].flags & EV_EOF) events |= CProxy_EV_RDHUP | (evs[i].fflags ? CProxy_EV_ERR : 0);
        } else if (evs[i].filter == EVFILT_WRITE) {
            events |= CProxy_EV_OUT;
            if (evs[i].flags & EV_EOF) events |= CProxy_EV_HUP | (evs[i].fflags ? CProxy_EV_ERR : 0);
        }
        if (evs[i].flags & EV_ERROR) events |= CProxy_EV_ERR;
        out[i].token = (uint64_t)(uintptr_t)evs[i].udata;
        out[i].events = events;
    }
    return n;
}
#endif

// MARK: epoll

#if CPROXY_HAVE_EPOLL
static int epoll_set(CProxy_Poller *p, int op, int fd, uint32_t events, uint64_t token) {
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    ev.events = events;  // the interface's bits are epoll's
    ev.data.u64 = token;
    return epoll_ctl(p->fd, op, fd, &ev) < 0 ? -errno : 0;
}

static int epoll_wait_events(CProxy_Poller *p, CProxy_Event *out, int max, int timeout_ms) {
    struct epoll_event evs[256];
    if (max > 256) max = 256;
    int n = epoll_wait(p->fd, evs, max, timeout_ms);
    if (n < 0) return -errno;
    for (int i = 0; i < n; i++) {
        out[i].token = evs[i].data.u64;
        out[i].events = evs[i].events;
    }
    return n;
}
#endif

// MARK: The interface

int CProxy_poller_native_kind(void) {
#if CPROXY_HAVE_EPOLL
    return CPROXY_POLLER_EPOLL;
#elif CPROXY_HAVE_KQUEUE
    return CPROXY_POLLER_KQUEUE;
#else
    return CPROXY_POLLER_POLL;
#endif
}

int CProxy_poller_create(int kind, CProxy_Poller **out) {
    CProxy_Poller *p = calloc(1, sizeof *p);
    if (!p) return -ENOMEM;
    p->kind = kind;
    p->fd = -1;
    p->wake[0] = p->wake[1] = -1;
    int rc = 0;
    switch (kind) {
#if CPROXY_HAVE_EPOLL
    case CPROXY_POLLER_EPOLL:
        if ((p->fd = epoll_create1(EPOLL_CLOEXEC)) < 0) rc = -errno;
        else if ((p->wake[0] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) rc = -errno;
        else rc = epoll_set(p, EPOLL_CTL_ADD, p->wake[0], EPOLLIN, wake_token);
        break;
#endif
#if CPROXY_HAVE_KQUEUE
    case CPROXY_POLLER_KQUEUE:
        if ((p->fd = kqueue()) < 0) rc = -errno;
        else if (fcntl(p->fd, F_SETFD, FD_CLOEXEC) < 0) rc = -errno;
        else if ((rc = open_wake_pipe(p)) == 0) rc = kqueue_set(p, p->wake[0], CProxy_EV_IN, wake_token);
        break;
#endif
    case CPROXY_POLLER_POLL:
        if ((rc = open_wake_pipe(p)) == 0) rc = poll_add(p, p->wake[0], CProxy_EV_IN, wake_token);
        break;
    default:
        rc = -ENOSYS;
    }
    if (rc != 0) {
        CProxy_poller_destroy(p);
        return rc;
    }
    *out = p;
    return 0;
}

void CProxy_poller_destroy(CProxy_Poller *p) {
    if (!p) return;
    if (p->fd >= 0) close(p->fd);
    if (p->wake[0] >= 0) close(p->wake[0]);
    if (p->wake[1] >= 0) close(p->wake[1]);
    free(p->fds);
    free(p->tokens);
    free(p->index);
    free(p);
}

int CProxy_poller_add(CProxy_Poller *p, int fd, uint32_t events, uint64_t token) {
    switch (p->kind) {
#if CPROXY_HAVE_EPOLL
    case CPROXY_POLLER_EPOLL: return epoll_set(p, EPOLL_CTL_ADD, fd, events, token);
#endif
#if CPROXY_HAVE_KQUEUE
    case CPROXY_POLLER_KQUEUE: return kqueue_set(p, fd, events, token);
#endif
    default: return poll_add(p, fd, events, token);
    }
}

int CProxy_poller_modify(CProxy_Poller *p, int fd, uint32_t events, uint64_t token) {
    switch (p->kind) {
#if CPROXY_HAVE_EPOLL
    case CPROXY_POLLER_EPOLL: return epoll_set(p, EPOLL_CTL_MOD, fd, events, token);
#endif
#if CPROXY_HAVE_KQUEUE
    case CPROXY_POLLER_KQUEUE: return kqueue_set(p, fd, events, token);
#endif
    default: return poll_modify(p, fd, events, token);
    }
}

int CProxy_poller_remove(CProxy_Poller *p, int fd) {
    // Closing a descriptor takes it out of an epoll set (when nothing else refers to its file) and out of a
    // kqueue; poll's table is the caller's, so only it needs the call.
    return p->kind == CPROXY_POLLER_POLL ? poll_remove(p, fd) : 0;
}

int CProxy_poller_wait(CProxy_Poller *p, CProxy_Event *events, int max, int timeout_ms) {
    switch (p->kind) {
#if CPROXY_HAVE_EPOLL
    case CPROXY_POLLER_EPOLL: return epoll_wait_events(p, events, max, timeout_ms);
#endif
#if CPROXY_HAVE_KQUEUE
    case CPROXY_POLLER_KQUEUE: return kqueue_wait(p, events, max, timeout_ms);
#endif
    default: return poll_wait(p, events, max, timeout_ms);
    }
}

int CProxy_poller_wake(CProxy_Poller *p) {
    if (p->kind == CPROXY_POLLER_EPOLL) {
        uint64_t one = 1;
        return write(p->wake[0], &one, sizeof one) < 0 ? -errno : 0;
    }
    char one = 1;
    // A full pipe already holds a wake-up: EAGAIN is success.
    return write(p->wake[1], &one, 1) < 0 && errno != EAGAIN ? -errno : 0;
}

int CProxy_poller_drain_wake(CProxy_Poller *p) {
    if (p->kind == CPROXY_POLLER_EPOLL) {
        uint64_t value;
        return read(p->wake[0], &value, sizeof value) < 0 ? -errno : 0;
    }
    char buffer[64];
    while (read(p->wake[0], buffer, sizeof buffer) > 0) {}
    return 0;
}
