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
#include <sys/socket.h>
#include <unistd.h>
#include <ifaddrs.h>
#include <net/if.h>

#if defined(__linux__)
int CProxy_reuseport_balances(void) { return 1; }
#else
int CProxy_reuseport_balances(void) { return 0; }
#endif

/* A socket of the proxy's: non-blocking, closed on exec, and (where send has no MSG_NOSIGNAL) never raising
   SIGPIPE. Linux sets the first two atomically in socket() and accept4(). */
#if defined(__linux__)
static int new_socket(int family) { return socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0); }
#else
static int prepare_accepted(int fd) {
    int fl = fcntl(fd, F_GETFL);
    int one = 1;
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) < 0
#if defined(SO_NOSIGPIPE)
        || setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, sizeof one) < 0
#endif
    ) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    (void)one;
    return fd;
}
static int new_socket(int family) {
    int fd = socket(family, SOCK_STREAM, 0);
    return fd < 0 ? fd : prepare_accepted(fd);
}
#endif

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
    int fd = new_socket(family);
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

int CProxy_accept(int fd, char *addr, size_t addrlen, int *port, int *loopback) {
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
#if defined(__linux__)
    int c = accept4(fd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
#else
    int c = accept(fd, (struct sockaddr *)&ss, &len);
    if (c >= 0) c = prepare_accepted(c);
#endif
    if (c < 0) return -errno;
    addr[0] = 0;
    *port = 0;
    *loopback = 0;
    if (ss.ss_family == AF_INET) {
        struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
        *loopback = ((const unsigned char *)&in4->sin_addr)[0] == 127;
        if (addrlen >= 16) format_ipv4((const unsigned char *)&in4->sin_addr, addr);
        else inet_ntop(AF_INET, &in4->sin_addr, addr, (socklen_t)addrlen);
        *port = ntohs(in4->sin_port);
    } else if (ss.ss_family == AF_INET6) {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
        const unsigned char *b = in6->sin6_addr.s6_addr;
        *loopback = IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr) || (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) && b[12] == 127);
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
    int fd = new_socket(family);
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
#if defined(MSG_NOSIGNAL)
    ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
#else
    ssize_t n = send(fd, buf, len, 0);  // SO_NOSIGPIPE was set on the socket
#endif
    return n < 0 ? -errno : n;
}

long CProxy_recv(int fd, void *buf, size_t len) {
    ssize_t n = recv(fd, buf, len, 0);
    return n < 0 ? -errno : n;
}

int CProxy_shutdown_write(int fd) { return shutdown(fd, SHUT_WR) < 0 ? -errno : 0; }

int CProxy_set_reset_on_close(int fd) {
    struct linger l = {.l_onoff = 1, .l_linger = 0};
    return setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l) < 0 ? -errno : 0;
}
int CProxy_errno_EAGAIN(void) { return EAGAIN; }
int CProxy_errno_EINTR(void) { return EINTR; }

int CProxy_available_cpus(void) {
#if !defined(__linux__)
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    return online > 0 ? (int)online : 1;
#else
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) != 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        return n > 0 ? (int)n : 1;
    }
    int n = CPU_COUNT(&set);
    return n > 0 ? n : 1;
#endif
}

int CProxy_interface_addresses(char *out, int max) {
    struct ifaddrs *list = NULL;
    if (getifaddrs(&list) < 0) return -errno;
    int n = 0;
    for (struct ifaddrs *i = list; i && n < max; i = i->ifa_next) {
        if (!i->ifa_addr || !(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK)) continue;
        if (i->ifa_addr->sa_family == AF_INET) {
            inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, out + 64 * n, 64);
            n++;
        } else if (i->ifa_addr->sa_family == AF_INET6) {
            struct in6_addr *a = &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr;
            if (IN6_IS_ADDR_LINKLOCAL(a)) continue;  // needs a zone (%en0) to be typed on a device
            inet_ntop(AF_INET6, a, out + 64 * n, 64);
            n++;
        }
    }
    freeifaddrs(list);
    return n;
}

