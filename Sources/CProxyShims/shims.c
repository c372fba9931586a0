#define _GNU_SOURCE
#include "CProxyShims.h"
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

const uint32_t CProxy_EPOLLIN = EPOLLIN;
const uint32_t CProxy_EPOLLOUT = EPOLLOUT;
const uint32_t CProxy_EPOLLRDHUP = EPOLLRDHUP;
const uint32_t CProxy_EPOLLHUP = EPOLLHUP;
const uint32_t CProxy_EPOLLERR = EPOLLERR;
const uint32_t CProxy_EPOLLET = EPOLLET;

int CProxy_epoll_create(void) {
    int fd = epoll_create1(EPOLL_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

int CProxy_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t token) {
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    ev.events = events;
    ev.data.u64 = token;
    int how = op == 0 ? EPOLL_CTL_ADD : (op == 1 ? EPOLL_CTL_MOD : EPOLL_CTL_DEL);
    return epoll_ctl(epfd, how, fd, &ev) < 0 ? -errno : 0;
}

int CProxy_epoll_wait(int epfd, CProxy_Event *events, int max, int timeout_ms) {
    struct epoll_event evs[256];
    if (max > 256) max = 256;
    int n = epoll_wait(epfd, evs, max, timeout_ms);
    if (n < 0) return -errno;
    for (int i = 0; i < n; i++) {
        events[i].token = evs[i].data.u64;
        events[i].events = evs[i].events;
    }
    return n;
}

int CProxy_eventfd(void) {
    int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

int CProxy_eventfd_signal(int fd) {
    uint64_t one = 1;
    return write(fd, &one, sizeof one) < 0 ? -errno : 0;
}

int CProxy_eventfd_drain(int fd) {
    uint64_t value;
    return read(fd, &value, sizeof value) < 0 ? -errno : 0;
}

static int fill_addr(const char *host, int port, struct sockaddr_storage *ss, socklen_t *len) {
    memset(ss, 0, sizeof *ss);
    struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
        in4->sin_family = AF_INET;
        in4->sin_port = htons((uint16_t)port);
        *len = sizeof *in4;
        return AF_INET;
    }
    if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons((uint16_t)port);
        *len = sizeof *in6;
        return AF_INET6;
    }
    return -1;
}

int CProxy_listen(const char *host, int port, int backlog, int reuseport) {
    struct sockaddr_storage ss;
    socklen_t len;
    int family = fill_addr(host, port, &ss, &len);
    if (family < 0) return -EINVAL;
    int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (reuseport) setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, backlog) < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    return fd;
}

/* Dotted decimal of an IPv4 address into out (at least 16 bytes): glibc's inet_ntop formats with sprintf, about
   1.7k instructions, once per accepted connection. */
static void format_ipv4(const unsigned char *b, char *out) {
    char *p = out;
    for (int i = 0; i < 4; i++) {
        unsigned v = b[i];
        if (v >= 100) { *p++ = (char)('0' + v / 100); v %= 100; *p++ = (char)('0' + v / 10); v %= 10; }
        else if (v >= 10) { *p++ = (char)('0' + v / 10); v %= 10; }
        *p++ = (char)('0' + v);
        if (i < 3) *p++ = '.';
    }
    *p = 0;
}

int CProxy_accept(int fd, char *addr, size_t addrlen, int *port) {
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    int c = accept4(fd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (c < 0) return -errno;
    addr[0] = 0;
    *port = 0;
    if (ss.ss_family == AF_INET) {
        struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
        if (addrlen >= 16) format_ipv4((const unsigned char *)&in4->sin_addr, addr);
        else inet_ntop(AF_INET, &in4->sin_addr, addr, (socklen_t)addrlen);
        *port = ntohs(in4->sin_port);
    } else if (ss.ss_family == AF_INET6) {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
        inet_ntop(AF_INET6, &in6->sin6_addr, addr, (socklen_t)addrlen);
        *port = ntohs(in6->sin6_port);
    }
    return c;
}

int CProxy_connect(const char *numeric_host, int port, int *in_progress) {
    struct sockaddr_storage ss;
    socklen_t len;
    int family = fill_addr(numeric_host, port, &ss, &len);
    *in_progress = 0;
    if (family < 0) return -EINVAL;
    int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *)&ss, len) < 0) {
        if (errno == EINPROGRESS) {
            *in_progress = 1;
            return fd;
        }
        int e = errno;
        close(fd);
        return -e;
    }
    return fd;
}

int CProxy_socket_error(int fd) {
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0) return errno;
    return err;
}

int CProxy_local_port(int fd) {
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0) return -errno;
    if (ss.ss_family == AF_INET) return ntohs(((struct sockaddr_in *)&ss)->sin_port);
    if (ss.ss_family == AF_INET6) return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return -EINVAL;
}

int CProxy_set_nodelay(int fd) {
    int one = 1;
    return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0 ? -errno : 0;
}

int CProxy_resolve(const char *host, char *out, int max) {
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(host, NULL, &hints, &res);
    if (rc != 0) return rc < 0 ? rc : -rc;
    int n = 0;
    // IPv4 first: loopback services commonly listen on 127.0.0.1 only.
    for (int pass = 0; pass < 2; pass++) {
        for (struct addrinfo *p = res; p && n < max; p = p->ai_next) {
            if (pass == 0 && p->ai_family == AF_INET) {
                inet_ntop(AF_INET, &((struct sockaddr_in *)p->ai_addr)->sin_addr, out + 64 * n, 64);
                n++;
            } else if (pass == 1 && p->ai_family == AF_INET6) {
                inet_ntop(AF_INET6, &((struct sockaddr_in6 *)p->ai_addr)->sin6_addr, out + 64 * n, 64);
                n++;
            }
        }
    }
    freeaddrinfo(res);
    return n;
}

const char *CProxy_gai_strerror(int code) { return gai_strerror(code); }

long CProxy_send(int fd, const void *buf, size_t len) {
    ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
    return n < 0 ? -errno : n;
}

long CProxy_recv(int fd, void *buf, size_t len) {
    ssize_t n = recv(fd, buf, len, 0);
    return n < 0 ? -errno : n;
}

int CProxy_shutdown_write(int fd) { return shutdown(fd, SHUT_WR) < 0 ? -errno : 0; }
int CProxy_errno_EAGAIN(void) { return EAGAIN; }
int CProxy_errno_EINPROGRESS(void) { return EINPROGRESS; }
int CProxy_errno_EINTR(void) { return EINTR; }

int CProxy_available_cpus(void) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) != 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        return n > 0 ? (int)n : 1;
    }
    int n = CPU_COUNT(&set);
    return n > 0 ? n : 1;
}
