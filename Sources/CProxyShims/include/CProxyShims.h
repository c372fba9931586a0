#ifndef CPROXYSHIMS_H
#define CPROXYSHIMS_H
// The only C the proxy's I/O shell needs: the poller (epoll, kqueue or poll), and the socket calls whose
// spelling differs between Linux and macOS (accept4, SOCK_NONBLOCK, MSG_NOSIGNAL, sched_getaffinity). Each function is a thin, prefixed wrapper; errors are returned as -errno.
#include <stdint.h>
#include <stddef.h>
#include <signal.h>

/// The poller's event bits (epoll's values; the kqueue and poll backends translate).
extern const uint32_t CProxy_EV_IN;
extern const uint32_t CProxy_EV_OUT;
extern const uint32_t CProxy_EV_RDHUP;
extern const uint32_t CProxy_EV_HUP;
extern const uint32_t CProxy_EV_ERR;

/// One ready event: the registered 64-bit token and the event bits.
typedef struct {
    uint64_t token;
    uint32_t events;
} CProxy_Event;

/// A level-triggered poller with a wake-up any thread may signal (its events carry the token UINT64_MAX).
typedef struct CProxy_Poller CProxy_Poller;
enum { CPROXY_POLLER_EPOLL = 1, CPROXY_POLLER_KQUEUE = 2, CPROXY_POLLER_POLL = 3 };
/// epoll on Linux, kqueue on macOS and the BSDs, else poll.
int CProxy_poller_native_kind(void);
/// 0 and *out, or -errno (-ENOSYS: that kind is not built on this system).
int CProxy_poller_create(int kind, CProxy_Poller **out);
void CProxy_poller_destroy(CProxy_Poller *p);
int CProxy_poller_add(CProxy_Poller *p, int fd, uint32_t events, uint64_t token);
int CProxy_poller_modify(CProxy_Poller *p, int fd, uint32_t events, uint64_t token);
/// Call before closing a registered descriptor (only poll's table needs it; a no-op for the others).
int CProxy_poller_remove(CProxy_Poller *p, int fd);
/// Waits up to timeout_ms; fills at most max (<= 256) events; returns the count or -errno.
int CProxy_poller_wait(CProxy_Poller *p, CProxy_Event *events, int max, int timeout_ms);
int CProxy_poller_wake(CProxy_Poller *p);
int CProxy_poller_drain_wake(CProxy_Poller *p);

/// Whether listening sockets bound with SO_REUSEPORT share the incoming connections between them (Linux); where
/// they do not (macOS), the loops share one listening socket instead.
int CProxy_reuseport_balances(void);

/// A non-blocking, close-on-exec listening TCP socket bound to host:port (numeric IPv4 or IPv6),
/// with SO_REUSEADDR and, if reuseport, SO_REUSEPORT. Returns the fd or -errno.
int CProxy_listen(const char *host, int port, int backlog, int reuseport);
/// accept4 with SOCK_NONBLOCK|SOCK_CLOEXEC (accept and fcntl on macOS); writes the peer's numeric address into addr (at least 64 bytes),
/// and into loopback whether it is 127.0.0.0/8, ::1 or 127.0.0.0/8 mapped into IPv6 (HostName.isLoopback of that text).
int CProxy_accept(int fd, char *addr, size_t addrlen, int *port, int *loopback);
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
/// send with MSG_NOSIGNAL (SO_NOSIGPIPE, set on every socket, on macOS); returns bytes or -errno.
long CProxy_send(int fd, const void *buf, size_t len);
/// recv; returns bytes, 0 on EOF, or -errno.
long CProxy_recv(int fd, void *buf, size_t len);
int CProxy_shutdown_write(int fd);
/// SO_LINGER with a zero timeout: the next close(2) sends a reset (RST) instead of an orderly FIN, and drops what
/// is unsent. 0 or -errno.
int CProxy_set_reset_on_close(int fd);
int CProxy_errno_EAGAIN(void);
int CProxy_errno_EINTR(void);
/// poll(2) for one descriptor: 1 when it is readable (or closed), 0 after timeout_ms, or -errno.
int CProxy_poll_readable(int fd, int timeout_ms);
/// poll(2) for one descriptor: 1 when it is writable (or failed), 0 after timeout_ms, or -errno.
int CProxy_poll_writable(int fd, int timeout_ms);
/// A pipe whose ends are closed on exec; 0 or -errno.
int CProxy_pipe(int fds[2]);
/// posix_spawn with exactly these descriptors: the child's fd i is fds[i] (-1: /dev/null) for i < count, and it
/// inherits no other; every signal at its default action and none blocked; in a process group of its own when
/// new_group is set. 0 and *pid, or an errno value.
int CProxy_spawn(int *pid, const char *path, char *const argv[], char *const envp[], const int *fds, int count,
                 int new_group);
/// waitpid without blocking: 1 and *status once the child has exited, 0 while it runs, -errno.
int CProxy_reap(int pid, int *status);

/// The numeric addresses of this machine's interfaces that are up, but not loopback or IPv6 link-local: up to max
/// entries of 64 bytes each into out; the count or -errno.
int CProxy_interface_addresses(char *out, int max);

/// Waits up to timeout_ms for one of the blocked signals in set: its number, 0 after the timeout, or -errno
/// (sigtimedwait on Linux; macOS has none, so its pending set is looked at every 20 ms).
int CProxy_wait_signal(const sigset_t *set, int timeout_ms);


/// CPUs this process may run on (sched_getaffinity, so `taskset` and cgroups cpusets count); at least 1.
int CProxy_available_cpus(void);

#endif
