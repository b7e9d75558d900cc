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

/// Starts `argv[0]` (an absolute path) as a child of the caller with exactly the pid `pid`
/// (clone3's set_tid; root only, and only while no process holds that number), its signal
/// dispositions and mask at their defaults and no descriptor above 2. Lets a test put an
/// unrelated process where a reaped one was, as a busy host does sooner or later, without
/// waiting for the pid counter to wrap. Returns the pid, or -1 with errno (EEXIST: it is taken).
pid_t desk_test_spawn_with_pid(pid_t pid, char *const argv[]);

#endif
