#ifndef CTESTSUPPORT_H
#define CTESTSUPPORT_H

#include <sys/types.h>

/// Starts `path` with `argv` and `envp` (NULL: this process's environment) in a process group of its own, with
/// `stdin_fd`, `stdout_fd` and `stderr_fd` as its standard streams, no other descriptor of ours, every signal at
/// its default action and none blocked. Returns 0 and sets `*pid`, or an errno value.
int cts_spawn(pid_t *pid, const char *path, char *const argv[], char *const envp[], int stdin_fd, int stdout_fd,
              int stderr_fd);

/// pipe2(O_CLOEXEC): a child that another thread starts at the same moment must not inherit either end.
int cts_pipe(int fds[2]);

#endif
