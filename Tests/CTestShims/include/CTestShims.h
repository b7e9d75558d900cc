#ifndef CTESTSHIMS_H
#define CTESTSHIMS_H

#include <sys/types.h>

/// Changes the credentials of the calling thread only (the raw syscalls; glibc's wrappers would
/// change every thread of the test process). Lets a test act as another local user, for
/// connect() and file creation, on a thread of its own, while everything else stays root.
int desk_test_thread_become(uid_t uid, gid_t gid, const gid_t *groups, int group_count);

#endif
