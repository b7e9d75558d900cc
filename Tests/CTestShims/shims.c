#define _GNU_SOURCE
#include "CTestShims.h"
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
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

#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif

pid_t desk_test_spawn_with_pid(pid_t pid, char *const argv[]) {
    pid_t wanted[1] = { pid };
    struct clone_args args = {0};
    args.exit_signal = SIGCHLD;
    args.set_tid = (uint64_t)(uintptr_t)wanted;
    args.set_tid_size = 1;
    long child = syscall(SYS_clone3, &args, sizeof args);
    if (child != 0) return (pid_t)child;
    /* The copy of one thread of a multi-threaded test process: async-signal-safe calls only.
       Defaults first, so the stand-in dies of a signal as any process would: a signal the test
       process ignores would stay ignored across the exec. */
    struct sigaction dfl = {0};
    dfl.sa_handler = SIG_DFL;
    for (int s = 1; s < NSIG; s++) sigaction(s, &dfl, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    syscall(SYS_close_range, 3, ~0U, 0);
    char *const envp[] = { NULL };
    execve(argv[0], argv, envp);
    _exit(127);
}
