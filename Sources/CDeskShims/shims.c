#define _GNU_SOURCE
#include "CDeskShims.h"
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

int deskd_pidfd_open(pid_t pid) {
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

int deskd_pipe_cloexec_nonblock(int fds[2]) {
    return pipe2(fds, O_CLOEXEC | O_NONBLOCK);
}
