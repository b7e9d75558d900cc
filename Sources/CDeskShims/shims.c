#define _GNU_SOURCE
#include "CDeskShims.h"
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <errno.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

int deskd_pidfd_open(pid_t pid) {
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

int deskd_pidfd_send_signal(int pidfd, int signal) {
    return (int)syscall(SYS_pidfd_send_signal, pidfd, signal, NULL, 0);
}

int deskd_open_path_nofollow(const char *path) {
    return open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
}

const char *deskd_errno_name(int number) {
    return strerrorname_np(number);
}

void deskd_name_this_thread(const char *name) {
    char short_name[16];
    snprintf(short_name, sizeof short_name, "%s", name);
    pthread_setname_np(pthread_self(), short_name);
}

int deskd_pipe_cloexec_nonblock(int fds[2]) {
    return pipe2(fds, O_CLOEXEC | O_NONBLOCK);
}

#include <errno.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>

#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif
#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif
#ifndef P_PIDFD
#define P_PIDFD 3
#endif

int deskd_above_stdio(int fd) {
    if (fd < 0 || fd > 2) return fd;
    int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    close(fd);
    return moved;
}

/* Only async-signal-safe calls between clone3 and execve: the daemon is multi-threaded,
   and the child is a copy of one thread of it. Everything it needs was prepared before. */
pid_t deskd_spawn_process(const struct deskd_spawn_spec *spec) {
    return deskd_spawn_process_pidfd(spec, NULL);
}

pid_t deskd_spawn_process_pidfd(const struct deskd_spawn_spec *spec, int *pidfd) {
    if (pidfd != NULL) *pidfd = -1;
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0) return -1;
    report[0] = deskd_above_stdio(report[0]);
    report[1] = deskd_above_stdio(report[1]);
    int devnull = deskd_above_stdio(open("/dev/null", O_RDWR | O_CLOEXEC));
    if (report[0] < 0 || report[1] < 0 || devnull < 0) {
        int saved = errno;
        if (report[0] >= 0) close(report[0]);
        if (report[1] >= 0) close(report[1]);
        if (devnull >= 0) close(devnull);
        errno = saved;
        return -1;
    }
    int in_fd = spec->in_fd >= 0 ? spec->in_fd : devnull;
    int out_fd = spec->out_fd >= 0 ? spec->out_fd : devnull;
    int err_fd = spec->err_fd >= 0 ? spec->err_fd : out_fd;

    struct clone_args args = {0};
    args.exit_signal = SIGCHLD;
    if (spec->cgroup_fd >= 0) {
        args.flags |= CLONE_INTO_CGROUP;
        args.cgroup = (unsigned long long)spec->cgroup_fd;
    }
    if (pidfd != NULL) {
        args.flags |= CLONE_PIDFD;
        args.pidfd = (unsigned long long)(uintptr_t)pidfd;
    }
    pid_t parent = getpid();
    long pid = syscall(SYS_clone3, &args, sizeof(args));
    if (pid == 0) {
        /* Handlers first, then the mask: a signal pending in the copied mask must find the
           default action, never a handler of the parent's running in this copy. */
        struct sigaction dfl = {0};
        dfl.sa_handler = SIG_DFL;
        for (int s = 1; s < NSIG; s++) sigaction(s, &dfl, NULL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        setsid();
        /* A source may itself be one of 0-2: deskd's own stderr is the journal under systemd,
           and is what deskd-session should write to. Lift every such source above 2 first, so
           no dup2 below overwrites a descriptor a later one still reads (stdin given as stderr,
           say), and so none is left as itself with its close-on-exec flag unchanged. The
           copies are closed with the rest below. */
        int sources[3] = { in_fd, out_fd, err_fd };
        for (int i = 0; i < 3; i++) {
            if (sources[i] <= 2 && (sources[i] = fcntl(sources[i], F_DUPFD, 3)) < 0) goto failed;
        }
        for (int i = 0; i < 3; i++) {
            if (dup2(sources[i], i) < 0) goto failed;
        }
        /* Close everything else but the report pipe, which closes itself on exec. A session
           process must never hold a daemon descriptor (the control socket, a session's log, a
           cgroup): if the kernel cannot close them, the child does not run. */
        int keep = report[1];
        if (keep > 3 && syscall(SYS_close_range, 3, keep - 1, 0) != 0) goto failed;
        if (syscall(SYS_close_range, keep + 1, ~0U, 0) != 0) goto failed;
        /* The gid before the uid, while there is still the right to change it. Only a
           single-threaded parent may ask for this (deskd-session): in the multi-threaded
           daemon, glibc's setxid broadcast can wait for ever on a thread caught mid-creation. */
        if (spec->gid != (gid_t)-1 && setresgid(spec->gid, spec->gid, spec->gid) != 0) goto failed;
        if (spec->uid != (uid_t)-1 && setresuid(spec->uid, spec->uid, spec->uid) != 0) goto failed;
        /* After the credentials, whose change clears it; a parent already gone is seen at once. */
        if (spec->death_signal > 0) {
            if (prctl(PR_SET_PDEATHSIG, spec->death_signal) != 0) goto failed;
            if (getppid() != parent) { errno = ESRCH; goto failed; }
        }
        umask(spec->umask_value);
        if (spec->directory == NULL || chdir(spec->directory) != 0) {
            if (chdir("/") != 0) goto failed;
        }
        execve(spec->path, spec->argv, spec->envp);
    failed:;
        int error = errno;
        (void)!write(report[1], &error, sizeof error);
        _exit(127);
    }
    int saved = errno;
    close(report[1]);
    close(devnull);
    if (pid < 0) {
        close(report[0]);
        errno = saved;
        return -1;
    }
    int error = 0;
    ssize_t n;
    do { n = read(report[0], &error, sizeof error); } while (n < 0 && errno == EINTR);
    close(report[0]);
    if (n > 0) {
        waitpid((pid_t)pid, NULL, 0);
        if (pidfd != NULL) {
            close(*pidfd);
            *pidfd = -1;
        }
        errno = error;
        return -1;
    }
    return (pid_t)pid;
}

pid_t deskd_spawn(const char *path, char *const argv[], char *const envp[], int out_fd, int cgroup_fd, mode_t umask_value) {
    struct deskd_spawn_spec spec = {
        .path = path, .argv = argv, .envp = envp, .in_fd = -1, .out_fd = out_fd, .err_fd = -1,
        .cgroup_fd = cgroup_fd, .umask_value = umask_value, .uid = (uid_t)-1, .gid = (gid_t)-1, .directory = NULL,
        .death_signal = 0,
    };
    return deskd_spawn_process(&spec);
}

void deskd_reap_pidfd(int pidfd) {
    siginfo_t info;
    waitid((idtype_t)P_PIDFD, (id_t)pidfd, &info, WEXITED | WNOHANG);
}

#include <arpa/inet.h>
#include <net/if.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sys/socket.h>

/* One datagram of a sock_diag dump: `visit` for each socket's message in it. 1 when the kernel
   said the dump is done, 0 when more datagrams follow, -1 with errno for the kernel's error.
   The kernel writes the messages, but what is in them (a Unix socket's name) is any user's. */
static int deskd_sock_diag_walk(const struct nlmsghdr *datagram, int length, void (*visit)(const struct nlmsghdr *, void *), void *context) {
    int remaining = length;
    for (const struct nlmsghdr *h = datagram; NLMSG_OK(h, remaining); h = NLMSG_NEXT(h, remaining)) {
        if (h->nlmsg_type == NLMSG_DONE) return 1;
        if (h->nlmsg_type == NLMSG_ERROR) {
            if (h->nlmsg_len < NLMSG_LENGTH(sizeof(struct nlmsgerr))) { errno = EIO; return -1; }
            const struct nlmsgerr *error = NLMSG_DATA(h);
            /* The kernel's error is a negative errno; anything else is no errno to pass on. */
            errno = error->error < 0 && error->error > -4096 ? -error->error : EIO;
            return -1;
        }
        visit(h, context);
    }
    return 0;
}

/* One sock_diag request: sends `request` (a netlink header and a family's request) and calls
   `visit` with each socket's message. A dump (NLM_F_DUMP) is read until the kernel says done; a
   lookup of one socket is answered in one datagram, with no NLMSG_DONE, so its read ends there.
   0, or -1 with errno. */
static int deskd_sock_diag_request(const void *request, size_t length, void (*visit)(const struct nlmsghdr *, void *), void *context) {
    int dump = (((const struct nlmsghdr *)request)->nlmsg_flags & NLM_F_DUMP) != 0;
    int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (fd < 0) return -1;
    struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
    if (sendto(fd, request, length, 0, (struct sockaddr *)&kernel, sizeof kernel) < 0) {
        close(fd);
        return -1;
    }
    long buffer[32768 / sizeof(long)];
    for (;;) {
        ssize_t n = recv(fd, buffer, sizeof buffer, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) { close(fd); return -1; }
        int walked = deskd_sock_diag_walk((const struct nlmsghdr *)buffer, (int)n, visit, context);
        if (walked != 0 || !dump) {
            int saved = errno;
            close(fd);
            errno = saved;
            return walked < 0 ? -1 : 0;
        }
    }
}

struct deskd_tcp_output { struct deskd_tcp_socket *out; int capacity; int count; unsigned short port_low, port_high; };

/* A sock_diag request for TCP sockets of `family` in `states`. */
struct deskd_tcp_request {
    struct nlmsghdr header;
    struct inet_diag_req_v2 request;
};

static struct deskd_tcp_request deskd_tcp_request(int family, unsigned int states, unsigned short flags) {
    struct deskd_tcp_request message = {0};
    message.header.nlmsg_len = sizeof message;
    message.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    message.header.nlmsg_flags = flags;
    message.request.sdiag_family = (unsigned char)family;
    message.request.sdiag_protocol = IPPROTO_TCP;
    message.request.idiag_states = states;
    return message;
}

static void deskd_visit_tcp(const struct nlmsghdr *h, void *context) {
    struct deskd_tcp_output *output = context;
    const struct inet_diag_msg *socket = NLMSG_DATA(h);
    if (h->nlmsg_len < NLMSG_LENGTH(sizeof *socket)) return;
    /* Only the ports asked about are counted: another user's thousands of sockets cost a
       look at each, not an entry. */
    unsigned short port = ntohs(socket->id.idiag_sport);
    if (port < output->port_low || port > output->port_high) return;
    if (output->count < output->capacity) {
        struct deskd_tcp_socket *entry = &output->out[output->count];
        entry->local_port = ntohs(socket->id.idiag_sport);
        entry->remote_port = ntohs(socket->id.idiag_dport);
        entry->state = socket->idiag_state;
        entry->inode = socket->idiag_inode;
        entry->uid = socket->idiag_uid;
    }
    output->count++;
}

int deskd_tcp_sockets_in(const void *datagram, int length, unsigned short port_low, unsigned short port_high,
                         struct deskd_tcp_socket *out, int capacity) {
    struct deskd_tcp_output output = { out, capacity, 0, port_low, port_high };
    return deskd_sock_diag_walk(datagram, length, deskd_visit_tcp, &output) < 0 ? -1 : output.count;
}

int deskd_tcp_sockets(int family, unsigned int states, unsigned short port_low, unsigned short port_high,
                      struct deskd_tcp_socket *out, int capacity) {
    struct deskd_tcp_request message = deskd_tcp_request(family, states, NLM_F_REQUEST | NLM_F_DUMP);
    struct deskd_tcp_output output = { out, capacity, 0, port_low, port_high };
    return deskd_sock_diag_request(&message, sizeof message, deskd_visit_tcp, &output) == 0 ? output.count : -1;
}

struct deskd_tcp_owner { int found; unsigned int uid; const struct inet_diag_sockid *asked; size_t length; };

static void deskd_visit_owner(const struct nlmsghdr *h, void *context) {
    struct deskd_tcp_owner *owner = context;
    const struct inet_diag_msg *socket = NLMSG_DATA(h);
    if (h->nlmsg_len < NLMSG_LENGTH(sizeof *socket) || h->nlmsg_type != SOCK_DIAG_BY_FAMILY) return;
    /* The kernel's exact lookup falls back to a listening socket on the asked source port when
       no connection matches: that is whoever listens there, not the peer (a remote browser
       whose source port a local user listens on would be that user). Only the connection
       itself, its four-tuple exactly as asked, names the peer's owner. */
    if (socket->idiag_state == 10 /* TCP_LISTEN */) return;
    const struct inet_diag_sockid *asked = owner->asked;
    if (socket->id.idiag_sport != asked->idiag_sport || socket->id.idiag_dport != asked->idiag_dport
        || memcmp(socket->id.idiag_src, asked->idiag_src, owner->length) != 0
        || memcmp(socket->id.idiag_dst, asked->idiag_dst, owner->length) != 0) return;
    /* A socket with no inode is no one's any more (time-wait): its uid reads as 0, which must
       not make a closing connection root's. */
    if (socket->idiag_inode == 0) return;
    owner->found = 1;
    owner->uid = socket->idiag_uid;
}

int deskd_tcp_socket_owner(int family, const void *source, unsigned short source_port,
                           const void *destination, unsigned short destination_port, unsigned int *uid) {
    if (family != AF_INET && family != AF_INET6) { errno = EAFNOSUPPORT; return -1; }
    /* No NLM_F_DUMP: the kernel looks the one socket up by its four-tuple and answers it alone
       (or ENOENT), however many sockets the host has. */
    struct deskd_tcp_request message = deskd_tcp_request(family, ~0U, NLM_F_REQUEST);
    size_t length = family == AF_INET ? 4 : 16;
    memcpy(message.request.id.idiag_src, source, length);
    memcpy(message.request.id.idiag_dst, destination, length);
    message.request.id.idiag_sport = htons(source_port);
    message.request.id.idiag_dport = htons(destination_port);
    message.request.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
    message.request.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
    struct deskd_tcp_owner owner = { 0, 0, &message.request.id, length };
    /* Not found is an error reply (ENOENT), or an answer for a socket with no owner. */
    if (deskd_sock_diag_request(&message, sizeof message, deskd_visit_owner, &owner) < 0 && errno != ENOENT) return -1;
    if (!owner.found) {
        /* The kernel's exact lookup matches a socket bound to a device (SO_BINDTODEVICE, which
           needs no privilege since Linux 5.7) only when asked with that device: a connection
           made on this host came through lo, so ask once more with lo's index. */
        unsigned int loopback = if_nametoindex("lo");
        if (loopback != 0) {
            message.request.id.idiag_if = loopback;
            if (deskd_sock_diag_request(&message, sizeof message, deskd_visit_owner, &owner) < 0) return -1;
        }
    }
    if (!owner.found) { errno = ENOENT; return -1; }
    *uid = owner.uid;
    return 0;
}

#include <linux/rtnetlink.h>
#include <linux/unix_diag.h>
#include <string.h>

struct deskd_unix_output {
    struct deskd_unix_socket *out; int capacity; int count;
    const char *const *prefixes; int prefix_count;
};

static void deskd_visit_unix(const struct nlmsghdr *h, void *context) {
    struct deskd_unix_output *output = context;
    const struct unix_diag_msg *socket = NLMSG_DATA(h);
    if (h->nlmsg_len < NLMSG_LENGTH(sizeof *socket)) return;
    struct deskd_unix_socket entry;
    memset(&entry, 0, sizeof entry);
    entry.inode = socket->udiag_ino;
    entry.state = socket->udiag_state;
    int length = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof *socket));
    for (const struct rtattr *attribute = (const struct rtattr *)(socket + 1); RTA_OK(attribute, length); attribute = RTA_NEXT(attribute, length)) {
        if (attribute->rta_type == UNIX_DIAG_PEER && RTA_PAYLOAD(attribute) >= sizeof(unsigned int)) {
            memcpy(&entry.peer, RTA_DATA(attribute), sizeof(unsigned int));
        } else if (attribute->rta_type == UNIX_DIAG_NAME) {
            /* A second name replaces the first whole: no byte of it may follow the new one. */
            memset(entry.name, 0, sizeof entry.name);
            size_t size = RTA_PAYLOAD(attribute);
            if (size > sizeof entry.name - 1) size = sizeof entry.name - 1;
            memcpy(entry.name, RTA_DATA(attribute), size);
            /* An abstract name starts with NUL; write it as "@name", as ss does. */
            if (size > 0 && entry.name[0] == '\0') entry.name[0] = '@';
            /* A path name is reported with its terminating NUL. */
            else while (size > 0 && entry.name[size - 1] == '\0') size--;
            entry.name_length = (unsigned short)size;
        }
    }
    /* Only names under the prefixes asked about are counted: any user can make a hundred
       thousand sockets, and each would otherwise become an entry for deskd to walk. */
    if (output->prefix_count > 0) {
        int wanted = 0;
        for (int i = 0; i < output->prefix_count && !wanted; i++) {
            size_t prefix_length = strlen(output->prefixes[i]);
            wanted = entry.name_length >= prefix_length && memcmp(entry.name, output->prefixes[i], prefix_length) == 0;
        }
        if (!wanted) return;
    }
    if (output->count < output->capacity) output->out[output->count] = entry;
    output->count++;
}

