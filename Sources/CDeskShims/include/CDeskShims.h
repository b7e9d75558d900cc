#ifndef CDESKSHIMS_H
#define CDESKSHIMS_H

#include <sys/types.h>

/// pidfd_open(2): Glibc 2.36 has no wrapper and Swift cannot call the variadic syscall(2).
int deskd_pidfd_open(pid_t pid);

/// pipe2(2) with O_CLOEXEC | O_NONBLOCK: hidden behind _GNU_SOURCE in Swift's Glibc module.
int deskd_pipe_cloexec_nonblock(int fds[2]);

#endif
