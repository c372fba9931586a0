#ifndef CPROXYSHIMS_H
#define CPROXYSHIMS_H
// The only C the proxy's I/O shell needs: epoll, eventfd and accept4 are not in Swift's Glibc module,
// and accept4 needs _GNU_SOURCE. Each function is a thin, prefixed wrapper; errors are returned as -errno.
#include <stdint.h>
#include <stddef.h>

/// EPOLL* bits, as plain integers.
extern const uint32_t CProxy_EPOLLIN;
extern const uint32_t CProxy_EPOLLOUT;
extern const uint32_t CProxy_EPOLLRDHUP;
extern const uint32_t CProxy_EPOLLHUP;
extern const uint32_t CProxy_EPOLLERR;
extern const uint32_t CProxy_EPOLLET;

/// One ready event: the registered 64-bit token and the event bits.
typedef struct {
    uint64_t token;
    uint32_t events;
} CProxy_Event;

int CProxy_epoll_create(void);
/// op: 0 add, 1 modify, 2 delete.
int CProxy_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t token);
/// Waits up to timeout_ms; fills at most max events; returns the count or -errno.
int CProxy_epoll_wait(int epfd, CProxy_Event *events, int max, int timeout_ms);

int CProxy_eventfd(void);
int CProxy_eventfd_signal(int fd);
int CProxy_eventfd_drain(int fd);

/// A non-blocking, close-on-exec listening TCP socket bound to host:port (numeric IPv4 or IPv6),
/// with SO_REUSEADDR and, if reuseport, SO_REUSEPORT. Returns the fd or -errno.
int CProxy_listen(const char *host, int port, int backlog, int reuseport);
/// accept4 with SOCK_NONBLOCK|SOCK_CLOEXEC; writes the peer's numeric address into addr (at least 64 bytes).
int CProxy_accept(int fd, char *addr, size_t addrlen, int *port);
/// Starts a non-blocking connect to a resolved address (numeric). Returns fd (>= 0) or -errno;
/// *in_progress is 1 when the connect completes later (EPOLLOUT).
int CProxy_connect(const char *numeric_host, int port, int *in_progress);
/// The pending error of a socket (SO_ERROR), 0 when connected.
int CProxy_socket_error(int fd);
/// The local port a socket is bound to.
int CProxy_local_port(int fd);
/// TCP_NODELAY on.
int CProxy_set_nodelay(int fd);
/// Resolves host to numeric addresses (blocking; call off the event loop). Writes up to max entries of
/// 64 bytes each into out; returns the count, or a negative EAI_* code (see CProxy_gai_strerror).
int CProxy_resolve(const char *host, char *out, int max);
const char *CProxy_gai_strerror(int code);
/// send with MSG_NOSIGNAL; returns bytes or -errno.
long CProxy_send(int fd, const void *buf, size_t len);
/// recv; returns bytes, 0 on EOF, or -errno.
long CProxy_recv(int fd, void *buf, size_t len);
int CProxy_shutdown_write(int fd);
int CProxy_errno_EAGAIN(void);
int CProxy_errno_EINPROGRESS(void);
int CProxy_errno_EINTR(void);
/// poll(2) for one descriptor: 1 when it is readable (or closed), 0 after timeout_ms, or -errno.
int CProxy_poll_readable(int fd, int timeout_ms);
/// A pipe whose ends are closed on exec; 0 or -errno.
int CProxy_pipe(int fds[2]);
/// posix_spawn with exactly these descriptors: the child's fd i is fds[i] (-1: /dev/null) for i < count, and it
/// inherits no other; every signal at its default action and none blocked; in a process group of its own when
/// new_group is set. 0 and *pid, or an errno value.
int CProxy_spawn(int *pid, const char *path, char *const argv[], char *const envp[], const int *fds, int count,
                 int new_group);
/// waitpid without blocking: 1 and *status once the child has exited, 0 while it runs, -errno.
int CProxy_reap(int pid, int *status);

/// CPUs this process may run on (sched_getaffinity, so `taskset` and cgroups cpusets count); at least 1.
int CProxy_available_cpus(void);

#endif
