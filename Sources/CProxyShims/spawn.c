// Starting a browser for `parse --browser`: posix_spawn with the DevTools pipe on fds 3 and 4.
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

int CProxy_poll_readable(int fd, int timeout_ms) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    for (;;) {
        int n = poll(&p, 1, timeout_ms);
        if (n < 0 && errno == EINTR) continue;
        return n < 0 ? -errno : n;
    }
}

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

int CProxy_spawn_devtools(const char *path, char *const argv[], char *const envp[], int commands_fd, int events_fd,
                          int *pid) {
    // Out of the way of 3 and 4 first, so that one dup2 cannot overwrite the other's source.
    int in = fcntl(commands_fd, F_DUPFD_CLOEXEC, 10);
    int out = fcntl(events_fd, F_DUPFD_CLOEXEC, 10);
    if (in < 0 || out < 0) {
        int e = errno;
        if (in >= 0) close(in);
        if (out >= 0) close(out);
        return e;
    }
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attributes);
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGPIPE);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGTERM);
    sigaddset(&defaults, SIGHUP);
    short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
    int rc = 0;
    if ((rc = posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)) == 0 &&
        (rc = posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)) == 0 &&
        (rc = posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)) == 0 &&
        (rc = posix_spawn_file_actions_adddup2(&actions, in, 3)) == 0 &&
        (rc = posix_spawn_file_actions_adddup2(&actions, out, 4)) == 0 &&
#if defined(__APPLE__)
        (flags |= POSIX_SPAWN_CLOEXEC_DEFAULT, 1) &&
#else
        (rc = posix_spawn_file_actions_addclosefrom_np(&actions, 5)) == 0 &&
#endif
        (rc = posix_spawnattr_setsigmask(&attributes, &none)) == 0 &&
        (rc = posix_spawnattr_setsigdefault(&attributes, &defaults)) == 0 &&
        (rc = posix_spawnattr_setflags(&attributes, flags)) == 0) {
        pid_t child = 0;
        rc = posix_spawn(&child, path, &actions, &attributes, argv, envp ? envp : environ);
        if (rc == 0) *pid = child;
    }
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    close(in);
    close(out);
    return rc;
}

int CProxy_reap(int pid, int *status) {
    int r = waitpid(pid, status, WNOHANG);
    if (r < 0) return -errno;
    return r == pid ? 1 : 0;
}
