#define _GNU_SOURCE
#include "CTestShims.h"
#include <sched.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

int desk_test_thread_become(uid_t uid, gid_t gid, const gid_t *groups, int group_count) {
    /* Groups first, then the gid, then the uid: after the uid, the others cannot change. The
       saved ids stay root's, but the thread ends after its work anyway. */
    if (syscall(SYS_setgroups, (size_t)group_count, groups) != 0) return -1;
    if (syscall(SYS_setresgid, (gid_t)-1, gid, (gid_t)-1) != 0) return -1;
    if (syscall(SYS_setresuid, (uid_t)-1, uid, (uid_t)-1) != 0) return -1;
    return 0;
}

int desk_test_thread_tmpfs_over(const char *path) {
    if (unshare(CLONE_NEWNS) != 0) return -1;
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) return -1;
    return mount("tmpfs", path, "tmpfs", 0, "mode=0755");
}