int deskd_unix_sockets_in(const void *datagram, int length, const char *const *prefixes, int prefix_count,
                          struct deskd_unix_socket *out, int capacity) {
    struct deskd_unix_output output = { out, capacity, 0, prefixes, prefix_count };
    return deskd_sock_diag_walk(datagram, length, deskd_visit_unix, &output) < 0 ? -1 : output.count;
}

int deskd_unix_sockets(unsigned int states, const char *const *prefixes, int prefix_count,
                       struct deskd_unix_socket *out, int capacity) {
    struct {
        struct nlmsghdr header;
        struct unix_diag_req request;
    } message = {0};
    message.header.nlmsg_len = sizeof message;
    message.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    message.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    message.request.sdiag_family = AF_UNIX;
    message.request.udiag_states = states;
    message.request.udiag_show = UDIAG_SHOW_NAME | UDIAG_SHOW_PEER;
    struct deskd_unix_output output = { out, capacity, 0, prefixes, prefix_count };
    return deskd_sock_diag_request(&message, sizeof message, deskd_visit_unix, &output) == 0 ? output.count : -1;
}

int deskd_become_subreaper(void) {
    return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
}

ssize_t deskd_send_record(int sock, const void *buffer, size_t length, const int *fds, int nfds, int dont_wait) {
    if (nfds < 0 || nfds > DESKD_MAX_PASSED_FDS) { errno = EINVAL; return -1; }
    union { char bytes[CMSG_SPACE(sizeof(int) * DESKD_MAX_PASSED_FDS)]; struct cmsghdr align; } control;
    memset(&control, 0, sizeof control);
    struct iovec iov = { .iov_base = (void *)buffer, .iov_len = length };
    struct msghdr message = { .msg_iov = &iov, .msg_iovlen = 1 };
    if (nfds > 0) {
        message.msg_control = control.bytes;
        message.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
        struct cmsghdr *header = CMSG_FIRSTHDR(&message);
        header->cmsg_level = SOL_SOCKET;
        header->cmsg_type = SCM_RIGHTS;
        header->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
        memcpy(CMSG_DATA(header), fds, sizeof(int) * nfds);
    }
    ssize_t sent;
    do { sent = sendmsg(sock, &message, MSG_NOSIGNAL | (dont_wait ? MSG_DONTWAIT : 0)); } while (sent < 0 && errno == EINTR);
    return sent;
}

