#ifndef CTESTSHIMS_H
#define CTESTSHIMS_H

#include <sys/types.h>

/// Changes the credentials of the calling thread only (the raw syscalls; glibc's wrappers would
/// change every thread of the test process). Lets a test act as another local user, for
/// connect() and file creation, on a thread of its own, while everything else stays root.
int desk_test_thread_become(uid_t uid, gid_t gid, const gid_t *groups, int group_count);

/// Gives the calling thread a mount namespace of its own (private propagation) and mounts a
/// tmpfs on `path` in it: what an unprivileged user gets with `unshare -rm`, where they may
/// bind sockets at any path without touching the real one.
int desk_test_thread_tmpfs_over(const char *path);

#endif
