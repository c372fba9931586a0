// posix_spawn for the test harness. Foundation's Process is not used: its waitUntilExit depends on a manager
// thread's run loop noticing the exit, and a test runner that starts hundreds of processes from several threads
// must not depend on that. Here the caller reaps with waitpid and can kill the whole group (a browser's helpers
// too) when a deadline passes.
#define _GNU_SOURCE
#include "CTestSupport.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>

extern char **environ;

int cts_spawn(pid_t *pid, const char *path, char *const argv[], char *const envp[], int stdin_fd, int stdout_fd,
              int stderr_fd) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    int rc = posix_spawn_file_actions_init(&actions);
    if (rc != 0) return rc;
    rc = posix_spawnattr_init(&attributes);
    if (rc != 0) {
        posix_spawn_file_actions_destroy(&actions);
        return rc;
    }
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    // The runner may ignore or block some signals (SIGPIPE, SIGTERM); its children must not inherit that.
    for (int sig = 1; sig < 32; sig++) {
        if (sig != SIGKILL && sig != SIGSTOP) sigaddset(&defaults, sig);
    }
    if ((rc = posix_spawn_file_actions_adddup2(&actions, stdin_fd, 0)) == 0 &&
        (rc = posix_spawn_file_actions_adddup2(&actions, stdout_fd, 1)) == 0 &&
        (rc = posix_spawn_file_actions_adddup2(&actions, stderr_fd, 2)) == 0 &&
        // Sockets and pipes of other tests must not live on in this child (a peer would never see them close).
        (rc = posix_spawn_file_actions_addclosefrom_np(&actions, 3)) == 0 &&
        (rc = posix_spawnattr_setsigmask(&attributes, &none)) == 0 &&
        (rc = posix_spawnattr_setsigdefault(&attributes, &defaults)) == 0 &&
        (rc = posix_spawnattr_setpgroup(&attributes, 0)) == 0 &&
        (rc = posix_spawnattr_setflags(&attributes,
                                       POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP)) == 0) {
        rc = posix_spawn(pid, path, &actions, &attributes, argv, envp ? envp : environ);
    }
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    return rc;
}

int cts_pipe(int fds[2]) { return pipe2(fds, O_CLOEXEC); }