ssize_t deskd_receive_record(int sock, void *buffer, size_t length, int *fds, int *nfds) {
    union { char bytes[CMSG_SPACE(sizeof(int) * DESKD_MAX_PASSED_FDS)]; struct cmsghdr align; } control;
    struct iovec iov = { .iov_base = buffer, .iov_len = length };
    struct msghdr message = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.bytes, .msg_controllen = sizeof control.bytes };
    *nfds = 0;
    ssize_t received;
    do { received = recvmsg(sock, &message, MSG_CMSG_CLOEXEC); } while (received < 0 && errno == EINTR);
    if (received < 0) return -1;
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header != NULL; header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
        int count = (int)((header->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        int *passed = (int *)CMSG_DATA(header);
        for (int i = 0; i < count; i++) {
            if (*nfds < DESKD_MAX_PASSED_FDS) fds[(*nfds)++] = passed[i]; else close(passed[i]);
        }
    }
    if ((message.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0) {
        for (int i = 0; i < *nfds; i++) close(fds[i]);
        *nfds = 0;
        errno = EMSGSIZE;
        return -1;
    }
    return received;
}

#include <shadow.h>
#include <stdlib.h>

int deskd_shadow_state(const char *name, long *expire, unsigned long long *fingerprint) {
    struct spwd entry, *found = NULL;
    size_t size = 4096;
    for (int attempt = 0; attempt < 6; attempt++, size *= 4) {
        char *buffer = malloc(size);
        if (buffer == NULL) return -1;
        int error = getspnam_r(name, &entry, buffer, size, &found);
        if (error == ERANGE) { explicit_bzero(buffer, size); free(buffer); continue; }
        if (error != 0 || found == NULL) {
            explicit_bzero(buffer, size);
            free(buffer);
            errno = error != 0 ? error : ENOENT;
            return -1;
        }
        *expire = entry.sp_expire;
        unsigned long long hash = 14695981039346656037ULL;
        for (const char *c = entry.sp_pwdp ? entry.sp_pwdp : ""; *c; c++) hash = (hash ^ (unsigned char)*c) * 1099511628211ULL;
        *fingerprint = hash;
        explicit_bzero(buffer, size);
        free(buffer);
        return 0;
    }
    errno = ERANGE;
    return -1;
}

#include <sched.h>
#include <sys/mount.h>

int deskd_enter_private_mounts(void) {
    if (unshare(CLONE_NEWNS) != 0) return -1;
    /* Slave, not private: what the host mounts later still reaches the session; nothing the
       session mounts (the bind of its X socket directory first of all) reaches the host. */
    return mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL);
}

