// Starting child processes: `parse --browser` (the DevTools pipe on the browser's fds 3 and 4) and the test
// harness (standard streams on pipes, a process group to kill as a whole).
#define _GNU_SOURCE
#include "CProxyShims.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int poll_one(int fd, short events, int timeout_ms) {
    struct pollfd p = {.fd = fd, .events = events};
    for (;;) {
        int n = poll(&p, 1, timeout_ms);
        if (n < 0 && errno == EINTR) continue;
        return n < 0 ? -errno : n;
    }
}

int CProxy_poll_readable(int fd, int timeout_ms) { return poll_one(fd, POLLIN, timeout_ms); }
int CProxy_poll_writable(int fd, int timeout_ms) { return poll_one(fd, POLLOUT, timeout_ms); }

int CProxy_pipe(int fds[2]) {
#if defined(__APPLE__)
    if (pipe(fds) < 0) return -errno;
    fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    fcntl(fds[1], F_SETFD, FD_CLOEXEC);
    return 0;
#else
    return pipe2(fds, O_CLOEXEC) < 0 ? -errno : 0;
#endif
}

enum { CPROXY_SPAWN_MAX_FDS = 16 };

int CProxy_spawn(int *pid, const char *path, char *const argv[], char *const envp[], const int *fds, int count,
                 int new_group) {
    if (count < 0 || count > CPROXY_SPAWN_MAX_FDS) return EINVAL;
    // Every source moved above the targets first, so that one dup2 cannot overwrite another's source.
    int moved[CPROXY_SPAWN_MAX_FDS];
    int rc = 0;
    for (int i = 0; i < count; i++) {
        moved[i] = -1;
        if (fds[i] >= 0 && (moved[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, count + 10)) < 0) rc = errno;
    }
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attributes);
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    // The parent may ignore or block signals (SIGPIPE, SIGTERM); its children must not inherit that.
    for (int sig = 1; sig < 32; sig++) {
        if (sig != SIGKILL && sig != SIGSTOP) sigaddset(&defaults, sig);
    }
    short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | (new_group ? POSIX_SPAWN_SETPGROUP : 0);
    for (int i = 0; rc == 0 && i < count; i++) {
        rc = moved[i] >= 0 ? posix_spawn_file_actions_adddup2(&actions, moved[i], i)
                           : posix_spawn_file_actions_addopen(&actions, i, "/dev/null", O_RDWR, 0);
    }
#if defined(__APPLE__)
    flags |= POSIX_SPAWN_CLOEXEC_DEFAULT;
#else
    // Sockets and pipes of other threads must not live on in this child (a peer would never see them close).
    if (rc == 0) rc = posix_spawn_file_actions_addclosefrom_np(&actions, count);
#endif
    if (rc == 0) rc = posix_spawnattr_setsigmask(&attributes, &none);
    if (rc == 0) rc = posix_spawnattr_setsigdefault(&attributes, &defaults);
    if (rc == 0 && new_group) rc = posix_spawnattr_setpgroup(&attributes, 0);
    if (rc == 0) rc = posix_spawnattr_setflags(&attributes, flags);
    if (rc == 0) {
        pid_t child = 0;
        rc = posix_spawn(&child, path, &actions, &attributes, argv, envp ? envp : environ);
        if (rc == 0) *pid = child;
    }
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    for (int i = 0; i < count; i++) {
        if (moved[i] >= 0) close(moved[i]);
    }
    return rc;
}

int CProxy_reap(int pid, int *status) {
    int r = waitpid(pid, status, WNOHANG);
    if (r < 0) return -errno;
    return r == pid ? 1 : 0;
}

int CProxy_wait_signal(const sigset_t *set, int timeout_ms) {
#if defined(__linux__)
    struct timespec ts = {.tv_sec = timeout_ms / 1000, .tv_nsec = (long)(timeout_ms % 1000) * 1000000L};
    int sig = sigtimedwait(set, NULL, &ts);
    if (sig < 0) return errno == EAGAIN || errno == EINTR ? 0 : -errno;
    return sig;
#else
    // No sigtimedwait on macOS: look at the pending signals every 20 ms; sigwait then returns at once.
    for (int waited = 0; waited <= timeout_ms; waited += 20) {
        sigset_t pending;
        if (sigpending(&pending) < 0) return -errno;
        for (int sig = 1; sig < NSIG; sig++) {
            if (sigismember(set, sig) == 1 && sigismember(&pending, sig) == 1) {
                sigset_t one;
                sigemptyset(&one);
                sigaddset(&one, sig);
                int got = 0;
                return sigwait(&one, &got) == 0 ? got : 0;
            }
        }
        usleep(20000);
    }
    return 0;
#endif
}
