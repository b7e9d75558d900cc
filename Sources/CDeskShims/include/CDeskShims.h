#ifndef CDESKSHIMS_H
#define CDESKSHIMS_H

#include <sys/types.h>

/// pidfd_open(2): Glibc 2.36 has no wrapper and Swift cannot call the variadic syscall(2).
int deskd_pidfd_open(pid_t pid);

/// pidfd_send_signal(2): `signal` to the process `pidfd` was opened on, or ESRCH once that
/// process has been reaped; never to another process that has since been given its pid.
int deskd_pidfd_send_signal(int pidfd, int signal);

/// open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC): a handle on the inode itself, for a socket to be
/// connected through /proc/self/fd without following a symlink (O_PATH is hidden behind _GNU_SOURCE).
int deskd_open_path_nofollow(const char *path);

/// pipe2(2) with O_CLOEXEC | O_NONBLOCK: hidden behind _GNU_SOURCE in Swift's Glibc module.
int deskd_pipe_cloexec_nonblock(int fds[2]);

/// errno's symbolic name ("EACCES"), or NULL for a number the C library does not know:
/// strerrorname_np (glibc 2.32) is hidden behind _GNU_SOURCE in Swift's Glibc module.
const char *deskd_errno_name(int number);

/// Names the calling thread (what ps -L and gdb show), cut to the kernel's 15 bytes:
/// pthread_setname_np is hidden behind _GNU_SOURCE in Swift's Glibc module.
void deskd_name_this_thread(const char *name);

/// Starts `path` as a new process: a session of its own, stdin from /dev/null, stdout and
/// stderr to `out_fd`, cwd "/", `umask_value`, default signal handling, no other descriptors
/// (the child exits rather than run if close_range fails), and — when
/// `cgroup_fd` is a cgroup v2 directory — inside that cgroup from its first instruction
/// (clone3 with CLONE_INTO_CGROUP), so nothing it forks can escape a later kill.
/// Returns the pid once `path` has been exec'd, or -1 with errno (also when exec failed).
/// `fd` moved to 3 or above (closed and replaced by a CLOEXEC duplicate if it was 0, 1 or 2):
/// a daemon started with 0-2 closed gets them back from open, and a child's dup2 onto 0-2
/// must never overwrite a descriptor it still needs. -1 stays -1.
int deskd_above_stdio(int fd);

/// Moves the calling process into a mount namespace of its own whose mounts are slaves of the
/// host's (unshare(CLONE_NEWNS), then / made rslave); 0, or -1 with errno.
int deskd_enter_private_mounts(void);

/// An O_PATH descriptor of the directory `path`, its last component not followed if a link.
int deskd_open_directory_path(const char *path);

/// renameat2 with RENAME_NOREPLACE (EEXIST if `to` is there) and with RENAME_EXCHANGE (the two
/// names swap, atomically, whatever each is).
int deskd_rename_noreplace(int from_dir, const char *from, int to_dir, const char *to);
int deskd_rename_exchange(int from_dir, const char *from, int to_dir, const char *to);

pid_t deskd_spawn(const char *path, char *const argv[], char *const envp[], int out_fd, int cgroup_fd, mode_t umask_value);

/// The same, with every part chosen: stdin, stdout and stderr (-1: /dev/null, stderr -1: as
/// stdout; any open descriptor, 0-2 included: deskd passes its own stderr on under systemd),
/// the uid and gid to run as ((uid_t)-1: unchanged; only for a single-threaded caller) and
/// the directory to start in (NULL or unreachable: "/").
struct deskd_spawn_spec {
    const char *path;
    char *const *argv;
    char *const *envp;
    int in_fd, out_fd, err_fd;
    int cgroup_fd;
    mode_t umask_value;
    uid_t uid;
    gid_t gid;
    const char *directory;
    /// The signal the process gets when the thread that spawned it ends (PR_SET_PDEATHSIG, set
    /// after the change of credentials, which would clear it); 0 for none.
    int death_signal;
};
pid_t deskd_spawn_process(const struct deskd_spawn_spec *spec);

/// deskd_spawn_process that also sets `*pidfd` to a pidfd of the new process (clone3's
/// CLONE_PIDFD, close-on-exec), made with the process itself: there is no moment when only its
/// number names it. `*pidfd` is -1 when the spawn fails.
pid_t deskd_spawn_process_pidfd(const struct deskd_spawn_spec *spec, int *pidfd);

/// Reaps `pidfd`'s process if it is our exited child (waitid P_PIDFD); harmless otherwise.
void deskd_reap_pidfd(int pidfd);

/// One TCP socket as the kernel's sock_diag reports it.
struct deskd_tcp_socket {
    unsigned short local_port;
    unsigned short remote_port;
    unsigned char state;
    unsigned int inode;
    /// The uid that created the socket (the squatter, when it is not the session's Xvnc).
    unsigned int uid;
};

/// TCP sockets of `family` (AF_INET or AF_INET6) whose state bit is in `states` (1 << TCP_*)
/// and whose local port is in [port_low, port_high], through NETLINK_SOCK_DIAG: what `ss`
/// reads, without formatting and parsing /proc/net/tcp. Fills up to `capacity` entries and
/// returns how many there are in all, or -1 with errno.
int deskd_tcp_sockets(int family, unsigned int states, unsigned short port_low, unsigned short port_high,
                      struct deskd_tcp_socket *out, int capacity);