int deskd_open_directory_path(const char *path) {
    return open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

#include <stdio.h>

int deskd_rename_noreplace(int from_dir, const char *from, int to_dir, const char *to) {
    return renameat2(from_dir, from, to_dir, to, RENAME_NOREPLACE);
}

int deskd_rename_exchange(int from_dir, const char *from, int to_dir, const char *to) {
    return renameat2(from_dir, from, to_dir, to, RENAME_EXCHANGE);
}

#include <grp.h>
#include <linux/falloc.h>

int deskd_become_user(const char *user, uid_t uid, gid_t gid) {
    /* Root's user or group would reach root's files: neither is ever become. */
    if (uid == 0 || gid == 0) { errno = EPERM; return -1; }
    if (initgroups(user, gid) != 0) return -1;
    if (setresgid(gid, gid, gid) != 0) return -1;
    if (setresuid(uid, uid, uid) != 0) return -1;
    uid_t r, e, s;
    if (getresuid(&r, &e, &s) != 0 || r != uid || e != uid || s != uid) { errno = EPERM; return -1; }
    gid_t rg, eg, sg;
    if (getresgid(&rg, &eg, &sg) != 0 || rg != gid || eg != gid || sg != gid) { errno = EPERM; return -1; }
    /* Root's way back must be shut: a setuid call now fails. */
    if (setuid(0) == 0) { errno = EPERM; return -1; }
    /* No core of, and no ptrace into, a process root started (whatever fs.suid_dumpable says). */
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) return -1;
    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
}

int deskd_open_unnamed(int dirfd, mode_t mode) {
    return openat(dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, mode);
}

int deskd_name_unnamed(int fd, int dirfd, const char *name) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    return linkat(AT_FDCWD, path, dirfd, name, AT_SYMLINK_FOLLOW);
}

int deskd_reserve(int fd, unsigned long long length) {
    return fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, (off_t)length);
}