/// The uid that owns the TCP socket bound to `source`:`source_port` and connected to
/// `destination`:`destination_port` (addresses in network order, 4 bytes for AF_INET, 16 for
/// AF_INET6): one exact sock_diag lookup, no dump. For a connection accepted from a peer on this
/// host, asked with the peer's address as `source`, it is the account that made the peer's end.
/// 0 with `*uid` set, or -1 with errno (ENOENT: no such socket, it closed meanwhile).
int deskd_tcp_socket_owner(int family, const void *source, unsigned short source_port,
                           const void *destination, unsigned short destination_port, unsigned int *uid);

/// One Unix socket as sock_diag reports it: a listener, or one end of a connection. An
/// accepted connection carries its listener's path as its name, which is how viewers of a
/// session's RFB socket are counted.
struct deskd_unix_socket {
    unsigned int inode;
    /// The inode of the other end, for a connected socket.
    unsigned int peer;
    unsigned char state;
    unsigned short name_length;
    /// The bound path ("@..." for an abstract name), NUL-terminated; empty if unbound.
    char name[109];
};

/// Unix sockets whose state bit is in `states` (1 << TCP_LISTEN, 1 << TCP_ESTABLISHED) and whose
/// name starts with one of `prefixes` (every socket if `prefix_count` is 0), through
/// NETLINK_SOCK_DIAG. Fills up to `capacity` entries and returns how many there are, or -1 with errno.
int deskd_unix_sockets(unsigned int states, const char *const *prefixes, int prefix_count,
                       struct deskd_unix_socket *out, int capacity);

/// The same two readers over one datagram of a dump already received (`datagram` aligned as a
/// netlink header is), for the fuzzer: the kernel writes these messages, but a Unix socket's
/// name in them is whatever its user bound. The count of matching sockets, or -1 with errno
/// when the datagram holds the kernel's error.
int deskd_tcp_sockets_in(const void *datagram, int length, unsigned short port_low, unsigned short port_high,
                         struct deskd_tcp_socket *out, int capacity);
int deskd_unix_sockets_in(const void *datagram, int length, const char *const *prefixes, int prefix_count,
                          struct deskd_unix_socket *out, int capacity);

/// prctl(PR_SET_CHILD_SUBREAPER): a session's orphans become this process's children, so it
/// knows when the last of them has ended and can end them (deskd-session, deskd-job).
/// (prctl is variadic: Swift cannot call it.)
int deskd_become_subreaper(void);

/// The most descriptors one message between deskd and its web front carries.
#define DESKD_MAX_PASSED_FDS 4

/// sendmsg(2) of one record on a SOCK_SEQPACKET socket with `nfds` descriptors (SCM_RIGHTS;
/// at most DESKD_MAX_PASSED_FDS) and MSG_NOSIGNAL, and MSG_DONTWAIT when `dont_wait`: the CMSG_*
/// macros are beyond Swift. Returns what sendmsg returns.
ssize_t deskd_send_record(int sock, const void *buffer, size_t length, const int *fds, int nfds, int dont_wait);

/// recvmsg(2) of one record, its descriptors close-on-exec into `fds` (`*nfds` of them). A record
/// longer than `length`, or with more descriptors than DESKD_MAX_PASSED_FDS, is refused: what came
/// with it is closed and -1 returned with EMSGSIZE. 0 at the peer's end.
ssize_t deskd_receive_record(int sock, void *buffer, size_t length, int *fds, int *nfds);

/// What the shadow database (getspnam_r) says of an account's password, for deskd to end a
/// portal login once it changes: the day the account expires (-1 never), and a fingerprint of the
/// stored hash (FNV-1a: it changes with a new password, the same day too, and with a lock, which
/// puts "!" before the hash; the hash itself never leaves this call). Returns 0, or -1 when the
/// account has no shadow entry (errno).
int deskd_shadow_state(const char *name, long *expire, unsigned long long *fingerprint);

/// Becomes `user` (uid, gid and the groups /etc/group gives it: initgroups), for good: every
/// uid and gid real, effective and saved, and no_new_privs, so nothing it runs can gain one
/// back. For deskd-files, which calls it first, while it is still one thread. 0, or -1 with errno.
int deskd_become_user(const char *user, uid_t uid, gid_t gid);

/// An unnamed regular file in the folder `dirfd` (O_TMPFILE), open for writing: no one sees it,
/// and it is gone if it is never linked. -1 with errno (EOPNOTSUPP, EISDIR: the file system has
/// no such files).
int deskd_open_unnamed(int dirfd, mode_t mode);

/// Gives the unnamed file `fd` the name `name` in `dirfd` (linkat through /proc/self/fd, which
/// needs no capability). EEXIST when the name is taken: it never replaces.
int deskd_name_unnamed(int fd, int dirfd, const char *name);

/// Reserves `length` bytes for `fd` without changing its size (FALLOC_FL_KEEP_SIZE), so a full
/// disk or a quota is found before the bytes travel. 0, or -1 with errno (EOPNOTSUPP: no such
/// reserving on this file system).
int deskd_reserve(int fd, unsigned long long length);

#endif
